"""What a worker reports: ``WorkerEvent``, the one-line text of each, and the list of who listens.

The headless CLI logs every event and the console's worker pane shows them; a worker embedded in an
application may have no listener at all, so an event (and its text) is only built when someone listens.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..errors import ValidationError
from ..store.postgres import refusal
from ..text import printable

logger = logging.getLogger(__name__)

# "overrun": a plain handler's thread still running past its job's timeout (Python cannot stop it); the
# attempt was failed and the slot moved on. "unconfirmed": an outcome re-sent after an error found the claim
# no longer held, so whether the first try was written (its reply lost) or the claim was taken back is not
# known. "unwritten": a stop ended with outcomes not written (given up, or a write still under way), or
# (with its job) a stop could not release an unfinished job.
EVENT_KINDS = (
    "started",
    "claimed",
    "completed",
    "failed",
    "released",
    "lost",
    "reaped",
    "overrun",
    "error",
    "recovered",
    "stopped",
    "cancel-requested",
    "cancelled",
    "unconfirmed",
    "unwritten",
)


@dataclass(frozen=True)
class WorkerEvent:
    """Something a worker did, for logs and for the console's worker pane."""

    kind: str  # one of EVENT_KINDS
    worker_id: str
    job_id: int | None = None
    job_type: str | None = None
    attempt: int | None = None  # 1-based
    duration: float | None = None  # seconds the handler ran
    error: str | None = None
    message: str = ""  # one human-readable line: what the log prints
    note: str = ""  # what the message adds to the fields above (why a job was lost, when it is retried...)
    # A ``failed`` attempt's: the handler's traceback as Python prints it (its frames only; for a coroutine's
    # timeout, where it was waiting), or None (no frame of the handler in it: a plain handler's timeout...).
    traceback: str | None = None


class EventHub:
    """The subscribers of one worker; ``emit`` calls each, from whichever worker thread the event happened on."""

    def __init__(self, worker_id: str):
        self.worker_id = worker_id
        self._lock = threading.Lock()
        self._subscribers: tuple[tuple[Callable[[WorkerEvent], None], frozenset[str] | None], ...] = ()
        # Per kind, the callbacks that want it: a dict replaced whole on subscribe, so emit reads it without
        # a lock on every job and returns at once for a kind nobody wants (no event or text is built).
        self._by_kind: dict[str, tuple[Callable[[WorkerEvent], None], ...]] = {}

    def subscribe(self, callback: Callable[[WorkerEvent], None], kinds: Iterable[str] | None = None) -> None:
        """Call ``callback`` for every event, or only for those of ``kinds``."""
        if not callable(callback):  # else its first call fails, logged with a traceback, at every event
            raise ValidationError("on_event", f"must be callable, e.g. print, got {type(callback).__name__}")
        with self._lock:
            self._subscribers = (*self._subscribers, (callback, None if kinds is None else frozenset(kinds)))
            self._by_kind = {
                kind: tuple(cb for cb, wanted in self._subscribers if wanted is None or kind in wanted)
                for kind in EVENT_KINDS
            }

    @property
    def listening(self) -> bool:
        return bool(self._subscribers)

    def wants(self, kind: str) -> bool:
        """Someone listens for ``kind``: only then is it worth building."""
        return bool(self._by_kind.get(kind))

    def emit(
        self,
        kind: str,
        job=None,
        *,
        duration: float | None = None,
        error: str | None = None,
        note: str = "",
        message: str = "",
        traceback: str | None = None,
    ) -> None:
        subscribers = self._by_kind.get(kind)
        if not subscribers:
            return
        if not message:
            message = describe(kind, self.worker_id, job, duration, error, note)
        event = WorkerEvent(
            kind=kind,
            worker_id=self.worker_id,
            job_id=None if job is None else job.id,
            job_type=None if job is None else job.type,
            attempt=None if job is None else job.attempt,
            duration=duration,
            error=error,
            message=message,
            note=note,
            traceback=traceback,
        )
        for callback in subscribers:
            try:
                callback(event)
            except Exception:
                logger.exception("worker event subscriber %r failed on a %s event", callback, kind)

    def error(self, action: str, exc: Exception, *, retrying: bool = False, tries: int = 1) -> None:
        """An ``error`` event: a queue call (``action``) raised ``exc``; ``retrying`` says it will be tried again,
        ``tries`` how many tries of it failed so far."""
        if not self.wants("error"):
            return
        then = (f"; {tries} tries failed" if tries > 1 else "") + ("; retrying" if retrying else "")
        if why := refusal(exc):  # a read-only or unprivileged role...: what to change, which retrying will not
            then += f" ({why})"
        error = f"{type(exc).__name__}: {exception_message(exc)}"
        message = f"error worker={self.worker_id} during={action} error={json.dumps(clipped(error))}{then}"
        self.emit("error", error=error, message=message)

    def recovered(self, action: str, tries: int) -> None:
        """A ``recovered`` event: a queue call (``action``) worked after ``tries`` failed in a row."""
        if self.wants("recovered"):
            failed = "1 failed try" if tries == 1 else f"{tries} failed tries"
            self.emit(
                "recovered", message=f"recovered worker={self.worker_id} during={action}; works again after {failed}"
            )


def exception_message(exc: BaseException) -> str:
    """``str(exc)``, or the exception's type name when that is empty, not a string, or raises.

    A handler's exception is arbitrary code: its ``__str__`` raising (or returning a non-string, which makes
    ``str()`` raise) must still end as a failed attempt, never take the worker thread down.
    """
    try:
        message = str(exc)
    except Exception:
        message = ""
    return message or type(exc).__name__


# A log line carries at most this much of an error: a handler's 200,000-character message made a line as long
# (the job's stored error keeps more, and the console's detail shows it).
LOG_ERROR_CHARS = 2000


def clipped(error: str, limit: int = LOG_ERROR_CHARS) -> str:
    """``error`` cut to ``limit`` characters for a log line, saying how much was left out."""
    if len(error) <= limit:
        return error
    return f"{error[:limit]}… ({len(error) - limit:,} more characters)"


def describe(kind: str, worker_id: str, job, duration: float | None, error: str | None, note: str) -> str:
    """One log line: ``completed job=7 type=echo attempt=1 worker=w duration=0.012s``, then error and note."""
    parts = [kind]
    if job is not None:
        parts += [f"job={job.id}", f"type={job.type}", f"attempt={job.attempt}"]
    parts.append(f"worker={worker_id}")
    if duration is not None:
        parts.append(f"duration={duration:.3f}s")
    if error is not None:
        parts.append(f"error={printable(json.dumps(clipped(error), ensure_ascii=False))}")
    line = " ".join(parts)
    return f"{line}: {note}" if note else line
