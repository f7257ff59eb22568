"""The one exception tree of the queue: everything we raise on purpose is a ``QueueError``."""

from __future__ import annotations


class QueueError(Exception):
    """Root of every error the queue raises on purpose."""


class ValidationError(QueueError, ValueError):
    """Bad input; nothing was written. ``field`` names what to fix."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class IdempotencyConflict(QueueError):
    """The idempotency key is taken by a job with another type, queue or payload; the stored job is untouched."""

    def __init__(self, key: str, existing):
        super().__init__(
            f"idempotency key {key!r} already belongs to job {existing.id} "
            # getattr: a job read from a server before named queues (schema v6) has no queue.
            f"(type {existing.type!r}, queue {getattr(existing, 'queue', 'default')!r}) with a different type, "
            "queue or payload; use a new key"
        )
        self.key = key
        self.existing = existing


class JobFailed(QueueError):
    """A job whose result was awaited ended failed or cancelled: no result will come. ``job`` is the job as it
    ended (its ``error`` says why; ``python -m queue_core show ID`` lists every attempt's)."""

    def __init__(self, job):
        why = f": {job.error}" if job.error else ""
        super().__init__(f"job {job.id} ({job.type}) ended {job.status}{why}")
        self.job = job


class DatabaseURLError(QueueError):
    """The database URL cannot be opened as given."""


class NoCurrentJobError(QueueError, LookupError):
    """``current_job()`` was called outside a handler that a worker is running."""


class WorkerGaveUp(QueueError):
    """A burst run (``Worker.run(burst=True)``, ``--burst``) stopped before its queues were drained: every
    claim failed for ``stale_after`` seconds (the database or the queue API away). Its running jobs were
    finished or released as at a stop; jobs still pending wait for the next run, and an outcome it could not
    write leaves its job to the reaper, which runs it again."""
