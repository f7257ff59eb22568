"""queue_core.store.pages (keyset pages per state) and queue_core.store.activity (per-minute counts), both backends."""

from __future__ import annotations

from datetime import timedelta

import pytest

from queue_core.errors import ValidationError
from queue_core.store.activity import ActivityReads
from queue_core.store.pages import attempt_page, job_without_payload, page


def complete_one(repo, clock, job_type="t"):
    job, _ = repo.create(job_type)
    claimed = repo.claim("w")
    assert claimed.id == job.id
    repo.complete(job.id, worker_id="w", attempt=claimed.attempt)
    clock.advance(1)
    return job.id


def test_completed_pages_walk_every_job_once_newest_first(repo, clock):
    ids = [complete_one(repo, clock) for _ in range(7)]
    seen, after, pages = [], None, 0
    while True:
        current = page(repo, "completed", after=after, limit=3)
        seen += [row.id for row in current.rows]
        pages += 1
        if current.next_after is None:
            break
        after = current.next_after
    assert seen == ids[::-1]
    assert pages == 3  # 3 + 3 + 1, and the last page says it is the last
    assert not hasattr(current.rows[0], "payload")  # light rows: a page never reads payloads


def test_a_page_is_stable_when_jobs_finish_meanwhile(repo, clock):
    ids = [complete_one(repo, clock) for _ in range(4)]
    first = page(repo, "completed", limit=2)
    newer = complete_one(repo, clock)  # lands on page one, ahead of the cursor: page two does not shift
    second = page(repo, "completed", after=first.next_after, limit=2)
    assert [row.id for row in second.rows] == [ids[1], ids[0]]
    assert newer not in [row.id for row in second.rows]


def test_scheduled_is_pending_due_later_soonest_first(repo, clock):
    now = repo.now()
    due_now, _ = repo.create("t")
    later, _ = repo.create("t", run_at=now + timedelta(minutes=5))
    soonest, _ = repo.create("t", run_at=now + timedelta(minutes=1))
    same_time, _ = repo.create("t", run_at=now + timedelta(minutes=5))
    rows = page(repo, "scheduled", limit=2).rows
    assert [row.id for row in rows] == [soonest.id, later.id]
    rest = page(repo, "scheduled", after=(rows[-1].run_at, rows[-1].id), limit=2)
    assert [row.id for row in rest.rows] == [same_time.id] and rest.next_after is None
    assert due_now.id not in [row.id for row in page(repo, "scheduled").rows]


def test_a_page_filters_by_type_and_refuses_an_unknown_state(repo, clock):
    complete_one(repo, clock, "a")
    wanted = complete_one(repo, clock, "b")
    assert [row.id for row in page(repo, "completed", type="b").rows] == [wanted]
    assert page(repo, "cancelled").rows == []
    with pytest.raises(ValidationError):
        page(repo, "pending; DROP TABLE jobs")


def test_a_job_without_its_payload_is_every_other_column_or_none_once_gone(repo, clock):
    job, _ = repo.create("t", {"rows": ["x" * 100] * 100}, priority="high")
    claimed = repo.claim("w")
    repo.complete(job.id, worker_id="w", attempt=claimed.attempt, result={"ok": 1})
    row = job_without_payload(repo, job.id)
    assert row.payload is None  # never read: a view re-reading the job every second skips it
    assert (row.id, row.status, row.priority_label, row.result, row.worker_id) == (
        job.id,
        "completed",
        "high",
        {"ok": 1},
        "w",
    )
    repo.bulk("delete", ids=[job.id])
    assert job_without_payload(repo, job.id) is None


def failed_attempts(repo, count):
    job, _ = repo.create("t", max_retries=count, retry_backoff=0)
    for n in range(count):
        claimed = repo.claim("w")
        repo.fail(job.id, f"boom {n + 1}", worker_id="w", attempt=claimed.attempt)
    return job.id


def test_attempt_pages_go_newest_first_and_the_last_one_is_empty_past_the_history(repo, clock):
    job_id = failed_attempts(repo, 3)
    first = attempt_page(repo, job_id, size=2)
    assert [row.error for row in first.rows] == ["boom 2", "boom 3"] and (first.older, first.newer) == (1, 0)
    assert [row.error for row in attempt_page(repo, job_id, number=2, size=2).rows] == ["boom 1"]
    assert attempt_page(repo, job_id, number=3, size=2).rows == []


@pytest.mark.parametrize(
    ("argument", "value"),
    [("number", 0), ("number", -1), ("number", 2**62), ("size", 0), ("size", 10**6), ("chars", 0), ("number", 1.5)],
)
def test_a_bad_attempt_page_argument_is_the_same_validation_error_on_both_backends(repo, clock, argument, value):
    # number=0 was an OFFSET of -size: SQLite read it as page 1, PostgreSQL raised "OFFSET must not be negative".
    job_id = failed_attempts(repo, 1)
    with pytest.raises(ValidationError) as info:
        attempt_page(repo, job_id, **{argument: value})
    assert info.value.field == argument


def test_activity_counts_each_minute_of_the_last_hour(repo, clock):
    reads = ActivityReads(repo)
    complete_one(repo, clock)  # at 12:00:00, enqueued and completed
    clock.advance(120)
    job, _ = repo.create("t", max_retries=0)  # 12:02
    claimed = repo.claim("w")
    repo.fail(job.id, "boom", worker_id="w", attempt=claimed.attempt)
    activity = reads.last_hour()
    assert len(activity.series["completed"]) == 60
    # The last bucket is the current minute (12:02), two before it 12:00.
    assert activity.series["completed"][-3] == 1 and activity.total("completed") == 1
    assert activity.series["enqueued"][-3] == 1 and activity.series["enqueued"][-1] == 1
    assert activity.series["failed"][-1] == 1 and activity.total("failed") == 1
    clock.advance(3600)
    assert ActivityReads(repo).last_hour().total("enqueued") == 0  # an hour later, nothing is charted


def test_enqueued_counts_only_the_last_hour_of_a_long_history_with_gaps(repo, clock):
    made = []
    for _ in range(30):  # one job every 5 minutes over two and a half hours
        made.append(repo.create("t")[0])
        clock.advance(300)
    repo.Job.delete().where(repo.Job.id.in_([made[5].id, made[20].id, made[-1].id])).execute()  # pruned
    now = repo.now()
    start = now.replace(second=0, microsecond=0) - timedelta(minutes=59)
    expected = sum(1 for job in repo.Job.select() if job.created_at >= start)
    activity = ActivityReads(repo).last_hour()
    assert activity.start == start and activity.total("enqueued") == expected > 0


def test_activity_charts_each_queue_and_the_longest_wait_per_minute(repo, clock):
    waited, _ = repo.create("t", queue="mail")
    repo.create("t", queue="bills")
    clock.advance(90)  # the mail job waits 90 s, the bills job 95 s before its claim
    claimed = repo.claim("w", queues=["mail"])
    assert claimed.id == waited.id
    repo.complete(claimed.id, worker_id="w", attempt=claimed.attempt)
    clock.advance(5)
    running = repo.claim("w", queues=["bills"])
    assert running is not None
    activity = ActivityReads(repo).last_hour()
    assert set(activity.queues) == {"mail", "bills"}
    mail, bills = activity.for_queue("mail"), activity.for_queue("bills")
    assert mail.total("completed") == 1 and bills.total("completed") == 0
    assert mail.total("enqueued") == 1 and bills.total("enqueued") == 1 and activity.total("enqueued") == 2
    assert mail.latency[-1] == pytest.approx(90, abs=0.01)  # claimed this minute after waiting 90 s
    assert bills.latency[-1] == pytest.approx(95, abs=0.01)  # still running: its wait counts too
    assert activity.latency[-1] == pytest.approx(95, abs=0.01) and activity.latency[0] is None
    quiet = activity.for_queue("nobody")
    assert quiet.total("completed") == 0 and set(quiet.latency) == {None} and quiet.queue == "nobody"


def test_activity_keeps_settled_minutes_and_reads_everything_again_after_a_while(repo, clock):
    reads = ActivityReads(repo)
    done = complete_one(repo, clock)
    reads.last_hour()
    clock.advance(200)  # the first job's minute has settled: kept, not read again
    complete_one(repo, clock)
    kept = reads.last_hour()
    assert kept == ActivityReads(repo).last_hour()  # the same charts as a read of the whole hour
    repo.Job.delete().where(repo.Job.id == done).execute()  # pruned: a settled minute changes
    assert reads.last_hour().total("completed") == 2  # kept as it was...
    clock.advance(61)
    assert reads.last_hour().total("completed") == 1  # ...until everything is read again
