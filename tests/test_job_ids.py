"""A job id is never given to a second job, on both backends: not after the newest jobs are pruned or
deleted (SQLite numbered a new row one above the largest id left, PostgreSQL's sequence never went back),
whichever way the next jobs are created."""

from __future__ import annotations

from datetime import timedelta

import pytest

from queue_core.store.repository import JobRepository
from queue_core.store.statements import ID_FLOOR_KEY


def finished(repo: JobRepository, count: int) -> list[int]:
    """``count`` jobs created, claimed and completed: their ids."""
    ids = [repo.create("t", {"n": n})[0].id for n in range(count)]
    for job in repo.claim_many("w", count, types=["t"]):
        repo.complete(job.id, worker_id="w", attempt=job.attempt)
    return ids


def test_after_a_prune_of_every_job_the_next_id_is_above_them_all(repo, clock):
    ids = finished(repo, 3)
    clock.advance(120)
    assert repo.prune(timedelta(minutes=1)) == 3 and repo.list() == []
    job, _ = repo.create("t")
    assert job.id > max(ids)  # SQLite gave the pruned newest id (here the first, the table empty) again
    assert repo.find_by_id(job.id).id == job.id  # the id the create returned is the stored one
    assert repo.create("t")[0].id == job.id + 1  # and the next ones follow it


def test_after_the_newest_job_is_deleted_its_id_is_not_given_again(repo):
    ids = finished(repo, 2)
    repo.bulk("delete", f"id:{ids[-1]}")
    assert [job.id for job in repo.list()] == ids[:1]
    job, _ = repo.create("t")
    assert job.id > ids[-1]
    assert repo.find_by_id(ids[-1]) is None  # a client holding the deleted job's id finds nothing there


@pytest.mark.parametrize("keyed", [False, True], ids=["one-statement", "with-keys"])
def test_a_batch_created_after_a_prune_is_numbered_above_it_in_the_order_given(repo, clock, keyed):
    ids = finished(repo, 3)
    clock.advance(120)
    repo.prune(timedelta(minutes=1))
    specs = [{"type": "t", "payload": {"n": n}} for n in range(4)]
    if keyed:  # create_many's other path: keys looked up first, in one transaction
        specs = [{**spec, "idempotency_key": f"k{n}"} for n, spec in enumerate(specs)]
    jobs = repo.create_many(specs)
    new_ids = [job.id for job in jobs]
    assert min(new_ids) > max(ids) and new_ids == sorted(new_ids) and len(set(new_ids)) == 4
    assert [repo.find_by_id(job_id).payload["n"] for job_id in new_ids] == [0, 1, 2, 3]


def test_deleting_older_jobs_later_never_lowers_the_ids_kept_taken(repo):
    ids = finished(repo, 3)
    repo.bulk("delete", f"id:{ids[2]}")
    repo.bulk("delete", f"id:{ids[0]}")  # a lower id deleted after: the newest stays taken
    repo.bulk("delete", f"id:{ids[1]}")
    assert repo.create("t")[0].id > ids[2]


def test_deleting_a_job_that_is_not_the_newest_leaves_the_numbering_as_it_was(repo):
    ids = finished(repo, 3)
    repo.bulk("delete", f"id:{ids[0]}")
    assert repo.create("t")[0].id == ids[2] + 1


def recorded_floor(repo) -> int | None:
    row = repo.db.execute_sql("SELECT value FROM queue_meta WHERE key = ?", (ID_FLOOR_KEY,)).fetchone()
    return None if row is None else int(row[0])


@pytest.mark.backends("sqlite")
def test_the_recorded_id_is_kept_only_while_the_table_holds_nothing_above_it(repo):
    """Every insert looks at it while it is there, so it is there only from a delete of the newest jobs to
    the next delete after the table has passed it."""
    ids = finished(repo, 3)
    repo.bulk("delete", f"id:{ids[0]}")  # not the newest: nothing to keep
    assert recorded_floor(repo) is None
    repo.bulk("delete", f"id:{ids[2]}")
    assert recorded_floor(repo) == ids[2]
    newer, _ = repo.create("t")
    assert newer.id == ids[2] + 1
    repo.bulk("delete", f"id:{ids[1]}")  # the next delete: the table holds a newer job, the record goes
    assert recorded_floor(repo) is None
    assert repo.create("t")[0].id == newer.id + 1
