"""Acknowledgements: writing a job's outcome (complete, fail, release, cancelled) for the claim the worker holds.

A database error while writing an outcome is not the job's fault: the write is tried again, waiting
``ACK_FIRST_WAIT`` doubling up to ``ACK_MAX_WAIT``, for as long as the claim can still be the worker's
(``stale_after``: after that the reaper takes it back, and a late ack would be refused anyway). Then the job
is left to the reaper and may run again: delivery is at least once.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from .protocol import ClaimedJob, JobQueue

ACK_FIRST_WAIT, ACK_MAX_WAIT = 0.1, 2.0

# The answer of an acknowledgement that never got through: unlike None (the claim was taken back), it says
# nothing about the job, so nothing is reported or counted for it.
GAVE_UP = object()

# on_error(action, exception, retrying=...): reports a failed queue call (the worker logs it as an event).
ErrorReporter = Callable[..., None]


def retrying(action: str, call: Callable[[], object], *, patience: float, on_error: ErrorReporter):
    """``call()``, tried again after errors for up to ``patience`` seconds; ``GAVE_UP`` when it never worked."""
    give_up_at = time.monotonic() + patience
    wait = ACK_FIRST_WAIT
    while True:
        try:
            return call()
        except Exception as exc:
            again = time.monotonic() + wait < give_up_at
            on_error(action, exc, retrying=again)
            if not again:
                return GAVE_UP
            time.sleep(wait)
            wait = min(wait * 2, ACK_MAX_WAIT)


class Acks:
    """The outcome writes of one worker, each fenced by the claim it holds (worker id and attempt)."""

    def __init__(self, queue: JobQueue, worker_id: str, *, patience: float, on_error: ErrorReporter):
        self.queue = queue
        self.worker_id = worker_id
        self.patience = patience  # stale_after: how long the claim can still be ours
        self.on_error = on_error

    def complete(self, job: ClaimedJob, result=None):
        """The completed job (with ``result``), None if the claim was taken back, or ``GAVE_UP``."""
        return self._held("complete", lambda: self.queue.complete(job.id, result=result, **self._claim(job)))

    def fail(self, job: ClaimedJob, error: str):
        """The job after a failed attempt (pending for a retry, or failed), None, or ``GAVE_UP``."""
        return self._held("fail", lambda: self.queue.fail(job.id, error, **self._claim(job)))

    def release(self, job: ClaimedJob, *, once: bool = False):
        """The job back to pending, None, or ``GAVE_UP``; ``once``: a single try (a stopping worker)."""
        return self._held("release", lambda: self.queue.release(job.id, **self._claim(job)), once=once)

    def mark_cancelled(self, job: ClaimedJob):
        """The job ended ``cancelled`` on an operator's request, None if the claim was taken back, or ``GAVE_UP``."""
        return self._held("mark_cancelled", lambda: self.queue.mark_cancelled(job.id, **self._claim(job)))

    def complete_and_claim(
        self, job: ClaimedJob, types: list[str], queues: list[str] | None, result=None
    ) -> tuple[object, ClaimedJob | None]:
        """Complete ``job`` and claim the next of ``types`` in ``queues`` in one call: (as ``complete``, the next
        job or None)."""
        try:
            return self.queue.complete_and_claim(job.id, types, queues=queues, result=result, **self._claim(job))
        except Exception as exc:
            # Not again: had that try committed unseen, another would claim a second job and orphan the
            # first. A plain completion is safe to repeat (a done job is simply no longer held).
            self.on_error("complete_and_claim", exc, retrying=True)
            return self.complete(job, result), None

    def _claim(self, job: ClaimedJob) -> dict:
        return {"worker_id": self.worker_id, "attempt": job.attempt}

    def _held(self, action: str, call: Callable[[], object], *, once: bool = False):
        return retrying(action, call, patience=0.0 if once else self.patience, on_error=self.on_error)
