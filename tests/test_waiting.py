"""``why_waiting``: each reason a pending job waits, in words (both backends)."""

from __future__ import annotations

from datetime import timedelta

from queue_core.store.reads import page_columns


def serve(repo, queues="*", worker_id="w1"):
    repo.register_worker(worker_id, host="h", pid=1, queues=queues, concurrency=1, stale_after=30)


def kinds(reasons):
    return [reason.kind for reason in reasons]


def test_the_next_job_will_be_claimed_next(repo):
    serve(repo)
    job, _ = repo.create("t")
    assert [(r.kind, r.message) for r in repo.why_waiting(job.id)] == [("next", "it will be claimed next")]


def test_a_paused_queue_says_so(repo):
    serve(repo)
    job, _ = repo.create("t", queue="emails")
    repo.pause_queue("emails")
    assert [(r.kind, r.message) for r in repo.why_waiting(job.id)] == [("paused", "queue emails is paused")]


def test_a_delayed_job_is_scheduled(repo, clock):
    serve(repo)
    job, _ = repo.create("t", run_at=clock() + timedelta(minutes=30))
    reasons = repo.why_waiting(job.id)
    assert kinds(reasons) == ["scheduled"]
    assert reasons[0].message == "scheduled for 12:30:00 UTC (delayed)"
    tomorrow, _ = repo.create("t", run_at=clock() + timedelta(days=1))
    assert repo.why_waiting(tomorrow.id)[0].message == "scheduled for 2026-01-02 12:00:00 UTC (delayed)"


def test_a_backed_off_job_names_the_attempt_that_failed(repo, clock):
    job, _ = repo.create("t", max_retries=3, retry_backoff=60)
    for _ in range(2):
        clock.advance(600)  # past any back-off so far: due again
        claimed = repo.claim("w")
        repo.fail(job.id, "boom", worker_id="w", attempt=claimed.attempt)
    serve(repo)
    reasons = repo.why_waiting(job.id)
    assert kinds(reasons) == ["scheduled"]
    assert reasons[0].message.endswith("UTC (back-off after attempt 2)")


def test_jobs_ahead_by_priority_are_counted(repo):
    serve(repo)
    low, _ = repo.create("t", priority="low")
    for _ in range(3):
        repo.create("t", priority="high")
    repo.create("t", priority="high", queue="elsewhere")  # another queue: not ahead in this one
    reasons = repo.why_waiting(low.id)
    assert [(r.kind, r.message) for r in reasons] == [
        ("ahead", "3 due jobs are ahead of it by priority in queue default")
    ]


def test_the_jobs_ahead_stop_at_a_cap_when_one_is_given(repo):
    """The console asks again on every refresh: behind a backlog it counts up to its cap, as its tables do."""
    serve(repo)
    low, _ = repo.create("t", priority="low")
    for _ in range(4):
        repo.create("t", priority="high")
    message = "2+ due jobs are ahead of it by priority in queue default"
    assert repo.why_waiting(low.id, ahead_cap=2)[0].message == message
    assert repo.why_waiting(low.id, ahead_cap=4)[0].message.startswith("4 due jobs are ahead")
    light = repo.Job.select(*page_columns(repo.Job)).where(repo.Job.id == low.id).first()  # no payload read
    assert repo.why_job_waits(light, ahead_cap=2) == repo.why_waiting(low.id, ahead_cap=2)


def test_no_live_worker_for_its_queue(repo, clock):
    job, _ = repo.create("t", queue="emails")
    assert kinds(repo.why_waiting(job.id)) == ["no_worker"]
    serve(repo, queues=["other"], worker_id="other")
    assert repo.why_waiting(job.id)[0].message == "no live worker serves queue emails"
    serve(repo, queues=["emails"], worker_id="mail")
    assert kinds(repo.why_waiting(job.id)) == ["next"]
    clock.advance(60)  # past the worker's own stale_after (30 s): lost, not live
    assert kinds(repo.why_waiting(job.id)) == ["no_worker"]
    assert kinds(repo.why_waiting(job.id, stale_after=timedelta(minutes=5))) == ["next"]
    repo.worker_seen("mail", running=0, completed=0, failed=0)
    repo.worker_stopped("mail")
    assert kinds(repo.why_waiting(job.id)) == ["no_worker"]


def test_a_job_that_is_not_pending_is_not_waiting(repo):
    job, _ = repo.create("t")
    repo.claim("w")
    assert [(r.kind, r.message) for r in repo.why_waiting(job.id)] == [
        ("not_waiting", "it is running on worker w, not waiting")
    ]
    assert kinds(repo.why_waiting(999)) == ["not_waiting"]


def test_no_live_worker_has_a_handler_for_its_type(repo):
    """A worker serving every queue but not the job's type never claims it: it is not "next"."""
    job, _ = repo.create("nohandler")
    repo.register_worker("w1", host="h", pid=1, queues="*", concurrency=1, stale_after=30, types=["echo", "sleep"])
    assert [(r.kind, r.message) for r in repo.why_waiting(job.id)] == [
        ("no_worker", "no live worker has a handler for type nohandler (those serving queue default: w1)")
    ]
    serve(repo, worker_id="older")  # registered without its types (before schema version 13): any type
    assert kinds(repo.why_waiting(job.id)) == ["next"]
    repo.register_worker("older", host="h", pid=2, queues="*", concurrency=1, stale_after=30, types=["nohandler"])
    assert kinds(repo.why_waiting(job.id)) == ["next"]
    repo.register_worker("older", host="h", pid=2, queues="*", concurrency=1, stale_after=30, types=[])
    assert kinds(repo.why_waiting(job.id)) == ["no_worker"]


def test_a_worker_registers_the_types_it_has_handlers_for(repo, make_worker, handlers):
    handlers.register("echo", lambda payload: None)
    handlers.register("resize", lambda payload: None)
    worker = make_worker(repo)
    worker.start()
    try:
        assert repo.WorkerRecord.get_by_id("w1").types == '["echo", "resize"]'
    finally:
        worker.stop(timeout=0)
