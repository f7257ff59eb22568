"""``JobQueue``: exactly what a ``Worker`` asks of its queue, so any queue that has it can be worked.

``JobRepository`` (the database) and ``queue_core.client.HttpQueue`` (the HTTP API) both satisfy it; a test
compares every method's signature with theirs. The worker calls these methods and nothing else, with no
probing for what a queue can do: a queue that lacks one is incomplete, not a lesser kind of queue.

Every acknowledgement (complete_many, fail, release, mark_cancelled) carries the claim it acknowledges
(``worker_id`` and the 1-based ``attempt``, the fencing token) and answers ``None`` (a batch: leaves the
pair out) when that claim is no longer held: the job was reaped, maybe claimed again, and the late outcome
must be discarded.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

from ..errors import ValidationError
from ..store.repository import PRUNE_BATCH

logger = logging.getLogger(__name__)


class ClaimedJob(Protocol):
    """What the worker and a handler read of a job (``Job`` rows and ``RemoteJob`` both have it)."""

    @property
    def id(self) -> int: ...
    @property
    def type(self) -> str: ...
    @property
    def payload(self) -> dict[str, Any]: ...
    @property
    def status(self) -> str: ...
    @property
    def retry_count(self) -> int: ...
    @property
    def max_retries(self) -> int: ...
    @property
    def run_at(self) -> datetime | None: ...
    @property
    def attempt(self) -> int: ...


class JobQueue(Protocol):
    """The queue operations a worker uses; see the module's docstring for what the answers mean."""

    def complete_many(
        self, completions: Iterable[tuple[int, int, object]], *, worker_id: str
    ) -> Sequence[tuple[int, int]]:
        """``complete`` each held job of ``completions`` ((job_id, attempt, result) each) at once; the
        (job_id, attempt) pairs whose claim was still held."""
        ...

    def complete_and_claim_many(
        self,
        completions: Iterable[tuple[int, int, object]],
        n: int,
        types: Iterable[str] | None = None,
        *,
        worker_id: str,
        queues: Iterable[str] | None = None,
    ) -> tuple[Sequence[tuple[int, int]], Sequence[ClaimedJob]]:
        """``complete_many`` and a claim of up to ``n`` jobs (a worker's free slots) in one step:
        (the completed pairs, the jobs claimed)."""
        ...

    def fail(
        self,
        job_id: int,
        error: str,
        *,
        worker_id: str | None = None,
        attempt: int | None = None,
        traceback: str | None = None,
        final: bool = False,
    ) -> ClaimedJob | None:
        """Record a failed attempt: pending again after a back-off while retries are left, else failed (and
        failed at once when ``final``); ``traceback`` (the handler's) is kept with its error."""
        ...

    def release(self, job_id: int, *, worker_id: str | None = None, attempt: int | None = None) -> ClaimedJob | None:
        """Give the held job back to pending without counting a retry (a stopping worker)."""
        ...

    def heartbeat(
        self, job_ids: Iterable[int], *, worker_id: str, attempts: Iterable[int] | None = None
    ) -> Sequence[int] | Sequence[tuple[int, int]]:
        """Refresh the claims ``worker_id`` holds among ``job_ids``; the ids it still holds. With ``attempts``
        (one per id), only claims held at that attempt: the (id, attempt) pairs still held."""
        ...

    def held_claims(self, worker_id: str) -> Sequence[tuple[int, int]]:
        """The (id, attempt) of every running job ``worker_id`` holds (to find the jobs of a claim whose reply
        was lost)."""
        ...

    def cancel_requests(self, job_ids: Iterable[int], *, worker_id: str) -> Sequence[int]:
        """Of ``job_ids`` (running, held by ``worker_id``), the ids an operator asked to cancel."""
        ...

    def mark_cancelled(self, job_id: int, *, worker_id: str, attempt: int) -> ClaimedJob | None:
        """The handler stopped on a cancel request: the held job ends ``cancelled``, never retried; None if the
        claim is no longer held."""
        ...

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
        """Add or reset this worker's row in the registry (``queues`` None: every queue; ``types``, the job
        types it has handlers for)."""
        ...

    def worker_seen(self, worker_id: str, *, running: int, completed: int, failed: int) -> bool | None:
        """The worker is alive, with these counts since it started. A repository answers False when it has no
        row for the worker (pruned): the worker registers again."""
        ...

    def worker_stopped(self, worker_id: str) -> None:
        """The worker stopped cleanly (not lost)."""
        ...

    def reap_stale(self, older_than: timedelta) -> int:
        """Take back claims with no sign of life for ``older_than``; how many were taken back."""
        ...

    def prune(self, older_than: timedelta, *, batch: int = PRUNE_BATCH, max_batches: int | None = None) -> int:
        """Delete finished jobs older than ``older_than``, ``batch`` per transaction, at most ``max_batches``
        transactions (None: until done); how many were deleted."""
        ...

    def refresh_statistics(self) -> bool:
        """Bring the database's planner statistics of the jobs table up to date if they are stale (the
        claim's plan depends on them); True if it did."""
        ...


JOB_QUEUE_METHODS = tuple(name for name, value in vars(JobQueue).items() if callable(value) and name[0] != "_")


def check_job_queue(queue: object) -> JobQueue:
    """``queue`` if it has every method of ``JobQueue``, else a ValidationError saying what to pass.

    Given something else (a ``Queue`` rather than its repository, None), a worker took each failing call for a
    database error and retried it, silently and for ever: ``run(burst=True)`` never returned.
    """
    missing = [name for name in JOB_QUEUE_METHODS if not callable(getattr(queue, name, None))]
    if not missing:
        return queue  # type: ignore[return-value]
    if hasattr(queue, "repository") and hasattr(queue, "registry"):
        raise ValidationError(
            "queue", "got a Queue; a worker takes its repository: Worker(queue.repository, registry=queue.registry)"
        )
    lacks = ", ".join(missing[:3]) + (", ..." if len(missing) > 3 else "")
    raise ValidationError(
        "queue", f"must be a JobRepository or an HttpQueue (a JobQueue), got {type(queue).__name__} (no {lacks})"
    )


def close_thread_connection(queue: JobQueue) -> None:
    """Close the calling thread's database connection, if ``queue`` has one (a ``JobRepository``: peewee keeps
    one per thread). Not part of ``JobQueue``: an HTTP queue has a shared pool and nothing per thread."""
    close = getattr(getattr(queue, "db", None), "close", None)
    if close is None:
        return
    try:
        close()
    except Exception:
        # Closing is clean-up: the next query on this thread reconnects either way.
        logger.debug("closing a worker thread's connection failed", exc_info=True)
