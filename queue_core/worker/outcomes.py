"""What became of each job a worker ran: the outcome written (through ``Acks``), reported, and counted.

A handler's end maps to one write: it raised -> ``fail`` (retried or failed for good); it returned ->
``complete``; an operator's cancel request reached it while it ran -> ``mark_cancelled``, whatever it did
next (a handler that checks ``current_job().cancel_requested`` returns or raises early, and either way the
job must not run again). An answer of None means the claim was taken back: the outcome is discarded.
"""

from __future__ import annotations

import threading

from ..rules import FAILED
from .acks import GAVE_UP, UNCONFIRMED, Acks
from .events import EventHub
from .protocol import ClaimedJob
from .runner import ResultNotStored
from .session import Running
from .tracebacks import handler_traceback


def failure_note(job: ClaimedJob, result: ClaimedJob, *, final: bool = False) -> str:
    """What became of a failed attempt: retried when, or failed for good."""
    if result.status == FAILED and final:
        return "not retried"
    if result.status == FAILED:
        return f"no retries left after {job.attempt} attempt{'' if job.attempt == 1 else 's'}"
    retry_at = result.run_at.isoformat(timespec="milliseconds")
    return f"retry {result.retry_count}/{result.max_retries} at {retry_at}"


class Outcomes:
    """Writes and reports outcomes; counts them under ``lock`` (the worker's, which ``stats`` reads under)."""

    def __init__(self, acks: Acks, events: EventHub, lock: threading.RLock):
        self.acks = acks
        self.events = events
        self.lock = lock
        self.completed = 0
        self.failed = 0  # failed attempts, retried or final
        self.cancelled = 0
        self.unconfirmed = 0  # outcomes whose write may or may not have been applied (a reply lost)

    def fail(self, entry: Running, duration: float, error: str, exc: BaseException | None = None) -> None:
        """A failed attempt; ``exc``, what the handler raised, gives the attempt its stored traceback and the
        ``failed`` line its own."""
        tb = handler_traceback(exc)
        final = isinstance(exc, ResultNotStored)  # a retry would run the handler that ran to its end again
        self.report(entry, self.acks.fail(entry.job, error, tb, final=final), duration, error, tb, final=final)

    def cancel(self, entry: Running, duration: float, error: str | None) -> None:
        """The handler returned or raised after a cancel request reached it: the job ends cancelled, no retry."""
        result = self.acks.mark_cancelled(entry.job)
        if result is GAVE_UP:
            return
        if result is None or result is UNCONFIRMED:
            self._lost(entry, "cancelled", duration, unsure=result is UNCONFIRMED)
            return
        with self.lock:
            self.cancelled += 1
        note = "on an operator's request; not retried" + ("" if error is None else " (the handler raised)")
        self.events.emit("cancelled", entry.job, duration=duration, error=error, note=note)

    def report(
        self, entry: Running, result, duration: float, error: str | None, tb: str | None = None, *, final: bool = False
    ) -> None:
        """Count and report a completion or failed attempt whose write answered ``result``."""
        if result is GAVE_UP:
            return  # the write never got through: nothing is known of the job, the reaper will see to it
        job = entry.job
        if result is None or result is UNCONFIRMED:
            outcome = "completed" if error is None else f"failed ({error})"
            self._lost(entry, outcome, duration, unsure=result is UNCONFIRMED)
            return
        with self.lock:
            if error is None:
                self.completed += 1
            else:
                self.failed += 1
        if error is None:
            self.events.emit("completed", job, duration=duration)
        elif self.events.wants("failed"):  # the note is formatted only when someone reads it
            self.events.emit(
                "failed", job, duration=duration, error=error, note=failure_note(job, result, final=final), traceback=tb
            )

    def completions(self, items: list, done) -> None:
        """Count and report a batch of completions; ``done``: the (id, attempt) the write found held, or
        ``GAVE_UP``; one left out of an unsure answer (``acks.Held.unsure``) is unconfirmed, not lost."""
        if done is GAVE_UP or not items:
            return
        completed, lost = [], []
        for item in items:
            entry = item[0]
            (completed if (entry.job.id, entry.job.attempt) in done else lost).append(item)
        with self.lock:  # counted before any is reported: a listener that reads ``stats`` on the event sees it
            self.completed += len(completed)
        if self.events.wants("completed"):
            for entry, _result, duration in completed:
                self.events.emit("completed", entry.job, duration=duration)
        unsure = getattr(done, "unsure", False)
        for entry, _result, duration in lost:
            self._lost(entry, "completed", duration, unsure=unsure)

    def _lost(self, entry: Running, outcome: str, duration: float, *, unsure: bool = False) -> None:
        """The write answered "not held". ``unsure``: it was a re-send after an error, and the first try may
        have been written (a connection dropped after COMMIT), so nothing is known to be lost."""
        if entry.lost:
            return  # the heartbeat found the claim taken back before the write: lost, and said so already
        if not unsure:
            note = f"{outcome} but the claim was taken back (reaped, maybe claimed again); outcome discarded"
            self.events.emit("lost", entry.job, duration=duration, note=note)
            return
        with self.lock:
            self.unconfirmed += 1
        note = (
            f"{outcome}: a try of the write raised and the re-sent ack found the claim no longer held, so "
            "either that try was written before its reply was lost (the re-send is refused, never applied "
            "twice), or the claim was taken back meanwhile and the job runs again"
        )
        self.events.emit("unconfirmed", entry.job, duration=duration, note=note)
