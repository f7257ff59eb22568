"""The guide's rules, one test (at least) each, through JobRepository."""

from __future__ import annotations

import threading
from datetime import timedelta

import peewee as pw
import pytest
from support import sqlite_plan, statements_run

from queue_core.errors import IdempotencyConflict, ValidationError
from queue_core.rules import BACKOFF_CAP, DEFAULT_BACKOFF_BASE
from queue_core.store.models import is_postgres
from queue_core.store.reads import ROW_ERROR_CHARS
from queue_core.validation import MAX_TYPES


def test_lifecycle_pending_running_completed(repo, clock):
    job, created = repo.create("send-invoice", {"invoice": 7})
    assert created and job.status == "pending" and job.payload == {"invoice": 7}
    assert job.created_at == job.run_at == clock.now

    clock.advance(1)
    claimed = repo.claim("w1")
    assert (claimed.id, claimed.status, claimed.worker_id) == (job.id, "running", "w1")
    assert claimed.claimed_at == clock.now and claimed.payload == {"invoice": 7}

    clock.advance(1)
    done = repo.complete(job.id, worker_id="w1")
    assert done.status == "completed" and done.updated_at == clock.now
    assert repo.find_by_id(job.id).status == "completed"
    assert repo.claim("w1") is None


def test_a_created_job_is_the_stored_row_even_with_threads_creating_at_once(repo):
    """The job ``create`` returns carries the id of the row it wrote (SQLite: the thread's connection's last
    rowid), whatever other threads insert meanwhile, and equals the row as read back."""
    made: dict[int, list] = {}

    def producer(n: int) -> None:
        made[n] = [repo.create("t", {"producer": n, "i": i})[0] for i in range(25)]

    threads = [threading.Thread(target=producer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    jobs = [job for n in range(4) for job in made[n]]
    assert len({job.id for job in jobs}) == 100
    for job in jobs:
        assert repo.find_by_id(job.id).__data__ == job.__data__


def test_complete_and_fail_only_a_running_job(repo):
    job, _ = repo.create("t")
    assert repo.complete(job.id) is None
    assert repo.fail(job.id, "x") is None
    assert repo.complete(9999) is None
    repo.claim("w1")
    repo.complete(job.id)
    assert repo.complete(job.id) is None
    assert repo.fail(job.id, "late") is None
    assert repo.find_by_id(job.id).status == "completed"


def test_fail_requeues_with_retry_count_and_keeps_latest_error(repo, clock):
    job, _ = repo.create("t", max_retries=2, retry_backoff=0)
    repo.claim("w1")
    failed = repo.fail(job.id, "first", worker_id="w1")
    assert failed.status == "pending" and failed.retry_count == 1 and failed.error == "first"
    assert failed.worker_id is None and failed.claimed_at is None
    assert failed.run_at == clock.now  # retry_backoff=0: the guide's immediate retry

    repo.claim("w2")
    failed = repo.fail(job.id, "second", worker_id="w2")
    assert failed.status == "pending" and failed.retry_count == 2 and failed.error == "second"

    repo.claim("w3")
    final = repo.fail(job.id, "third", worker_id="w3")
    assert final.status == "failed" and final.retry_count == 2 and final.error == "third"
    history = repo.errors_for(job.id)
    assert [(e.attempt, e.worker_id, e.error) for e in history] == [
        (1, "w1", "first"),
        (2, "w2", "second"),
        (3, "w3", "third"),
    ]


def test_max_retries_zero_fails_at_once(repo):
    job, _ = repo.create("t", max_retries=0)
    repo.claim("w1")
    failed = repo.fail(job.id, "boom")
    assert failed.status == "failed" and failed.retry_count == 0 and failed.error == "boom"


def test_backoff_is_exponential_jittered_and_capped(repo, clock):
    job, _ = repo.create("t", max_retries=30)
    delays = []
    for _ in range(15):
        clock.advance(BACKOFF_CAP * 2)  # always due again
        assert repo.claim("w1").id == job.id
        failed = repo.fail(job.id, "again")
        delays.append((failed.run_at - clock.now).total_seconds())
    for retry_count, delay in enumerate(delays):
        full = min(BACKOFF_CAP, DEFAULT_BACKOFF_BASE * 2**retry_count)
        assert full / 2 <= delay <= full
    assert delays[3] > delays[0] * 2  # grows
    assert max(delays) <= BACKOFF_CAP
    # not claimable before run_at
    clock.advance(BACKOFF_CAP / 4)
    assert repo.claim("w1") is None


def test_a_backoff_base_over_the_cap_is_honoured_not_cut_to_the_cap(repo, clock):
    """retry_backoff is accepted up to a century, but every retry of a job with a base over an hour came back
    within the hour's cap: retry_backoff=86400 ("retry tomorrow") retried after 30 to 60 minutes."""
    job, _ = repo.create("t", max_retries=3, retry_backoff=86400)
    for retry_count in range(3):
        clock.advance(86400 * 2)  # due again
        assert repo.claim("w1").id == job.id
        delay = (repo.fail(job.id, "again").run_at - clock.now).total_seconds()
        assert 86400 / 2 <= delay <= 86400, retry_count


def test_delayed_job_waits_for_run_at(repo, clock):
    job, _ = repo.create("t", run_at=clock.now + timedelta(seconds=30))
    assert repo.claim("w1") is None
    clock.advance(30)
    assert repo.claim("w1").id == job.id


def test_priority_order_then_fifo_within_a_tier(repo, clock):
    ids = {}
    for name, priority in [("low1", "low"), ("crit", "critical"), ("med1", 10), ("low2", 0), ("med2", "medium")]:
        ids[name] = repo.create(name, priority=priority)[0].id
        clock.advance(1)
    order = [repo.claim("w").type for _ in range(5)]
    assert order == ["crit", "med1", "med2", "low1", "low2"]
    assert repo.claim("w") is None


def test_same_time_falls_back_to_lowest_id(repo):
    first, _ = repo.create("a")
    second, _ = repo.create("b")
    assert [repo.claim("w").id, repo.claim("w").id] == [first.id, second.id]


def test_claim_limited_to_types(repo):
    repo.create("unknown-type", priority="critical")
    known, _ = repo.create("echo")
    assert repo.claim("w", types=["echo"]).id == known.id
    assert repo.claim("w", types=["echo"]) is None
    assert repo.claim("w", types=[]) is None
    assert repo.counts()["pending"] == 1


def test_claim_many_takes_in_claim_order(repo, clock):
    for priority in (0, 30, 10):
        repo.create("t", priority=priority)
    jobs = repo.claim_many("w", 2)
    assert [j.priority for j in jobs] == [30, 10]
    assert all(j.status == "running" for j in jobs)


def test_idempotency_first_call_creates_second_returns_existing(repo):
    job, created = repo.create("email", {"to": "a"}, idempotency_key="order-1")
    again, created_again = repo.create("email", {"to": "a"}, idempotency_key="order-1")
    assert created is True and created_again is False
    assert again.id == job.id
    assert repo.counts()["pending"] == 1


def test_idempotency_key_with_other_content_is_a_conflict(repo):
    job, _ = repo.create("email", {"to": "a"}, idempotency_key="order-1")
    with pytest.raises(IdempotencyConflict) as info:
        repo.create("email", {"to": "b"}, idempotency_key="order-1")
    assert info.value.existing.id == job.id
    with pytest.raises(IdempotencyConflict):
        repo.create("sms", {"to": "a"}, idempotency_key="order-1")
    assert repo.find_by_id(job.id).payload == {"to": "a"}
    assert sum(repo.counts().values()) == 1


def test_stale_claim_is_reaped_with_retry_count(repo, clock):
    job, _ = repo.create("t")
    repo.claim("w-dead")
    clock.advance(60)
    assert repo.reap_stale(timedelta(seconds=120)) == 0
    clock.advance(61)
    assert repo.reap_stale(timedelta(seconds=120)) == 1
    reaped = repo.find_by_id(job.id)
    assert reaped.status == "pending" and reaped.retry_count == 1 and reaped.worker_id is None
    assert "w-dead" in reaped.error and reaped.run_at == clock.now
    assert repo.errors_for(job.id)[0].worker_id == "w-dead"


def test_reap_worker_takes_back_every_claim_of_that_worker_at_once(repo, clock):
    kept, _ = repo.create("t", max_retries=3)
    last, _ = repo.create("t", max_retries=0)
    cancelled, _ = repo.create("t")
    other, _ = repo.create("t")
    for worker_id in ("w-gone", "w-alive"):
        repo.register_worker(worker_id, host="h", pid=42, queues=None, concurrency=3, stale_after=300)
    assert [job.id for job in repo.claim_many("w-gone", 3)] == [kept.id, last.id, cancelled.id]
    repo.claim("w-alive")
    repo.cancel(cancelled.id)  # running: a cancel request
    clock.advance(1)  # fresh heartbeats: reap_stale would take nothing

    assert repo.reap_worker("w-gone", "its process (pid 42) died") == 3

    error = "worker w-gone lost its claim: its process (pid 42) died"
    back = repo.find_by_id(kept.id)
    assert (back.status, back.retry_count, back.worker_id, back.error) == ("pending", 1, None, error)
    assert repo.find_by_id(last.id).status == "failed" and repo.find_by_id(last.id).error == error + "; no retries left"
    assert repo.find_by_id(cancelled.id).status == "cancelled"
    assert repo.find_by_id(other.id).status == "running"  # another worker's claim is not touched
    assert [(e.worker_id, e.attempt, e.error) for e in repo.errors_for(kept.id)] == [("w-gone", 1, error)]
    # Its row in the registry no longer shows it running (it did until its stale_after passed).
    assert {w.id: (w.state, w.running) for w in repo.workers()} == {
        "w-gone": ("stopped", 0),
        "w-alive": ("running", 1),
    }
    assert repo.reap_worker("w-gone", "again") == 0
    with pytest.raises(ValidationError):
        repo.reap_worker("", "no worker")


def test_heartbeat_keeps_a_long_job_from_being_reaped(repo, clock):
    job, _ = repo.create("t")
    repo.claim("w1")
    for _ in range(5):
        clock.advance(100)
        assert repo.heartbeat([job.id], worker_id="w1") == [job.id]
    assert repo.reap_stale(timedelta(seconds=120)) == 0
    assert repo.heartbeat([job.id], worker_id="someone-else") == []
    clock.advance(121)
    assert repo.reap_stale(timedelta(seconds=120)) == 1


def test_a_heartbeat_with_attempts_holds_a_job_only_at_the_attempt_held(repo, clock):
    # A job reaped and claimed again by the same worker: by id alone the stale run's heartbeat still held it,
    # so that run was never told it lost the job.
    job, _ = repo.create("t")
    other, _ = repo.create("t")
    assert repo.claim("w1").id == job.id
    clock.advance(10)
    assert repo.reap_stale(timedelta(seconds=5)) == 1
    clock.advance(1)
    assert sorted(j.id for j in repo.claim_many("w1", 2)) == [job.id, other.id]
    assert repo.find_by_id(job.id).attempt == 2
    clock.advance(1)
    assert repo.heartbeat([job.id], worker_id="w1", attempts=[1]) == []
    assert repo.find_by_id(job.id).heartbeat_at is None  # the stale run's beat refreshed nothing
    ids, attempts = [job.id, job.id, other.id], [1, 2, 1]
    assert repo.heartbeat(ids, worker_id="w1", attempts=attempts) == [(job.id, 2), (other.id, 1)]
    assert repo.find_by_id(job.id).heartbeat_at is not None
    assert repo.heartbeat(ids, worker_id="w2", attempts=attempts) == []
    assert repo.heartbeat([job.id], worker_id="w1") == [job.id]  # ids alone, as before
    assert repo.heartbeat([], worker_id="w1", attempts=[]) == []
    for bad in ([1, 2], [0], ["1"]):
        with pytest.raises(ValidationError, match="attempts"):
            repo.heartbeat([job.id], worker_id="w1", attempts=bad)


def test_held_claims_are_the_running_jobs_a_worker_holds_with_their_attempts(repo, clock):
    first, second, third = (repo.create("t")[0] for _ in range(3))
    assert repo.held_claims("w1") == []
    repo.claim_many("w1", 2)
    repo.claim("w2")
    clock.advance(10)
    repo.complete(first.id, worker_id="w1", attempt=1)
    assert repo.held_claims("w1") == [(second.id, 1)]
    assert repo.held_claims("w2") == [(third.id, 1)]
    repo.release(second.id, worker_id="w1", attempt=1)
    repo.claim("w1")
    assert repo.held_claims("w1") == [(second.id, 2)]
    with pytest.raises(ValidationError):
        repo.held_claims("")


def test_held_claims_leave_out_the_claims_of_an_earlier_run_of_the_same_worker_id(repo, clock):
    """A worker restarted under the same id after a crash registers again: the running jobs its id held before
    are its dead predecessor's, which started them. held_claims (what a worker whose claim raised releases,
    counting no retry) names only the claims made since the registration; the reaper takes back the others,
    counting the retry: a job that kills its worker every time would otherwise be released for ever."""
    options = {"host": "h", "pid": 1, "queues": None, "concurrency": 1, "stale_after": 60}
    crashed, fresh = (repo.create("t", max_retries=1)[0] for _ in range(2))
    repo.register_worker("w1", **options)
    assert repo.claim("w1").id == crashed.id
    clock.advance(5)
    repo.register_worker("w1", **{**options, "pid": 2})  # the restart, same --worker-id
    assert repo.claim("w1").id == fresh.id
    assert repo.held_claims("w1") == [(fresh.id, 1)]
    clock.advance(100)
    assert repo.reap_stale(timedelta(seconds=60)) == 2
    assert repo.find_by_id(crashed.id).retry_count == 1


def test_stale_claim_with_no_retries_left_is_failed_naming_the_worker(repo, clock):
    job, _ = repo.create("t", max_retries=0)
    repo.claim("w-lost")
    clock.advance(300)
    assert repo.reap_stale(timedelta(seconds=60)) == 1
    failed = repo.find_by_id(job.id)
    assert failed.status == "failed"
    assert "w-lost" in failed.error and "no retries left" in failed.error


def test_zombie_worker_cannot_complete_or_fail_the_new_claim(repo, clock):
    job, _ = repo.create("t")
    first = repo.claim("zombie")
    clock.advance(600)
    repo.reap_stale(timedelta(seconds=60))
    second = repo.claim("healthy")
    assert second.id == job.id
    assert repo.complete(job.id, worker_id="zombie") is None
    assert repo.fail(job.id, "late", worker_id="zombie") is None
    # Same worker id, old attempt (e.g. another thread of the same process): fenced by attempt.
    assert repo.complete(job.id, worker_id="healthy", attempt=first.attempt) is None
    assert repo.find_by_id(job.id).status == "running"
    assert repo.complete(job.id, worker_id="healthy", attempt=second.attempt).status == "completed"


def test_complete_and_claim_completes_the_held_job_and_claims_the_next_in_claim_order(repo, clock):
    first, _ = repo.create("t")
    low, _ = repo.create("t", priority=0)
    high, _ = repo.create("t", priority=5)
    other, _ = repo.create("other", priority=9)
    claimed = repo.claim("w1", types=["t"])
    assert claimed.id == high.id
    clock.advance(1)

    done, following = repo.complete_and_claim(high.id, ["t"], worker_id="w1", attempt=claimed.attempt)
    assert (done.id, done.status, done.updated_at) == (high.id, "completed", clock.now)
    assert (following.id, following.status, following.worker_id) == (first.id, "running", "w1")
    assert following.claimed_at == clock.now
    done, following = repo.complete_and_claim(first.id, ["t"], worker_id="w1", attempt=following.attempt)
    assert done.id == first.id and following.id == low.id
    done, following = repo.complete_and_claim(low.id, ["t"], worker_id="w1", attempt=1)
    assert done.id == low.id and following is None  # "other" is not a type it asked for
    assert repo.counts() == {"pending": 1, "running": 0, "completed": 3, "failed": 0, "cancelled": 0}
    assert repo.find_by_id(other.id).status == "pending"


def test_complete_and_claim_by_a_zombie_completes_nothing_but_still_claims(repo, clock):
    job, _ = repo.create("t")
    zombie = repo.claim("w1")
    clock.advance(600)
    repo.reap_stale(timedelta(seconds=60))  # back to pending, retry_count 1: the zombie's attempt is fenced off
    done, following = repo.complete_and_claim(job.id, worker_id="w1", attempt=zombie.attempt)
    assert done is None
    assert (following.id, following.attempt, following.status) == (job.id, 2, "running")


def test_complete_and_claim_with_a_bad_worker_id_writes_nothing(repo):
    job, _ = repo.create("t")
    claimed = repo.claim("w1")
    with pytest.raises(ValidationError) as info:
        repo.complete_and_claim(job.id, worker_id="", attempt=claimed.attempt)
    assert info.value.field == "worker_id"
    assert repo.find_by_id(job.id).status == "running"


def test_complete_and_claim_with_no_types_completes_and_claims_nothing_more(repo):
    job, _ = repo.create("t")
    repo.create("t")
    claimed = repo.claim("w1")
    done, following = repo.complete_and_claim(job.id, [], worker_id="w1", attempt=claimed.attempt)
    assert done.status == "completed" and following is None
    assert repo.counts()["pending"] == 1


def test_release_returns_job_without_counting_a_retry(repo):
    job, _ = repo.create("t")
    repo.claim("w1")
    released = repo.release(job.id, worker_id="w1")
    assert released.status == "pending" and released.retry_count == 0 and released.worker_id is None
    assert repo.release(job.id, worker_id="w1") is None


def test_operator_retry_of_failed_job(repo, clock):
    job, _ = repo.create("t", max_retries=0)
    repo.claim("w1")
    repo.fail(job.id, "boom")
    assert repo.retry(9999) is None
    clock.advance(5)
    again = repo.retry(job.id)
    assert again.status == "pending" and again.retry_count == 0 and again.run_at == clock.now
    assert again.error == "boom" and len(repo.errors_for(job.id)) == 1
    assert repo.retry(job.id) is None  # only failed jobs
    assert repo.claim("w1").id == job.id


def test_counts_list_window_and_throughput(repo, clock):
    for i in range(5):
        repo.create(f"t{i % 2}", priority=i)
    repo.claim("w")  # priority 4
    job = repo.claim("w")  # priority 3
    repo.complete(job.id)
    assert repo.counts() == {"pending": 3, "running": 1, "completed": 1, "failed": 0, "cancelled": 0}
    assert repo.counts(type="t0") == {"pending": 2, "running": 1, "completed": 0, "failed": 0, "cancelled": 0}
    page1 = repo.list(limit=2)
    page2 = repo.list(limit=2, after=page1[-1].id)
    assert [j.id for j in page1 + page2] == [1, 2, 3, 4]
    assert [j.priority for j in repo.window("pending")] == [2, 1, 0]
    assert [j.type for j in repo.window("pending", type="t1")] == ["t1"]
    assert repo.throughput(timedelta(minutes=1)) == {"completed": 1.0, "failed": 0.0}


def test_prune_deletes_only_old_finished_jobs(repo, clock):
    old, _ = repo.create("t", max_retries=0)
    repo.claim("w")
    repo.fail(old.id, "x")
    clock.advance(days=8)
    repo.create("t")
    assert repo.prune(timedelta(days=7)) == 1
    assert repo.find_by_id(old.id) is None and repo.errors_for(old.id) == []
    assert repo.counts()["pending"] == 1


def test_prune_works_in_batches_and_keeps_what_is_not_old_or_not_finished(repo, clock):
    old = []
    for _ in range(7):
        job, _ = repo.create("t", max_retries=0)
        repo.claim("w")
        if job.id % 2:
            repo.fail(job.id, "x")
        else:
            repo.complete(job.id)
        old.append(job.id)
    running, _ = repo.create("t")
    repo.claim("w")
    clock.advance(days=8)
    recent, _ = repo.create("t")
    repo.claim("w")
    repo.complete(recent.id)
    assert repo.prune(timedelta(days=7), batch=3) == 7
    assert [j.id for j in repo.list()] == [running.id, recent.id]
    assert all(repo.errors_for(job_id) == [] for job_id in old)
    assert repo.prune(timedelta(days=7), batch=3) == 0


def completed_days_ago(repo, clock, n: int, *, days: int) -> None:
    """``n`` jobs run and completed, then the clock ``days`` later."""
    for _ in range(n):
        job, _ = repo.create("t")
        repo.claim("w")
        repo.complete(job.id)
    clock.advance(days=days)


def test_prune_with_max_batches_stops_after_that_many_transactions(repo, clock):
    # A worker prunes one batch per heartbeat: a backlog must not keep that thread busy.
    completed_days_ago(repo, clock, 7, days=8)
    assert repo.prune(timedelta(days=7), batch=3, max_batches=1) == 3
    assert repo.prune(timedelta(days=7), batch=3, max_batches=5) == 4  # a short batch ends it before the cap
    assert repo.prune(timedelta(days=7), batch=3, max_batches=1) == 0
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValidationError) as caught:
            repo.prune(timedelta(days=7), max_batches=bad)
        assert caught.value.field == "max_batches"


def test_counts_with_a_cap_stop_counting_past_it(repo):
    for _ in range(5):
        repo.create("a")
    repo.create("b")
    repo.claim("w")
    assert repo.counts(cap=3) == {
        "pending": 4,
        "running": 1,
        "completed": 0,
        "failed": 0,
        "cancelled": 0,
    }  # 5 pending: "more than 3"
    assert (
        repo.counts(cap=10)
        == repo.counts()
        == {"pending": 5, "running": 1, "completed": 0, "failed": 0, "cancelled": 0}
    )
    assert repo.counts(type="b", cap=3) == {"pending": 1, "running": 0, "completed": 0, "failed": 0, "cancelled": 0}
    with pytest.raises(ValidationError):
        repo.counts(cap=0)


def test_count_stale_matches_what_reap_stale_takes(repo, clock):
    a, _ = repo.create("a")
    b, _ = repo.create("b")
    repo.claim_many("w", 2)
    clock.advance(100)
    repo.heartbeat([b.id], worker_id="w")
    clock.advance(250)
    assert repo.count_stale(timedelta(seconds=300)) == 1  # a: claimed 350 s ago; b: heartbeat 250 s ago
    assert repo.count_stale(timedelta(seconds=300), type="b") == 0
    assert repo.count_stale(timedelta(seconds=200)) == 2
    assert repo.reap_stale(timedelta(seconds=300)) == 1
    assert repo.count_stale(timedelta(seconds=300)) == 0
    assert repo.find_by_id(a.id).status == "pending"


def test_stale_claims_are_judged_in_utc_whatever_the_sessions_time_zone(repo, db, clock):
    if is_postgres(db):
        # The columns hold UTC without a zone; a cutoff sent with one would be read in this zone instead.
        db.execute_sql("SET TIME ZONE 'Asia/Tokyo'")
    repo.create("t")
    repo.claim("w")
    clock.advance(30)
    assert repo.count_stale(timedelta(seconds=60)) == 0 and repo.reap_stale(timedelta(seconds=60)) == 0
    clock.advance(60)
    assert repo.count_stale(timedelta(seconds=60)) == 1 and repo.reap_stale(timedelta(seconds=60)) == 1


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda repo: repo.claim_many("w", 2**63), "n"),
        (lambda repo: repo.complete_and_claim_many([], 2**63, worker_id="w"), "n"),
        (lambda repo: repo.prune(timedelta(0), batch=2**63), "batch"),
        (lambda repo: repo.heartbeat([1], worker_id="w", attempts=[2**63]), "attempts"),
        (lambda repo: repo.counts(cap=2**63 - 1), "cap"),
    ],
    ids=["claim n", "complete_and_claim n", "prune batch", "heartbeat attempt", "counts cap"],
)
def test_a_count_past_the_databases_integers_is_a_validation_error_on_both_backends(repo, call, field):
    """A number no column or LIMIT holds was sent as it was: SQLite raised OverflowError or "datatype mismatch"
    (an IntegrityError), PostgreSQL a DataError ("bigint out of range"), neither naming the argument."""
    job, _ = repo.create("t")
    with pytest.raises(ValidationError) as raised:
        call(repo)
    assert raised.value.field == field
    assert repo.find_by_id(job.id).status == "pending"


def test_count_stale_with_a_bad_age_names_it(repo):
    with pytest.raises(ValidationError) as info:
        repo.count_stale(60)
    assert info.value.field == "older_than"


def test_window_rows_skip_the_payload_and_cut_long_errors(repo):
    job, _ = repo.create("t", {"big": "x" * 1000}, max_retries=0)
    repo.create("t", priority="high")
    repo.claim("w")
    repo.claim("w")
    repo.fail(job.id, "E" * (ROW_ERROR_CHARS + 50))
    [row] = repo.window_rows("failed")
    assert (row.id, row.type, row.status, row.retry_count, row.max_retries) == (job.id, "t", "failed", 0, 0)
    assert not hasattr(row, "payload") and row.error == "E" * ROW_ERROR_CHARS
    assert row.updated_at == repo.find_by_id(job.id).updated_at  # times come back as aware UTC
    assert [r.id for r in repo.window_rows("running")] == [r.id for r in repo.window("running")]


def test_window_rows_equal_what_peewees_namedtuples_give(repo, clock):
    for n in range(5):
        repo.create(f"t{n % 2}", {"n": n}, priority=n % 3, idempotency_key=f"k{n}", retry_backoff=n or None)
        clock.advance(1)
    for n in range(3):
        repo.claim(f"worker {n}")
    repo.heartbeat([job.id for job in repo.window("running")], worker_id="worker 1")
    Job = repo.Job
    columns = [field for field in Job._meta.sorted_fields if field.name not in ("payload", "error")]
    error = pw.fn.SUBSTR(Job.error, 1, ROW_ERROR_CHARS).alias("error")
    for status, type in [("pending", None), ("running", None), ("running", "t1"), ("failed", None)]:
        expected = list(repo._window_query(status, type, 200, *columns, error).namedtuples())
        rows = repo.window_rows(status, type=type)
        assert [row._asdict() for row in rows] == [row._asdict() for row in expected]
        assert len(rows) == repo.counts(type=type)[status]


def test_huge_ages_mean_nothing_is_that_old(repo, clock):
    job, _ = repo.create("t", max_retries=0)
    repo.claim("w")
    assert repo.reap_stale(timedelta.max) == 0
    repo.fail(job.id, "x")
    assert repo.prune(timedelta.max) == 0
    assert repo.find_by_id(job.id).status == "failed"


def test_attempt_counts_every_claim_and_survives_an_operator_retry(repo, clock):
    job, _ = repo.create("t", max_retries=1, retry_backoff=0)
    other, _ = repo.create("t")
    assert job.attempt == 0  # never claimed
    assert repo.claim("w1").attempt == 1
    assert repo.fail(job.id, "one", worker_id="w1", attempt=1).attempt == 1
    [again] = repo.claim_many("w1", 1)
    assert again.attempt == 2
    assert repo.fail(job.id, "two", worker_id="w1", attempt=2).status == "failed"
    retried = repo.retry(job.id)
    assert (retried.retry_count, retried.attempt) == (0, 2)  # the retry resets retry_count, never the attempt
    third = repo.claim("w1")
    assert (third.id, third.attempt) == (job.id, 3)
    assert repo.release(job.id, worker_id="w1", attempt=3).attempt == 3
    fourth = repo.claim("w1")
    done, following = repo.complete_and_claim(job.id, worker_id="w1", attempt=fourth.attempt)
    assert (done.attempt, done.status) == (4, "completed")
    assert (following.id, following.attempt) == (other.id, 1)
    assert [e.attempt for e in repo.errors_for(job.id)] == [1, 2]


@pytest.mark.parametrize(
    "types",
    [
        [f"t{i}" for i in range(MAX_TYPES + 1)],  # too many: each count compiled a statement of its own
        ["ok", ""],
        ["ok", "x" * 256],
        ["ok", "bad\ntype"],
        ["ok", 7],
        "just-one-type",  # a string is not a list of types (it would claim types "j", "u", ...)
    ],
)
def test_bad_types_in_a_claim_name_types_and_change_nothing(repo, types):
    job, _ = repo.create("t")
    other, _ = repo.create("t")
    held = repo.claim("w", types=["t"])
    calls = [
        lambda: repo.claim("w", types=types),
        lambda: repo.claim_many("w", 5, types=types),
        lambda: repo.complete_and_claim(job.id, types, worker_id="w", attempt=held.attempt),
    ]
    for call in calls:
        with pytest.raises(ValidationError) as info:
            call()
        assert info.value.field == "types"
    assert repo.find_by_id(job.id).status == "running" and repo.find_by_id(other.id).status == "pending"


def test_the_most_types_a_claim_takes(repo):
    job, _ = repo.create(f"t{MAX_TYPES - 1}")
    assert repo.claim("w", types=[f"t{i}" for i in range(MAX_TYPES)]).id == job.id


@pytest.mark.parametrize(
    ("stored", "again"),
    [
        ({"amount": 1}, {"amount": True}),
        ({"amount": 1}, {"amount": 1.0}),
        ({"amount": True}, {"amount": 1}),
        ({"amount": 0}, {"amount": False}),
        ({"amount": 2.0}, {"amount": 2}),
        ({"line": {"qty": [1, 2]}}, {"line": {"qty": [True, 2]}}),
    ],
)
def test_an_idempotency_key_with_a_payload_equal_only_loosely_is_a_conflict(repo, stored, again):
    # Issue 19 defect 13: Python's 1 == 1.0 == True made these "the same job" and returned the stored one.
    job, _ = repo.create("pay", stored, idempotency_key="tb1")
    with pytest.raises(IdempotencyConflict):
        repo.create("pay", again, idempotency_key="tb1")
    with pytest.raises(IdempotencyConflict):
        repo.create_many([{"type": "pay", "payload": again, "idempotency_key": "tb1"}])
    assert repo.find_by_id(job.id).payload == stored and sum(repo.counts().values()) == 1


def test_an_idempotency_key_with_the_same_payload_in_another_key_order_returns_the_stored_job(repo):
    job, _ = repo.create("pay", {"amount": 1, "to": {"iban": "x", "name": "ann"}}, idempotency_key="tb1")
    same, created = repo.create("pay", {"to": {"name": "ann", "iban": "x"}, "amount": 1}, idempotency_key="tb1")
    assert same.id == job.id and not created
    [again] = repo.create_many(
        [{"type": "pay", "payload": {"amount": 1, "to": {"name": "ann", "iban": "x"}}, "idempotency_key": "tb1"}]
    )
    assert again.id == job.id


def test_reap_lost_workers_takes_back_the_jobs_of_each_worker_silent_past_its_own_stale_after(repo, clock):
    for name in ("a", "b", "c"):
        repo.create("t", {"n": name})
    repo.register_worker("gone", host="h", pid=1, queues=None, concurrency=2, stale_after=20)
    repo.register_worker("alive", host="h", pid=2, queues=None, concurrency=1, stale_after=600)
    held = [repo.claim("gone"), repo.claim("gone"), repo.claim("alive")]
    assert repo.reap_lost_workers() == {}  # nobody silent yet
    clock.advance(30)  # past gone's 20 s, well within alive's 600 s (and a reaper's 300 s)
    repo.worker_seen("alive", running=1, completed=0, failed=0)
    assert repo.reap_lost_workers() == {"gone": 2}
    jobs = [repo.find_by_id(job.id) for job in held]
    assert [job.status for job in jobs] == ["pending", "pending", "running"]
    assert "its worker was lost (not seen for 30s, its --stale-after 20s)" in jobs[0].error
    assert [w.state for w in repo.workers()] == ["running", "stopped"]  # alive, gone (sorted by id)
    assert repo.reap_lost_workers() == {}


@pytest.mark.parametrize("bad", [1.9, True, 2**63, "1", None])
def test_a_job_id_that_is_no_whole_number_of_64_bits_is_refused_by_every_single_job_method(repo, bad):
    # peewee bound 1.9 and True as job 1 (complete(1.9) completed job 1); 2**63 was OverflowError on SQLite
    # and None on PostgreSQL.
    job, _ = repo.create("t", max_retries=0)
    repo.claim("w1")
    calls = {
        "find_by_id": lambda: repo.find_by_id(bad),
        "errors_for": lambda: repo.errors_for(bad),
        "refusal": lambda: repo.refusal(bad),
        "complete": lambda: repo.complete(bad),
        "complete_and_claim": lambda: repo.complete_and_claim(bad, worker_id="w1", attempt=1),
        "fail": lambda: repo.fail(bad, "boom"),
        "release": lambda: repo.release(bad),
        "retry": lambda: repo.retry(bad),
        "cancel": lambda: repo.cancel(bad),
        "mark_cancelled": lambda: repo.mark_cancelled(bad, worker_id="w1", attempt=1),
        "heartbeat": lambda: repo.heartbeat([bad], worker_id="w1"),
        "cancel_requests": lambda: repo.cancel_requests([bad], worker_id="w1"),
    }
    for name, call in calls.items():
        with pytest.raises(ValidationError) as info:
            call()
        assert info.value.field in ("job_id", "job_ids") and "whole number" in info.value.message, name
    after = repo.find_by_id(job.id)
    assert (after.status, after.worker_id, after.heartbeat_at, repo.errors_for(job.id)) == ("running", "w1", None, [])


def test_a_job_id_below_1_names_no_job(repo):
    assert repo.find_by_id(0) is None and repo.complete(-1) is None and repo.cancel(0) is None


def test_a_job_id_of_an_integer_type_is_taken_as_its_int(repo):
    # operator.index: numpy's int64 and other integer types that say they are one (a float does not).
    job, _ = repo.create("t")

    class Id:
        def __index__(self):
            return job.id

    assert repo.find_by_id(Id()).id == job.id and repo.cancel(Id()).status == "cancelled"


@pytest.mark.backends("sqlite")  # EXPLAIN QUERY PLAN; PostgreSQL's planner goes by its statistics
def test_a_prune_batch_deletes_its_jobs_by_primary_key_not_by_walking_every_old_job(repo, clock):
    # Regression: the batch's DELETE ... WHERE id IN (its ids) AND status IN (finished) AND updated_at < cutoff
    # was planned as a walk of the status index over every old finished job, per batch: at a million jobs
    # a prune of 800,000 took 168 s in 5,000-job batches of ~1 s each, holding SQLite's write lock (a
    # worker's write waited up to 6 s), and each --prune-after batch of a worker cost as much. Its ids are
    # known: the primary key finds them whatever the table holds (PostgreSQL planned a sequential scan).
    # SQLite chose the index from about ten ids on.
    completed_days_ago(repo, clock, 12, days=8)
    with statements_run(repo, lambda sql: sql.startswith('DELETE FROM "jobs"')) as deletes:
        assert repo.prune(timedelta(days=7)) == 12
    assert deletes
    for sql, params in deletes:
        plan = sqlite_plan(repo, sql, params)
        assert "INTEGER PRIMARY KEY" in plan and "jobs_status_updated" not in plan, plan
