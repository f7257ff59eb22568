"""Many processes against one database (each backend): no job claimed twice, one row per idempotency key."""

from __future__ import annotations

import multiprocessing

import procs

from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository


def run_processes(target, n, make_args):
    ctx = multiprocessing.get_context("spawn")
    start, results = ctx.Barrier(n), ctx.Queue()
    workers = [ctx.Process(target=target, args=(*make_args(i), start, results)) for i in range(n)]
    for process in workers:
        process.start()
    outcome = [results.get(timeout=120) for _ in workers]
    for process in workers:
        process.join(timeout=30)
        assert process.exitcode == 0
    return outcome


def test_four_processes_never_claim_the_same_job(db_url):
    db = open_database(db_url)
    repo = JobRepository(db)
    with db.atomic():
        for i in range(2000):
            repo.create("t", {"i": i})
    db.close()

    outcome = run_processes(procs.claim_until_empty, 4, lambda i: (db_url, f"w{i}"))

    errors = [e for _, _, errs in outcome for e in errs]
    claimed = [job_id for _, ids, _ in outcome for job_id in ids]
    assert errors == []
    assert len(claimed) == 2000 and len(set(claimed)) == 2000
    db = open_database(db_url)
    owners = dict(db.execute_sql("SELECT id, worker_id FROM jobs").fetchall())
    for worker_id, ids, _ in outcome:
        assert all(owners[job_id] == worker_id for job_id in ids)
    assert JobRepository(db).counts()["running"] == 2000


def test_eight_processes_run_five_thousand_jobs_each_exactly_once(db_url):
    db = open_database(db_url)
    repo = JobRepository(db)
    with db.atomic():
        ids = {repo.create("t", {"i": i})[0].id for i in range(5000)}
    db.close()

    outcome = run_processes(procs.run_until_empty, 8, lambda i: (db_url, f"w{i}"))

    assert [e for _, _, errs in outcome for e in errs] == []
    done = [job_id for _, claimed, _ in outcome for job_id in claimed]
    assert len(done) == 5000 and set(done) == ids
    assert sum(1 for _, claimed, _ in outcome if claimed) > 1  # the work was shared, not one process's
    db = open_database(db_url)
    assert JobRepository(db).counts() == {"pending": 0, "running": 0, "completed": 5000, "failed": 0, "cancelled": 0}
    db.close()


def test_same_idempotency_key_from_eight_processes_yields_one_row(db_url):
    open_database(db_url).close()  # schema first, so the race is on the insert
    outcome = run_processes(procs.create_with_key, 8, lambda i: (db_url, "order-42"))

    assert [error for _, _, error in outcome if error] == []
    assert len({job_id for job_id, _, _ in outcome}) == 1
    assert sorted(created for _, created, _ in outcome) == [False] * 7 + [True]
    db = open_database(db_url)
    assert db.execute_sql("SELECT count(*) FROM jobs").fetchone()[0] == 1
