"""``HttpQueue``: the HTTP API seen as a queue, so the same ``Worker`` loop runs remotely.

It has the methods of ``JobRepository`` that a worker calls (``queue_core.worker.protocol.JobQueue``:
claim, complete, complete_and_claim, fail, release, heartbeat, cancel_requests, mark_cancelled, reap_stale,
prune, and the registry's register_worker, worker_seen, worker_stopped; plus claim_many, and
create for producers) with the same shapes and the same
answers: a job, ``None`` when the job is not (or no longer) held, and ``ValidationError`` for bad
input. Jobs come back as ``RemoteJob``: plain data, no database behind it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

import httpx

from .errors import IdempotencyConflict, QueueError, ValidationError
from .results import encode_result
from .store.models import priority_label
from .store.repository import PRUNE_BATCH, validated_attempts
from .validation import (
    encode_payload,
    validate_api_url,
    validate_aware,
    validate_error,
    validate_job_id,
    validate_token,
    validate_traceback,
)
from .wire import IDEMPOTENCY_CONFLICT, MAX_CLAIM_BATCH, READ_ONLY, WORKER_NOT_REGISTERED

DEFAULT_TIMEOUT = 30.0
# Unknown route, method not allowed, method not implemented: what another web server answers the API's paths.
NO_SUCH_ROUTE = (404, 405, 501)
DERIVED = ("priority_label", "cancel_requested")  # computed from other fields: never kept as extras
TIME_FIELDS = ("claimed_at", "created_at", "updated_at", "run_at", "heartbeat_at", "cancel_requested_at")


class RemoteQueueError(QueueError):
    """The queue API could not be reached, refused the token, or failed; ``status`` is the HTTP code if any."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class RemoteJob:
    """A job as the API returns it: the columns of ``jobs`` with times as aware datetimes."""

    id: int
    type: str
    payload: dict[str, Any]
    priority: int
    status: str
    retry_count: int
    max_retries: int
    idempotency_key: str | None = None
    claimed_at: datetime | None = None
    worker_id: str | None = None
    error: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    run_at: datetime | None = None
    heartbeat_at: datetime | None = None
    retry_backoff: float | None = None
    # Claims so far: the fencing token an ack names (schema v5). A server from before v5 does not send
    # it; from_dict then derives it as that server's token was (retry_count + 1).
    attempt: int | None = None
    queue: str = "default"  # schema v6
    # An operator's cancel request (schema v6); the worker sets it on the running job when its heartbeat sees
    # one, so a handler over HTTP reads current_job().cancel_requested as one on the database would.
    cancel_requested_at: datetime | None = None
    result: Any = None  # the handler's return value (schema v6)
    timeout: float | None = None  # seconds per attempt (schema v6)
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_dict(cls, data: dict) -> RemoteJob:
        known = {name for name in cls.__dataclass_fields__ if name != "extra"}
        values = {name: data.get(name) for name in known if name in data}
        for name in TIME_FIELDS:
            if values.get(name) is not None:
                values[name] = datetime.fromisoformat(values[name])
        if values.get("attempt") is None and values.get("retry_count") is not None:
            values["attempt"] = values["retry_count"] + 1
        extra = {key: value for key, value in data.items() if key not in known and key not in DERIVED}
        return cls(**values, extra=extra)

    @property
    def cancel_requested(self) -> bool:
        return self.cancel_requested_at is not None

    @property
    def priority_label(self) -> str:
        return priority_label(self.priority)

    def to_dict(self) -> dict:
        data = {name: getattr(self, name) for name in self.__dataclass_fields__ if name != "extra"}
        for name in TIME_FIELDS:
            if data[name] is not None:
                data[name] = data[name].isoformat()
        data["priority_label"] = self.priority_label
        data["cancel_requested"] = self.cancel_requested  # as Job.to_dict: the same JSON either way
        return data


class HttpQueue:
    """A queue behind ``python -m queue_core.server`` at ``base_url``; thread-safe (one pooled HTTP client)."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        client: httpx.Client | None = None,
    ):
        # Checked now, as a ValidationError: else a bad URL or a token no header can carry (non-ASCII) would
        # surface from httpx on the first request as an InvalidURL or a UnicodeEncodeError.
        headers = {"Authorization": f"Bearer {validate_token('token', token)}"} if token else {}
        self.base_url = validate_api_url("base_url", base_url).rstrip("/")
        try:
            # ``client`` lets tests pass an in-process one (FastAPI's TestClient) instead of a socket.
            self.http = client or httpx.Client(base_url=self.base_url, timeout=timeout)
        except httpx.InvalidURL as exc:
            raise ValidationError("base_url", f"{base_url!r} is not a valid URL ({exc})") from None
        self.http.headers.update(headers)
        self._registrations: dict[str, dict] = {}  # worker id -> the body of its last register_worker

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> HttpQueue:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def check(self) -> dict:
        """Fail fast with a ``RemoteQueueError`` when the server is unreachable, refuses the token, or takes it
        for reading only; returns /stats.

        A read-only token (the server's ``--read-token``) may GET /stats, so reading proves nothing about the
        claims and acks a worker sends. The heartbeat of no jobs does: it is a write, refused with 403 before
        its route runs for that token, and for any other it answers ``{"held": []}`` without a statement run.
        """
        stats = self._json(self._request("GET", "/stats", None))
        if not isinstance(stats, dict) or not isinstance(stats.get("counts"), dict):
            raise RemoteQueueError(f"{self.base_url} is not the queue API: GET /stats answered JSON without counts")
        self._post("/jobs/heartbeat", {"worker_id": "queue-core-check", "job_ids": []})
        return stats

    # --- the worker's methods ---------------------------------------------------------------------

    def create_tick(
        self, schedule: str, tick: datetime, type: str, payload: dict | None = None, *, idempotency_key: str, **options
    ) -> tuple[RemoteJob, bool] | None:
        """A ``--api`` worker's periodic tick, as ``JobRepository.create_tick``: None when this tick or a later one
        of ``schedule`` was enqueued before and its job since pruned. A server older than the route answers 404:
        a ``create`` with the tick's key then, which forgets a tick once its job is pruned (README, Periodic jobs)."""
        body = self._create_body(type, payload, idempotency_key=idempotency_key, **options)
        body["tick"] = validate_aware("tick", tick).isoformat()
        response = self._request("POST", f"/schedules/{_segment(schedule)}/ticks", body, allow=(404, 422))
        if response.status_code == 404:
            return self.create(type, payload, idempotency_key=idempotency_key, **options)
        if response.status_code == 204:
            return None
        return self._created(response, idempotency_key)

    def create(
        self,
        type: str,
        payload: dict | None = None,
        *,
        priority: int | str = 0,
        max_retries: int | None = None,
        idempotency_key: str | None = None,
        run_at: datetime | None = None,
        retry_backoff: float | None = None,
        queue: str | None = None,
        timeout: float | None = None,
    ) -> tuple[RemoteJob, bool]:
        body = self._create_body(
            type,
            payload,
            priority=priority,
            max_retries=max_retries,
            idempotency_key=idempotency_key,
            run_at=run_at,
            retry_backoff=retry_backoff,
            queue=queue,
            timeout=timeout,
        )
        return self._created(self._request("POST", "/jobs", body, allow=(422,)), idempotency_key)

    @staticmethod
    def _create_body(
        type: str,
        payload: dict | None = None,
        *,
        priority: int | str = 0,
        max_retries: int | None = None,
        idempotency_key: str | None = None,
        run_at: datetime | None = None,
        retry_backoff: float | None = None,
        queue: str | None = None,
        timeout: float | None = None,
    ) -> dict:
        # The repository's own checks of what JSON cannot carry, so both answer a ValidationError naming the
        # field (a set or NaN in the payload was a TypeError or ValueError from the JSON encoder here).
        encode_payload(payload)
        body = {"type": type, "payload": payload, "priority": priority, "idempotency_key": idempotency_key}
        if queue is not None:  # left out: "default", and a server from before v6 still accepts the body
            body["queue"] = queue
        if max_retries is not None:
            body["max_retries"] = max_retries
        if run_at is not None:
            body["run_at"] = validate_aware("run_at", run_at).isoformat()
        if retry_backoff is not None:
            body["retry_backoff"] = retry_backoff
        if timeout is not None:
            body["timeout"] = timeout
        return body

    def _created(self, response: httpx.Response, idempotency_key: str | None) -> tuple[RemoteJob, bool]:
        """A create's answer: the job and whether it is new; a reused key's conflict as ``create`` raises it."""
        if response.status_code == 422:
            problem = _problem(response)
            existing = self.find_by_id(problem["job_id"]) if problem.get("type") == IDEMPOTENCY_CONFLICT else None
            if existing is None:
                raise error_from(response)
            raise IdempotencyConflict(idempotency_key, existing)
        return RemoteJob.from_dict(self._json(response)), response.status_code == 201

    def claim(self, worker_id: str, *, types=None, queues=None) -> RemoteJob | None:
        body = _with_queues({"worker_id": worker_id, "types": _list_or_none(types)}, queues)
        response = self._post("/jobs/claim", body)
        return None if response.status_code == 204 else RemoteJob.from_dict(self._json(response))

    def claim_many(self, worker_id: str, n: int, *, types=None, queues=None) -> list[RemoteJob]:
        """Up to ``n`` jobs, and at most ``MAX_CLAIM_BATCH``: the server refuses to be asked for more, and a
        worker with more free slots (``--concurrency`` up to 256) claims for the others on its next round."""
        if isinstance(n, int):  # anything else goes as it is, for the server's 422 naming n
            n = min(n, MAX_CLAIM_BATCH)
        body = _with_queues({"worker_id": worker_id, "n": n, "types": _list_or_none(types)}, queues)
        return [RemoteJob.from_dict(data) for data in self._json(self._post("/jobs/claim-many", body))["jobs"]]

    def complete(
        self, job_id: int, *, worker_id: str | None = None, attempt: int | None = None, result=None
    ) -> RemoteJob | None:
        encode_result(result)  # a result JSON cannot carry: the repository's ValidationError, not the encoder's
        return self._ack(job_id, "complete", {"worker_id": worker_id, "attempt": attempt, "result": result})

    def fail(
        self,
        job_id: int,
        error: str,
        *,
        worker_id: str | None = None,
        attempt: int | None = None,
        traceback: str | None = None,
        final: bool = False,
    ) -> RemoteJob | None:
        # Cut as the repository stores them (the server would do the same): sent whole, a handler's long
        # message (an HTTP response's body, say) was over the server's --max-body-bytes, refused with 413 at
        # every try, and the job stayed running until it was reaped, ran again and failed alike.
        error, traceback = validate_error(error), validate_traceback(traceback)
        body = {"error": error, "worker_id": worker_id, "attempt": attempt}
        # Each sent only when set, so a server older than the field takes every other failure as before.
        extras = {} if traceback is None else {"traceback": traceback}
        if final:
            extras["final"] = True
        if not extras:
            return self._ack(job_id, "fail", body)
        try:
            return self._ack(job_id, "fail", {**body, **extras})
        except ValidationError as exc:
            if exc.field not in extras:
                raise
            # A server older than the field refuses it (422, nothing written): the error is kept (a final
            # failure is then retried by the usual rules, as that server's workers did).
            return self._ack(job_id, "fail", body)

    def release(self, job_id: int, *, worker_id: str | None = None, attempt: int | None = None) -> RemoteJob | None:
        return self._ack(job_id, "release", {"worker_id": worker_id, "attempt": attempt})

    def heartbeat(self, job_ids, *, worker_id: str, attempts=None) -> list[int] | list[tuple[int, int]]:
        job_ids = list(job_ids)
        if not job_ids:
            return []
        body = {"worker_id": worker_id, "job_ids": job_ids}
        if attempts is None:
            return self._json(self._post("/jobs/heartbeat", body))["held"]
        attempts = validated_attempts(job_ids, attempts)
        pairs = list(zip(job_ids, attempts, strict=True))
        response = self._request("POST", "/jobs/heartbeat", {**body, "attempts": attempts}, allow=(422,))
        answer = None if response.status_code == 422 else self._json(response)
        if answer is None or answer.get("attempts") is None:
            if answer is None and not _refuses(response, "attempts"):
                raise error_from(response)
            # A server from before attempts: ids only, as it always fenced heartbeats (by worker id alone).
            held = set((answer or self._json(self._post("/jobs/heartbeat", body)))["held"])
            return sorted(pair for pair in pairs if pair[0] in held)
        return sorted(zip(answer["held"], answer["attempts"], strict=True))

    def held_claims(self, worker_id: str) -> list[tuple[int, int]]:
        """The (id, attempt) of the running jobs ``worker_id`` holds. A server older than the route answers
        404: none known (a claim whose reply was lost is then left to the reaper, as it always was)."""
        response = self._request("GET", f"/workers/{_segment(worker_id)}/held", None, allow=(404,))
        if response.status_code == 404:
            return []
        answer = self._json(response)
        return list(zip(answer["held"], answer["attempts"], strict=True))

    def reap_stale(self, older_than: timedelta) -> int:
        if not isinstance(older_than, timedelta):
            raise ValidationError("older_than", "must be a non-negative timedelta")
        return self._json(self._post("/jobs/reap", {"older_than_seconds": older_than.total_seconds()}))["reaped"]

    def complete_and_claim(
        self, job_id: int, types=None, *, worker_id: str, attempt: int, queues=None, result=None
    ) -> tuple[RemoteJob | None, RemoteJob | None]:
        """Complete the held job and claim the next due one of ``types`` in ``queues`` in one round trip:
        (completed, claimed)."""
        body = _with_queues({"worker_id": worker_id, "attempt": attempt, "types": _list_or_none(types)}, queues)
        body["result"] = result
        data = self._json(self._post(f"/jobs/{validate_job_id(job_id)}/complete-and-claim", body))
        return _remote_or_none(data["completed"]), _remote_or_none(data["claimed"])

    def complete_many(self, completions, *, worker_id: str) -> list[tuple[int, int]]:
        """One completion call per job (the API completes one at a time): the (id, attempt) still held."""
        return [
            (job_id, attempt)
            for job_id, attempt, result in completions
            if self.complete(job_id, worker_id=worker_id, attempt=attempt, result=result) is not None
        ]

    def complete_and_claim_many(
        self, completions, n: int, types=None, *, worker_id: str, queues=None
    ) -> tuple[list[tuple[int, int]], list[RemoteJob]]:
        """The completions, then a claim of up to ``n`` jobs; one round trip for the common single job."""
        completions = list(completions)
        if len(completions) == 1 and n == 1:
            job_id, attempt, result = completions[0]
            done, claimed = self.complete_and_claim(
                job_id, types, worker_id=worker_id, attempt=attempt, queues=queues, result=result
            )
            return ([(job_id, attempt)] if done is not None else []), ([] if claimed is None else [claimed])
        done = self.complete_many(completions, worker_id=worker_id)
        return done, self.claim_many(worker_id, n, types=types, queues=queues)

    def cancel_requests(self, job_ids, *, worker_id: str) -> list[int]:
        job_ids = list(job_ids)
        if not job_ids:
            return []
        return self._json(self._post("/jobs/cancel-requests", {"worker_id": worker_id, "job_ids": job_ids}))["ids"]

    def mark_cancelled(self, job_id: int, *, worker_id: str, attempt: int) -> RemoteJob | None:
        return self._ack(job_id, "cancelled", {"worker_id": worker_id, "attempt": attempt})

    # --- the worker registry: the worker's row, for `workers` and `GET /workers` ---------------

    def register_worker(
        self,
        worker_id: str,
        *,
        host: str,
        pid: int,
        queues: list[str] | None,
        concurrency: int,
        stale_after: float,
        types: list[str] | None = None,
    ) -> None:
        body = {"host": host, "pid": pid, "queues": queues, "concurrency": concurrency, "stale_after": stale_after}
        if types is not None:
            body["types"] = list(types)
        # Kept (before it is sent: a registration that failed is made again too) for worker_seen's 404.
        self._registrations[worker_id] = body
        self._register(worker_id, body)

    def _register(self, worker_id: str, body: dict) -> None:
        path = f"/workers/{_segment(worker_id)}/register"
        response = self._request("POST", path, body, allow=(422,))
        if response.status_code != 422:
            return
        if "types" not in body or not _refuses(response, "types"):
            raise error_from(response)
        # A server from before workers recorded their types (schema v13) refuses the field (422, nothing
        # written): the registration failed at start and at every beat, an error line each, and the worker
        # never showed in `workers`. Without it, that server's row is a worker of every type, as it read all.
        body = {name: value for name, value in body.items() if name != "types"}
        self._registrations[worker_id] = body
        self._post(path, body)

    def worker_seen(self, worker_id: str, *, running: int, completed: int, failed: int) -> None:
        """The heartbeat of the worker's row. A server with no row for it (its registration failed, or an operator's
        prune removed the row of a worker that was silent that long) answers 404 worker-not-registered: the
        registration this client sent is made again and the heartbeat sent once more; with none, the 404 is a
        ``RemoteQueueError`` that says to register first."""
        body = {"running": running, "completed": completed, "failed": failed}
        path = f"/workers/{_segment(worker_id)}/seen"
        response = self._request("POST", path, body, allow=(404,))
        if response.status_code != 404:
            return
        registration = self._registrations.get(worker_id)
        if registration is None or _problem(response).get("type") != WORKER_NOT_REGISTERED:
            raise error_from(response)
        self._register(worker_id, registration)
        self._post(path, body)

    def worker_stopped(self, worker_id: str) -> None:
        self._post(f"/workers/{_segment(worker_id)}/stopped", {})

    def prune(self, older_than: timedelta, *, batch: int = PRUNE_BATCH, max_batches: int | None = None) -> int:
        if not isinstance(older_than, timedelta):
            raise ValidationError("older_than", "must be a non-negative timedelta")
        body = {"older_than_seconds": older_than.total_seconds(), "batch": batch, "max_batches": max_batches}
        return self._json(self._post("/jobs/prune", body))["pruned"]

    def refresh_statistics(self) -> bool:
        """Ask the server to refresh its database's planner statistics if they are stale. A server older
        than the route answers 404: nothing done, and no error (its claims plan as they always did)."""
        response = self._request("POST", "/jobs/refresh-statistics", None, allow=(404,))
        return response.status_code != 404 and bool(self._json(response)["analyzed"])

    def find_by_id(self, job_id: int) -> RemoteJob | None:
        response = self._request("GET", f"/jobs/{validate_job_id(job_id)}", None, allow=(404,))
        return None if response.status_code == 404 else RemoteJob.from_dict(self._json(response))

    # --- HTTP -------------------------------------------------------------------------------------

    def _ack(self, job_id: int, verb: str, body: dict) -> RemoteJob | None:
        # 404 and 409 are the repository's None: the job is gone, or no longer ours to finish.
        response = self._request("POST", f"/jobs/{validate_job_id(job_id)}/{verb}", body, allow=(404, 409))
        return RemoteJob.from_dict(self._json(response)) if response.status_code == 200 else None

    def _json(self, response: httpx.Response) -> Any:
        """A success's body as JSON; a RemoteQueueError when it is none (``base_url`` is some other server,
        whose page was a JSONDecodeError here, a traceback out of a worker's start-up check)."""
        try:
            return response.json()
        except ValueError:
            raise not_the_api(response, "JSON") from None

    def _post(self, path: str, body: dict) -> httpx.Response:
        return self._request("POST", path, body)

    def _request(self, method: str, path: str, body: dict | None, *, allow=()) -> httpx.Response:
        try:
            response = self.http.request(method, path, json=body)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            message = f"cannot reach the queue API at {self.base_url}: {exc or 'timed out'}"
            if "WRONG_VERSION_NUMBER" in str(exc):
                # OpenSSL's words for a TLS hello answered in plain text: the server (queue_core.server serves
                # no TLS of its own) is plain HTTP at this address.
                message += "; the server answered in plain HTTP: give an http:// address, or put TLS in front of it"
            raise RemoteQueueError(message) from exc
        except httpx.TransportError as exc:
            # Connected, then no (whole) answer: the server may have done what was asked. "cannot reach" said
            # it had not, and a create retried on that word enqueued the job twice.
            raise RemoteQueueError(_no_answer(self, method, path, exc)) from exc
        except httpx.HTTPError as exc:
            raise RemoteQueueError(f"cannot reach the queue API at {self.base_url}: {exc}") from exc
        if response.status_code < 400 or response.status_code in allow:
            return response
        raise error_from(response)


def _no_answer(queue: HttpQueue, method: str, path: str, exc: httpx.TransportError) -> str:
    """What a request sent and left without an answer means: for a write, that it may have been carried out."""
    if isinstance(exc, httpx.TimeoutException):
        seconds = queue.http.timeout.read
        why = "in time" if seconds is None else f"within {seconds:g}s (HttpQueue's timeout=)"
    else:
        why = f"({exc or type(exc).__name__})"
    message = f"the queue API at {queue.base_url} gave no answer to {method} {path} {why}"
    if method == "GET":
        return message
    message += ": it may have carried the request out"
    if method == "POST" and path == "/jobs":
        message += (
            "; look for the job before enqueuing it again, or give it an idempotency key, with which a retried"
            " create cannot enqueue it twice"
        )
    return message


def _remote_or_none(data: dict | None) -> RemoteJob | None:
    return None if data is None else RemoteJob.from_dict(data)


def _segment(text: str) -> str:
    """``text`` as one URL path segment: a worker id may hold ``/``, ``?`` or ``%``."""
    return quote(text, safe="")


def _with_queues(body: dict, queues) -> dict:
    """``body`` with ``queues`` when a claim is limited to some: left out, it means every queue, which is
    also all a server from before named queues (schema v6) understands."""
    return body if queues is None else {**body, "queues": list(queues)}


def _list_or_none(types):
    return None if types is None else list(types)


def error_from(response: httpx.Response) -> QueueError:
    """The queue error a problem+json response stands for, so callers catch the same errors as locally."""
    problem = _problem(response)
    detail = problem.get("detail") or response.reason_phrase
    status = response.status_code
    if status in NO_SUCH_ROUTE and not problem:
        # The API answers an unknown route or method with a problem: a page is another server's (a wrong port,
        # a proxy's location that leads elsewhere), and "the queue API answered 404: File not found" said the
        # queue was there. Other statuses may be a proxy's in front of the API (502 while it restarts, 413).
        return not_the_api(response, "a problem+json")
    if status == 422:
        first = (problem.get("errors") or [{}])[0]
        return ValidationError(first.get("field", "request"), first.get("message", detail))
    if status == 401:
        # The server's detail is for a curl user ("send ... as 'Authorization: Bearer <token>'"): a worker's
        # operator needs to know which side to change. "refused the token" when none was sent misled too.
        if "authorization" not in response.request.headers:
            return RemoteQueueError(
                "the queue API needs a token and none was sent: give the server's --token (a worker's --token "
                "or $QUEUE_API_TOKEN)",
                status,
            )
        return RemoteQueueError(
            "the queue API refused the token: it is not the server's --token (a server restarted with another "
            "needs the new one here: a worker's --token or $QUEUE_API_TOKEN, then restart the worker)",
            status,
        )
    if status == 403 and problem.get("type") == READ_ONLY:
        return RemoteQueueError(
            "the token is read-only: a worker needs the write token (the server's --token, not its --read-token)",
            status,
        )
    return RemoteQueueError(f"the queue API answered {status}: {detail}", status)


def not_the_api(response: httpx.Response, expected: str) -> RemoteQueueError:
    """The error of an answer that is not the queue API's (``expected`` is what it would have been)."""
    request = response.request
    kind = response.headers.get("content-type") or "no content type"
    address = f"{request.url.scheme}://{request.url.netloc.decode('ascii')}"
    return RemoteQueueError(
        f"{address} is not the queue API: {request.method} {request.url.path} answered {response.status_code} "
        f"with {kind}, not {expected}; give the address of python -m queue_core.server",
        response.status_code,
    )


def _refuses(response: httpx.Response, field: str) -> bool:
    """Whether a 422 names ``field`` among its errors: what a server older than that field answers."""
    errors = _problem(response).get("errors")
    return isinstance(errors, list) and any(isinstance(e, dict) and e.get("field") == field for e in errors)


def _problem(response: httpx.Response) -> dict:
    """An error response's problem object; ``{}`` when its body is none (a proxy's page, say)."""
    try:
        problem = response.json()
    except ValueError:
        return {}
    return problem if isinstance(problem, dict) else {}
