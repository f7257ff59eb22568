"""``HttpQueue`` answers like ``JobRepository``: the same jobs, None for lost claims, the same errors."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from fastapi.testclient import TestClient
from support import every_row

from queue_core.client import HttpQueue, RemoteJob, RemoteQueueError
from queue_core.errors import IdempotencyConflict, QueueError, ValidationError
from queue_core.server.app import create_app
from queue_core.wire import MAX_CLAIM_BATCH, WORKER_NOT_REGISTERED
from queue_core.worker import Worker


@pytest.fixture
def queue(repo):
    # In process: FastAPI's TestClient is an httpx.Client, so HttpQueue runs its real HTTP code against the app.
    with HttpQueue("http://testserver", client=TestClient(create_app(repo), raise_server_exceptions=False)) as q:
        yield q


def test_remote_job_carries_what_a_handler_and_the_worker_read(queue, repo):
    run_at = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    job, created = queue.create("mail", {"to": "ann"}, priority=25, max_retries=2, run_at=run_at, retry_backoff=0)
    assert created and isinstance(job, RemoteJob)
    assert job.to_dict() == repo.find_by_id(job.id).to_dict()
    claimed = queue.claim("w1", types=["mail"])
    assert (claimed.id, claimed.type, claimed.payload, claimed.retry_count, claimed.attempt) == (
        job.id,
        "mail",
        {"to": "ann"},
        0,
        1,
    )
    assert claimed.priority_label == "high" and claimed.claimed_at == repo.now()
    assert claimed.worker_id == "w1" and claimed.status == "running"


def test_a_heartbeat_of_a_worker_with_no_row_registers_it_again_or_says_to_register(queue, repo, clock):
    """The server answers 404 worker-not-registered (it was a 204 that wrote nothing): a worker whose row is gone
    (its registration failed, or a prune removed it) is registered again with what it sent, and shows again."""
    with pytest.raises(RemoteQueueError) as info:
        queue.worker_seen("w1", running=0, completed=0, failed=0)  # never registered by this client
    assert info.value.status == 404 and "register it first" in str(info.value)
    queue.register_worker("w1", host="box", pid=7, queues=["mail"], concurrency=2, stale_after=5.0, types=["t"])
    repo.WorkerRecord.delete().execute()  # as prune_workers removes a row
    queue.worker_seen("w1", running=1, completed=4, failed=1)
    [worker] = repo.workers()
    assert (worker.id, worker.host, worker.queues, worker.concurrency, worker.state) == (
        "w1",
        "box",
        ["mail"],
        2,
        "running",
    )
    assert (worker.completed, worker.failed) == (4, 1)
    queue.worker_stopped("w1")
    assert repo.workers()[0].state == "stopped"


def test_fail_release_and_the_fencing_attempt(queue, repo, clock):
    queue.create("t", max_retries=3, retry_backoff=0)
    claimed = queue.claim("w1")
    failed = queue.fail(claimed.id, "boom", worker_id="w1", attempt=1)
    assert (failed.status, failed.retry_count, failed.error) == ("pending", 1, "boom")
    again = queue.claim("w1")
    assert again.attempt == 2
    assert queue.fail(again.id, "late", worker_id="w1", attempt=1) is None  # a stale attempt is fenced off
    released = queue.release(again.id, worker_id="w1", attempt=2)
    assert (released.status, released.retry_count) == ("pending", 1)
    assert queue.release(again.id, worker_id="w1") is None
    assert queue.fail(424242, "x") is None


def test_claim_many_heartbeat_and_reap(queue, repo, clock):
    ids = [queue.create("t", {"n": n})[0].id for n in range(3)]
    batch = queue.claim_many("w1", 2)
    assert [job.id for job in batch] == ids[:2]
    assert queue.claim_many("w1", 5, types=["other"]) == []
    assert queue.heartbeat([], worker_id="w1") == []
    clock.advance(100)
    assert queue.heartbeat([ids[0]], worker_id="w1") == [ids[0]]
    clock.advance(100)
    assert queue.reap_stale(timedelta(seconds=150)) == 1  # ids[1]: no heartbeat for 200 s
    assert repo.find_by_id(ids[1]).status == "pending"
    assert queue.find_by_id(ids[0]).status == "running"
    assert queue.find_by_id(999) is None


def test_a_heartbeat_with_attempts_is_fenced_by_attempt_over_http(queue, repo, clock):
    job, _ = queue.create("t")
    queue.claim("w1")
    clock.advance(10)
    assert repo.reap_stale(timedelta(seconds=5)) == 1
    assert queue.claim("w1").attempt == 2  # the same worker claims it again
    assert queue.heartbeat([job.id, job.id], worker_id="w1", attempts=[1, 2]) == [(job.id, 2)]
    assert queue.heartbeat([job.id], worker_id="w1", attempts=[1]) == []
    assert queue.heartbeat([job.id], worker_id="w1") == [job.id]  # the old contract: ids alone
    with pytest.raises(ValidationError, match="attempts"):
        queue.heartbeat([job.id], worker_id="w1", attempts=[1, 2])


def test_a_heartbeat_with_attempts_to_a_server_without_them_falls_back_to_ids(repo):
    # A server from before attempts forbids the field (422): the worker's beats go on, fenced by worker id.
    def old_server(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if "attempts" in body:
            errors = [{"field": "attempts", "message": "extra inputs are not permitted"}]
            return httpx.Response(422, json={"status": 422, "errors": errors})
        return httpx.Response(200, json={"held": [body["job_ids"][0]]})

    client = httpx.Client(base_url="http://old", transport=httpx.MockTransport(old_server))
    with HttpQueue("http://old", client=client) as old:
        assert old.heartbeat([5, 6], worker_id="w1", attempts=[2, 1]) == [(5, 2)]


def test_held_claims_over_http(queue, repo):
    job, _ = queue.create("t")
    queue.claim("w/1")
    assert queue.held_claims("w/1") == [(job.id, 1)]
    assert queue.held_claims("w2") == []


def test_errors_match_the_repository(queue, repo):
    queue.create("charge", {"order": 1}, idempotency_key="k")
    with pytest.raises(IdempotencyConflict) as info:
        queue.create("charge", {"order": 2}, idempotency_key="k")
    assert info.value.existing.idempotency_key == "k"
    with pytest.raises(ValidationError) as info:
        queue.create("charge", priority="urgent")
    assert info.value.field == "priority"
    with pytest.raises(ValidationError):
        queue.reap_stale(60)
    with pytest.raises(ValidationError) as info:
        queue.claim_many("w", 0)
    assert info.value.field == "n"


def test_a_wrong_token_is_a_remote_queue_error(repo):
    app = create_app(repo, token="right")
    with HttpQueue("http://testserver", token="wrong", client=TestClient(app)) as queue:
        with pytest.raises(RemoteQueueError) as info:
            queue.claim("w")
        assert info.value.status == 401 and "token" in str(info.value)
        with pytest.raises(RemoteQueueError):
            queue.check()
    with HttpQueue("http://testserver", token="right", client=TestClient(app)) as queue:
        assert queue.check()["counts"]["pending"] == 0
        assert queue.claim("w") is None


def test_the_check_refuses_a_read_only_token_and_writes_nothing(repo):
    # Regression: check() only read /stats, which the read token may do, so a worker given the read token
    # passed its start-up check, then met a 403 on every claim for ever.
    app = create_app(repo, token="write-t0k", read_token="read-t0k")
    repo.create("t")
    repo.claim("w")  # a running job: a heartbeat that wrote would touch it
    before = every_row(repo)
    with HttpQueue("http://testserver", token="read-t0k", client=TestClient(app)) as queue:
        with pytest.raises(RemoteQueueError) as info:
            queue.check()
        assert info.value.status == 403
        assert str(info.value).startswith("the token is read-only: a worker needs the write token")
    with HttpQueue("http://testserver", token="write-t0k", client=TestClient(app)) as queue:
        assert queue.check()["counts"]["running"] == 1
    assert every_row(repo) == before


def test_a_500_is_a_remote_queue_error_not_a_crash(repo, monkeypatch):
    def explode(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(repo, "claim", explode)
    client = TestClient(create_app(repo), raise_server_exceptions=False)
    with HttpQueue("http://testserver", client=client) as queue, pytest.raises(RemoteQueueError) as info:
        queue.claim("w")
    assert info.value.status == 500


@pytest.mark.parametrize("token", ["sécret", "two words", "line\nbreak"])
def test_a_token_no_http_header_can_carry_is_a_validation_error_at_construction(token):
    # Before: a UnicodeEncodeError from httpx on the first request (and "" silently meant no token).
    with pytest.raises(ValidationError) as info:
        HttpQueue("http://127.0.0.1:9", token=token)
    assert info.value.field == "token"


@pytest.mark.parametrize("url", ["http://[::1", "http://127.0.0.1:99999", "ftp://127.0.0.1/", "127.0.0.1:8000"])
def test_an_invalid_base_url_is_a_validation_error_at_construction(url):
    with pytest.raises(ValidationError) as info:
        HttpQueue(url)
    assert info.value.field == "base_url" and url in info.value.message


def test_a_remote_worker_registers_its_types_through_the_api(queue, repo):
    """The registry's types come over the HTTP API too: "why is this job waiting?" reads them for remote
    workers as for local ones."""
    queue.register_worker("r1", host="h", pid=1, queues=None, concurrency=1, stale_after=30, types=["echo"])
    job, _ = repo.create("resize")
    assert repo.WorkerRecord.get_by_id("r1").types == '["echo"]'
    assert [reason.kind for reason in repo.why_waiting(job.id)] == ["no_worker"]
    queue.register_worker("r1", host="h", pid=1, queues=None, concurrency=1, stale_after=30)  # types not said
    assert repo.WorkerRecord.get_by_id("r1").types is None
    assert [reason.kind for reason in repo.why_waiting(job.id)] == ["next"]


def test_a_worker_with_many_handlers_claims_with_all_its_types(queue, repo):
    # Regression: an --api worker claims with every type it has a handler for, and the API took at most 100:
    # with 124 (120 handlers and the 4 built-in ones) every claim was a 422 and the worker ran nothing.
    types = [f"m{i}" for i in range(124)]
    first, second, third = (queue.create(name)[0] for name in ("m0", "m123", "m7"))
    claimed = queue.claim("w", types=types)
    assert claimed.id == first.id
    done, following = queue.complete_and_claim(first.id, types, worker_id="w", attempt=claimed.attempt)
    assert (done.status, following.id) == ("completed", second.id)
    assert [job.id for job in queue.claim_many("w", 5, types=types)] == [third.id]


def test_a_claim_for_more_jobs_than_the_server_hands_out_at_once_asks_for_its_limit(queue, repo):
    # Regression: a worker with 150 free slots asked for n=150, which the API refuses above 100: every claim
    # was a 422 and the worker never ran a job. A claim means "up to n": it now asks for the server's limit.
    ids = [job.id for job in repo.create_many([{"type": "t"}] * (MAX_CLAIM_BATCH + 30))]
    assert [job.id for job in queue.claim_many("w", 150)] == ids[:MAX_CLAIM_BATCH]
    held = queue.find_by_id(ids[0])
    done, claimed = queue.complete_and_claim_many([(held.id, held.attempt, None)], 150, worker_id="w")
    assert done == [(held.id, held.attempt)] and [job.id for job in claimed] == ids[MAX_CLAIM_BATCH:]


def test_a_worker_with_more_slots_than_one_claim_takes_runs_every_job(live_repo, handlers, events):
    handlers.register("t", lambda payload: None)
    repo = live_repo
    repo.create_many([{"type": "t"}] * 200)
    # 200 jobs over the in-process TestClient are not milliseconds: 11 s here on PostgreSQL, 19 s in a full
    # run, and past WAIT's 20 s in a fresh CI's (114 of 200 done). As a context manager the client keeps one
    # event loop for every request, as a server does (6 s here; without, each request started its own), and
    # the wait for the drain is 90 s: a guard against a hang, not a limit on speed.
    with (
        TestClient(create_app(repo), raise_server_exceptions=False) as client,
        HttpQueue("http://testserver", client=client) as queue,
    ):
        worker = Worker(
            queue, worker_id="wide", registry=handlers, concurrency=150, poll_interval=0.01, max_poll_interval=0.05,
            on_event=events,
        )  # fmt: skip
        runner = threading.Thread(target=worker.run, kwargs={"burst": True})
        runner.start()
        try:
            events.wait_for("stopped", timeout=90)  # a burst stops once nothing is left to claim and nothing runs
        finally:
            worker.stop(timeout=0)
            runner.join()
    assert not events.of("error"), [e.message for e in events.of("error")[:3]]
    assert repo.counts()["completed"] == 200


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda q: q.create("t", {"a": {1, 2}}), "payload"),
        (lambda q: q.create("t", {"a": b"x"}), "payload"),
        (lambda q: q.create("t", {"a": float("nan")}), "payload"),
        (lambda q: q.create("t", run_at="2030-01-01T00:00:00Z"), "run_at"),
        (lambda q: q.complete(1, result={1, 2}), "result"),
        (lambda q: q.complete(1, result=float("nan")), "result"),
    ],
)
def test_what_json_cannot_carry_is_the_repositorys_validation_error(queue, repo, call, field):
    """HttpQueue answers as JobRepository does: a ValidationError naming the field, not the JSON encoder's
    TypeError or ValueError (or an AttributeError for a run_at that is a string); nothing is sent."""
    with pytest.raises(ValidationError) as info:
        call(queue)
    assert info.value.field == field
    assert sum(repo.counts().values()) == 0


def not_the_api(status: int, content: bytes, content_type: str) -> HttpQueue:
    """A queue whose address answers every request with this page: another server than the queue API."""
    page = httpx.MockTransport(
        lambda request: httpx.Response(status, content=content, headers={"content-type": content_type})
    )
    return HttpQueue("http://elsewhere", client=httpx.Client(base_url="http://elsewhere", transport=page))


@pytest.mark.parametrize(
    ("status", "content", "content_type"),
    [(200, b"<html>welcome</html>", "text/html"), (200, b"[1, 2]", "application/json"), (422, b"<html>", "text/html")],
    ids=["a web page", "other JSON", "an error page"],
)
def test_an_address_that_is_not_the_queue_api_is_a_remote_queue_error(status, content, content_type):
    # A 200 page that is not JSON was a JSONDecodeError: `queue-worker --api` at the wrong address ended its
    # start-up check in a traceback (exit 1) instead of one error: line.
    with not_the_api(status, content, content_type) as queue:
        with pytest.raises(QueueError) as info:
            queue.check()
        assert "http://elsewhere" in str(info.value) or status == 422
        if content_type == "text/html":  # past the check, a page is still an error of the queue's
            with pytest.raises(QueueError):
                queue.create("t")
            with pytest.raises(QueueError):
                queue.claim("w")


def test_a_remote_workers_scheduler_enqueues_its_ticks_through_the_api(queue, repo):
    """A ``--api`` worker runs the scheduler of its --handlers modules over HTTP, as a local one does."""
    from datetime import UTC, datetime

    from queue_core.worker.scheduler import Schedule, Scheduler

    scheduler = Scheduler(queue, [Schedule("report", "*/5 * * * *", "report", {"format": "pdf"})])
    [job] = scheduler.tick(datetime(2026, 1, 1, 12, 7, tzinfo=UTC))
    stored = repo.find_by_id(job.id)
    assert (stored.idempotency_key, stored.payload) == ("periodic:report:2026-01-01T12:05:00Z", {"format": "pdf"})
    assert Scheduler(queue, scheduler.schedules).tick(datetime(2026, 1, 1, 12, 8, tzinfo=UTC)) == []


def test_a_remote_schedulers_tick_whose_job_was_pruned_is_not_enqueued_again(queue, repo, clock):
    """As on the database (test_scheduler.py): the key alone forgot a tick once prune deleted its job, and a
    ``--api`` worker starting later enqueued the tick that already ran again."""
    from queue_core.worker.scheduler import Schedule, Scheduler

    schedule = Schedule("nightly", "0 3 * * *", "nightly")
    clock.advance(15 * 3600 + 30)  # the database's clock too: a tick ahead of it is refused
    [job] = Scheduler(queue, [schedule]).tick(datetime(2026, 1, 2, 3, 0, 30, tzinfo=UTC))
    held = queue.claim("w", types=["nightly"])
    queue.complete(held.id, worker_id="w", attempt=held.attempt)
    clock.advance(7200)
    assert queue.prune(timedelta(seconds=3600)) == 1 and repo.find_by_id(job.id) is None
    later = datetime(2026, 1, 2, 16, tzinfo=UTC)
    assert Scheduler(queue, [schedule]).tick(later) == []  # a worker started since: still the same tick
    assert repo.list() == []
    assert repo.last_tick("nightly") == datetime(2026, 1, 2, 3, tzinfo=UTC)  # recorded over the API too
    clock.advance(24 * 3600)
    [tomorrow] = Scheduler(queue, [schedule]).tick(later + timedelta(days=1))
    assert tomorrow.idempotency_key == "periodic:nightly:2026-01-03T03:00:00Z"
    # While the tick's job is there, the same job comes back (not created again), as create answers.
    assert queue.create_tick(
        "nightly", datetime(2026, 1, 3, 3, tzinfo=UTC), "nightly", idempotency_key=tomorrow.idempotency_key
    ) == (tomorrow, False)


def test_a_tick_to_a_server_without_the_tick_route_is_a_create_with_the_ticks_key(repo):
    # A server from before POST /schedules/{name}/ticks answers 404: the tick goes as POST /jobs with its key.
    app = create_app(repo)
    seen = []

    def old_server(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.raw_path.decode())
        if request.url.path.startswith("/schedules/"):
            return httpx.Response(404, json={"type": "about:blank", "status": 404, "detail": "no route"})
        return httpx.Response(201, json=app_create(app, json.loads(request.content)))

    client = httpx.Client(base_url="http://old", transport=httpx.MockTransport(old_server))
    with HttpQueue("http://old", client=client) as old:
        tick = datetime(2026, 1, 2, 3, tzinfo=UTC)
        job, created = old.create_tick("night/ly", tick, "nightly", {"a": 1}, idempotency_key="periodic:k", priority=5)
    assert created and (job.idempotency_key, job.payload, job.priority) == ("periodic:k", {"a": 1}, 5)
    assert seen == ["/schedules/night%2Fly/ticks", "/jobs"]


def app_create(app, body: dict) -> dict:
    with TestClient(app) as http:
        return http.post("/jobs", json=body).json()


@pytest.mark.parametrize("bad", [1.9, True, "1", "x", None], ids=["a float", "a bool", "digits", "text", "None"])
@pytest.mark.parametrize(
    "call",
    [
        lambda q, job_id: q.complete(job_id, worker_id="w1"),
        lambda q, job_id: q.fail(job_id, "boom", worker_id="w1"),
        lambda q, job_id: q.release(job_id, worker_id="w1"),
        lambda q, job_id: q.mark_cancelled(job_id, worker_id="w1", attempt=1),
        lambda q, job_id: q.complete_and_claim(job_id, worker_id="w1", attempt=1),
        lambda q, job_id: q.find_by_id(job_id),
    ],
    ids=["complete", "fail", "release", "mark_cancelled", "complete_and_claim", "find_by_id"],
)
def test_a_job_id_that_is_no_int_is_a_validation_error_and_touches_no_job(queue, repo, call, bad):
    """``int(job_id)`` in the path made 1.9 and True job 1 (completed, failed or read as if asked for), and
    "x" or None a bare ValueError or TypeError out of the client."""
    queue.create("t")
    held = queue.claim("w1")
    with pytest.raises(ValidationError) as info:
        call(queue, bad)
    assert info.value.field == "job_id"
    assert repo.find_by_id(held.id).status == "running"


def _raising(exc_type):
    def handle(request):
        raise exc_type("timed out", request=request)

    return HttpQueue(
        "http://queue.test",
        client=httpx.Client(base_url="http://queue.test", timeout=7, transport=httpx.MockTransport(handle)),
    )


def test_a_create_left_without_an_answer_says_it_may_have_been_written_not_that_the_api_was_unreachable():
    with pytest.raises(RemoteQueueError) as info:
        _raising(httpx.ReadTimeout).create("mail", {"to": "ann"})
    message = str(info.value)
    assert "cannot reach" not in message  # it did reach it: retrying on that word enqueued the job twice
    assert message.startswith("the queue API at http://queue.test gave no answer to POST /jobs within 7s")
    assert "it may have carried the request out" in message and "idempotency key" in message
    with pytest.raises(RemoteQueueError) as read:
        _raising(httpx.ReadTimeout).find_by_id(1)
    assert (
        str(read.value)
        == "the queue API at http://queue.test gave no answer to GET /jobs/1 within 7s (HttpQueue's timeout=)"
    )
    with pytest.raises(RemoteQueueError) as dropped:
        _raising(httpx.RemoteProtocolError).complete(1, worker_id="w", attempt=1)
    assert "gave no answer to POST /jobs/1/complete (timed out): it may have carried the request out" in str(
        dropped.value
    )


@pytest.mark.parametrize("exc_type", [httpx.ConnectError, httpx.ConnectTimeout])
def test_a_server_that_cannot_be_connected_to_is_unreachable(exc_type):
    with pytest.raises(RemoteQueueError) as info:
        _raising(exc_type).create("mail", {"to": "ann"})
    assert str(info.value) == "cannot reach the queue API at http://queue.test: timed out"


@pytest.mark.parametrize(
    ("message", "stored_error"),
    [
        ("x" * 2_000_000, "x" * 10_000 + " ... (truncated)"),
        ("bad byte \udcff from os.fsdecode", "bad byte \\udcff from os.fsdecode"),
    ],
    ids=["over the server's body limit", "a lone surrogate"],
)
def test_a_failed_attempt_with_a_message_json_or_the_body_limit_refuses_is_written_as_the_repository_writes_it(
    live_repo, handlers, events, message, stored_error
):
    """A handler's long message (a response body quoted whole, say) was sent uncut: the server refused the
    fail with 413 at every try, and the job stayed running until reaped, then ran and failed alike again."""

    def fails(payload):
        raise ValueError(message)

    handlers.register("fails", fails)
    job, _ = live_repo.create("fails", max_retries=0)
    client = TestClient(create_app(live_repo), raise_server_exceptions=False)
    with HttpQueue("http://testserver", client=client) as queue:
        worker = Worker(
            queue, worker_id="remote", registry=handlers, poll_interval=0.01, stale_after=2, on_event=events
        )
        worker.run(burst=True)
    assert not events.of("error"), [e.message[:200] for e in events.of("error")[:3]]
    stored = live_repo.find_by_id(job.id)
    assert (stored.status, stored.error) == ("failed", stored_error)


def test_a_registration_to_a_server_without_worker_types_is_made_without_them():
    # Regression: a server from before workers recorded their types refuses the field (422): the remote worker's
    # registration failed at start and at every heartbeat, one error line each, and it never showed in `workers`.
    sent = []

    def old_server(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        sent.append((request.url.path, body))
        if "types" in body:
            errors = [{"field": "types", "message": "Extra inputs are not permitted"}]
            return httpx.Response(422, json={"status": 422, "errors": errors})
        if request.url.path.endswith("/seen") and len([p for p, _ in sent if p.endswith("/register")]) < 3:
            return httpx.Response(404, json={"type": WORKER_NOT_REGISTERED, "status": 404})
        return httpx.Response(204)

    client = httpx.Client(base_url="http://old", transport=httpx.MockTransport(old_server))
    with HttpQueue("http://old", client=client) as old:
        old.register_worker("w1", host="h", pid=1, queues=None, concurrency=2, stale_after=30, types=["echo"])
        old.worker_seen("w1", running=0, completed=1, failed=0)  # a 404: registers again, as it did last
    registrations = [body for path, body in sent if path.endswith("/register")]
    assert [sorted(body) for body in registrations] == [
        ["concurrency", "host", "pid", "queues", "stale_after", "types"],
        ["concurrency", "host", "pid", "queues", "stale_after"],
        ["concurrency", "host", "pid", "queues", "stale_after"],
    ]
    assert [path for path, _ in sent][-2:] == ["/workers/w1/register", "/workers/w1/seen"]


def test_a_registration_refused_for_another_reason_is_still_an_error():
    def server(request: httpx.Request) -> httpx.Response:
        errors = [{"field": "stale_after", "message": "must be positive"}]
        return httpx.Response(422, json={"status": 422, "errors": errors})

    client = httpx.Client(base_url="http://s", transport=httpx.MockTransport(server))
    with HttpQueue("http://s", client=client) as queue, pytest.raises(ValidationError) as info:
        queue.register_worker("w1", host="h", pid=1, queues=None, concurrency=1, stale_after=30, types=["echo"])
    assert info.value.field == "stale_after"


@pytest.mark.parametrize(
    ("status", "content_type"), [(404, "text/html"), (405, "text/plain"), (501, "text/html")], ids=str
)
def test_another_servers_error_page_says_the_address_is_not_the_queue_api(status, content_type):
    # Regression: a wrong port whose web server answers GET /stats with its 404 page stopped the worker with
    # "error: the queue API answered 404: File not found", as if the queue were there and had no such route.
    with not_the_api(status, b"<html>File not found</html>", content_type) as queue:
        for call in (queue.check, lambda: queue.claim("w"), lambda: queue.create("t")):
            with pytest.raises(RemoteQueueError) as info:
                call()
            assert str(info.value).startswith("http://elsewhere is not the queue API: ")
            assert f"answered {status} with {content_type}" in str(info.value)


def test_a_proxys_error_page_in_front_of_the_api_is_still_its_status():
    # A 502 page while the server behind a proxy restarts is no sign of a wrong address: said as the status.
    with not_the_api(502, b"<html>Bad Gateway</html>", "text/html") as queue, pytest.raises(RemoteQueueError) as info:
        queue.claim("w")
    assert str(info.value) == "the queue API answered 502: Bad Gateway"
