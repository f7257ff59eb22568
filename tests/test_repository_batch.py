"""JobRepository.create_many: a batch enqueue that validates everything first and writes all or nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from queue_core.errors import IdempotencyConflict, ValidationError
from queue_core.store.repository import CREATE_MANY_CHUNK, JobRepository


def stored(repo, job):
    return repo.find_by_id(job.id).to_dict()


def test_jobs_come_back_in_order_and_match_what_is_stored(repo, clock):
    later = clock.now + timedelta(minutes=5)
    specs = [
        {"type": "send-invoice", "payload": {"invoice": 7}},
        {"type": "resize", "priority": "high", "max_retries": 0, "retry_backoff": 1.5},
        {"type": "report", "run_at": later, "idempotency_key": "report-1"},
    ]
    jobs = repo.create_many(specs)

    assert [job.type for job in jobs] == ["send-invoice", "resize", "report"]
    assert jobs[0].id < jobs[1].id < jobs[2].id
    for job in jobs:
        assert job.to_dict() == stored(repo, job)
    assert jobs[0].payload == {"invoice": 7} and jobs[1].payload == {}
    assert (jobs[1].priority, jobs[1].max_retries, jobs[1].retry_backoff) == (20, 0, 1.5)
    assert jobs[2].run_at == later and jobs[2].idempotency_key == "report-1"
    assert all(job.status == "pending" and job.retry_count == 0 and job.created_at == clock.now for job in jobs)


@pytest.mark.parametrize("clocked", [True, False], ids=["injected-clock", "database-clock"])
def test_a_batch_of_alike_specs_comes_back_as_stored(db, clock, clocked):
    # Every column the same in every row: PostgreSQL binds each value once and counts the rows. Each job
    # still gets its own id and its own payload dict, and the times written.
    repo = JobRepository(db, clock if clocked else None)
    spec = {"type": "t", "payload": {"a": [1]}, "priority": "high", "queue": "mail", "timeout": 2}
    jobs = repo.create_many([spec] * 4)
    assert len({job.id for job in jobs}) == 4 and [job.id for job in jobs] == sorted(job.id for job in jobs)
    for job in jobs:
        assert job.to_dict() == stored(repo, job)
    jobs[0].payload["a"].append(2)
    assert jobs[1].payload == {"a": [1]} and spec["payload"] == {"a": [1]}


def test_a_batch_job_is_the_same_as_one_made_by_create(repo):
    single, _ = repo.create("t", {"a": [1, 2]}, priority=15, max_retries=2, retry_backoff=0)
    [batch] = repo.create_many(
        [{"type": "t", "payload": {"a": [1, 2]}, "priority": 15, "max_retries": 2, "retry_backoff": 0}]
    )
    expected = {k: v for k, v in stored(repo, single).items() if k != "id"}
    assert {k: v for k, v in stored(repo, batch).items() if k != "id"} == expected


def test_batch_jobs_are_claimed_in_priority_order(repo):
    repo.create_many(
        [{"type": "low"}, {"type": "critical", "priority": "critical"}, {"type": "medium", "priority": 10}]
    )
    assert [repo.claim("w").type for _ in range(3)] == ["critical", "medium", "low"]
    assert repo.claim("w") is None


def test_more_rows_than_one_statement_holds(repo):
    n = CREATE_MANY_CHUNK * 2 + 7
    jobs = repo.create_many({"type": "t", "payload": {"i": i}} for i in range(n))
    assert [job.payload["i"] for job in jobs] == list(range(n))
    ids = [job.id for job in jobs]
    assert ids == sorted(ids) and len(set(ids)) == n
    assert repo.counts()["pending"] == n
    assert all(
        repo.find_by_id(job.id).payload == job.payload for job in jobs[CREATE_MANY_CHUNK - 2 : CREATE_MANY_CHUNK + 2]
    )


def test_empty_batch_writes_nothing(repo):
    assert repo.create_many([]) == []
    assert repo.counts()["pending"] == 0


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"type": ""}, "specs[2].type"),
        ({"type": "t", "payload": [1]}, "specs[2].payload"),
        ({"type": "t", "priority": "urgent"}, "specs[2].priority"),
        ({"type": "t", "max_retries": -1}, "specs[2].max_retries"),
        ({"type": "t", "run_at": datetime(2026, 1, 1)}, "specs[2].run_at"),
        ({"type": "t", "retry_backoff": float("nan")}, "specs[2].retry_backoff"),
        ({"type": "t", "idempotency_key": ""}, "specs[2].idempotency_key"),
        ({"type": "t", "queue": ""}, "specs[2].queue"),
        ({"type": "t", "timeout": 0}, "specs[2].timeout"),
        ({"type": "t", "colour": "red"}, "specs[2]"),
        ({"payload": {}}, "specs[2]"),
        (("t", {}), "specs[2]"),
    ],
)
def test_one_bad_spec_names_itself_and_nothing_is_written(repo, bad, field):
    with pytest.raises(ValidationError) as error:
        repo.create_many([{"type": "ok"}, {"type": "ok"}, bad, {"type": "ok"}])
    assert error.value.field == field
    assert sum(repo.counts().values()) == 0


def test_unknown_field_error_says_what_a_spec_takes(repo):
    with pytest.raises(ValidationError, match=r"unknown field\(s\) colour; a spec takes type, payload.*queue, timeout"):
        repo.create_many([{"type": "t", "colour": "red"}])


def test_specs_take_a_queue_and_a_timeout(repo):
    mail, plain = repo.create_many([{"type": "t", "queue": "mail", "timeout": 2.5}, {"type": "t"}])
    assert (mail.queue, mail.timeout, plain.queue, plain.timeout) == ("mail", 2.5, "default", None)
    assert repo.find_by_id(mail.id).queue == "mail"


def test_a_used_idempotency_key_returns_the_existing_job(repo):
    first, _ = repo.create("charge", {"order": 1}, idempotency_key="order-1")
    jobs = repo.create_many(
        [
            {"type": "charge", "payload": {"order": 2}, "idempotency_key": "order-2"},
            {"type": "charge", "payload": {"order": 1}, "idempotency_key": "order-1"},
        ]
    )
    assert jobs[1].id == first.id and jobs[0].id != first.id
    assert repo.counts()["pending"] == 2


def test_an_idempotency_conflict_writes_nothing(repo):
    first, _ = repo.create("charge", {"order": 1}, idempotency_key="order-1")
    with pytest.raises(IdempotencyConflict):
        repo.create_many(
            [{"type": "other"}, {"type": "charge", "payload": {"order": 99}, "idempotency_key": "order-1"}]
        )
    assert repo.counts()["pending"] == 1
    assert repo.find_by_id(first.id).payload == {"order": 1}


def test_a_key_repeated_in_one_batch_is_rejected(repo):
    with pytest.raises(ValidationError) as error:
        repo.create_many([{"type": "t", "idempotency_key": "k"}, {"type": "u"}, {"type": "t", "idempotency_key": "k"}])
    assert error.value.field == "specs[2].idempotency_key" and "specs[0]" in error.value.message
    assert sum(repo.counts().values()) == 0


def test_run_at_in_another_timezone_is_stored_in_utc(repo):
    from zoneinfo import ZoneInfo

    local = datetime(2026, 6, 1, 9, 30, tzinfo=ZoneInfo("Europe/Paris"))
    [job] = repo.create_many([{"type": "t", "run_at": local}])
    assert repo.find_by_id(job.id).run_at == datetime(2026, 6, 1, 7, 30, tzinfo=UTC)


def test_without_an_injected_clock_the_stored_times_come_back(db):
    # PostgreSQL then takes its own clock (now() in the statement): the jobs must carry what was stored.
    repo = JobRepository(db)
    before = datetime.now(UTC) - timedelta(minutes=1)
    jobs = repo.create_many([{"type": "a"}, {"type": "b", "run_at": before}])
    assert [job.type for job in jobs] == ["a", "b"] and jobs[0].id < jobs[1].id
    for job in jobs:
        assert job.to_dict() == stored(repo, job)
    assert jobs[0].created_at > before and jobs[1].run_at == before
