"""Acknowledgements: writing a job's outcome (complete, fail, release, cancelled) for the claim the worker holds.

A database error while writing an outcome is not the job's fault: the write is tried again, waiting
``ACK_FIRST_WAIT`` doubling up to ``ACK_MAX_WAIT``, for as long as the claim can still be the worker's
(``stale_after``: after that the reaper takes it back, and a late ack would be refused anyway). Then the job
is left to the reaper and may run again: delivery is at least once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from .protocol import ClaimedJob, JobQueue

ACK_FIRST_WAIT, ACK_MAX_WAIT = 0.1, 2.0

# The answer of an acknowledgement that never got through: unlike None (the claim was taken back), it says
# nothing about the job, so nothing is reported or counted for it.
GAVE_UP = object()

# A completion waiting in the batch: (the running entry, the handler's result, seconds the handler ran).
Completion = tuple  # (session.Running, object, float)

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

    def fail(self, job: ClaimedJob, error: str):
        """The job after a failed attempt (pending for a retry, or failed), None, or ``GAVE_UP``."""
        return self._held("fail", lambda: self.queue.fail(job.id, error, **self._claim(job)))

    def release(self, job: ClaimedJob, *, once: bool = False):
        """The job back to pending, None, or ``GAVE_UP``; ``once``: a single try (a stopping worker)."""
        return self._held("release", lambda: self.queue.release(job.id, **self._claim(job)), once=once)

    def mark_cancelled(self, job: ClaimedJob):
        """The job ended ``cancelled`` on an operator's request, None if the claim was taken back, or ``GAVE_UP``."""
        return self._held("mark_cancelled", lambda: self.queue.mark_cancelled(job.id, **self._claim(job)))

    def complete_many(self, items: list[Completion]):
        """Write a batch of completions in one statement: the (id, attempt) of those whose claim was still
        held, or ``GAVE_UP``. Safe to try again: a completed job is no longer held."""
        acks = [(entry.job.id, entry.job.attempt, result) for entry, result, _ in items]
        return self._held("complete", lambda: _held_pairs(self.queue.complete_many(acks, worker_id=self.worker_id)))

    def complete_and_claim_many(
        self, items: list[Completion], n: int, types: list[str], queues: list[str] | None
    ) -> tuple[object, list[ClaimedJob], bool]:
        """Write ``items`` and claim up to ``n`` jobs in one transaction: (as ``complete_many``, the jobs
        claimed, the claim worked)."""
        acks = [(entry.job.id, entry.job.attempt, result) for entry, result, _ in items]
        try:
            done, jobs = self.queue.complete_and_claim_many(acks, n, types, worker_id=self.worker_id, queues=queues)
        except Exception as exc:
            # Not again: had that try committed unseen, another would claim more jobs and orphan these.
            # The completions alone are safe to repeat.
            self.on_error("complete_and_claim" if items else "claim", exc, retrying=bool(items))
            return (self.complete_many(items) if items else set()), [], False
        return _held_pairs(done), jobs, True

    def _claim(self, job: ClaimedJob) -> dict:
        return {"worker_id": self.worker_id, "attempt": job.attempt}

    def _held(self, action: str, call: Callable[[], object], *, once: bool = False):
        return retrying(action, call, patience=0.0 if once else self.patience, on_error=self.on_error)


def _held_pairs(done) -> set[tuple[int, int]]:
    return {(job_id, attempt) for job_id, attempt in done}


class AckBatch:
    """Completions waiting to be written: the next claim takes them along (one transaction), and a flusher
    thread writes what no claim took within ``delay`` seconds, or at once when ``size`` are waiting.

    A crash loses only what waits here (at most ``delay`` seconds of completions); their claims are
    reaped and the jobs run again: at least once, as before. ``flush`` writes what waits (a stopping
    worker's last step before it reports stopped).
    """

    def __init__(self, acks: Acks, report: Callable[[list, object], None], *, delay: float, size: int):
        self.acks = acks
        self.report = report  # report(items, done): count and tell what became of each
        self.delay = delay
        self.size = size
        self._ready = threading.Condition(threading.Lock())
        self._items: list[Completion] = []
        self._oldest = 0.0  # monotonic time the first of the waiting completions was added
        self._idle = False  # the flusher sleeps until a completion arrives
        self._stopping = False

    def add(self, item: Completion) -> None:
        """Queue a completion. The flusher is not woken for it: the slot that adds one claims next and
        takes it along, or calls ``nudge`` when it does not (waking a thread per job cost a GIL hand-off,
        14 % of a busy worker's time in py-spy); a full batch wakes it."""
        with self._ready:
            if not self._items:
                self._oldest = time.monotonic()
            self._items.append(item)
            if len(self._items) >= self.size:
                self._ready.notify()

    def nudge(self) -> None:
        """Have the flusher write what waits within ``delay`` (a slot that will not claim next)."""
        with self._ready:
            if self._items and self._idle:
                self._ready.notify()

    def take(self) -> list[Completion]:
        with self._ready:
            items, self._items = self._items, []
        return items

    def flush(self) -> None:
        items = self.take()
        if items:
            self.report(items, self.acks.complete_many(items))

    def run(self) -> None:
        """The flusher thread: until ``stop()``, write what waited ``delay`` seconds or filled a batch.

        In a busy worker the claims take the completions along first, so this rarely writes: it wakes
        once per ``delay`` at most, and not at all while nothing waits.
        """
        while True:
            with self._ready:
                while not self._stopping:
                    if not self._items:
                        self._idle = True
                        self._ready.wait()
                        self._idle = False
                        continue
                    due = self._oldest + self.delay - time.monotonic()
                    if due <= 0 or len(self._items) >= self.size:
                        break
                    self._ready.wait(due)
                if self._stopping:
                    return
            self.flush()

    def stop(self) -> None:
        """End the flusher thread (the caller flushes what is left, once no slot adds more)."""
        with self._ready:
            self._stopping = True
            self._ready.notify_all()

    def restart(self) -> None:
        with self._ready:
            self._stopping = False
