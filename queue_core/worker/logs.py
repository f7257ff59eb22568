"""The worker program's log: one line per worker event on stderr, as text or JSON (``--log-format``).

``configure_logging`` makes the root logger write to stderr; ``log_event`` is the worker's event
subscriber. A job event's line goes straight to the stream while nothing else listens (``EventLines``), and
the INFO ones wait up to ``LINE_DELAY`` to be written together.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from datetime import UTC, datetime

from ..text import printable, writes_unicode
from .events import EVENT_KINDS, WorkerEvent, clipped

logger = logging.getLogger("queue_core.worker")

EVENT_LEVELS = {
    "failed": logging.WARNING,
    "released": logging.WARNING,
    "lost": logging.WARNING,
    "unconfirmed": logging.WARNING,
    "unwritten": logging.WARNING,
    "overrun": logging.WARNING,
    "error": logging.ERROR,
}
EVENT_FIELDS = ("kind", "worker_id", "job_id", "job_type", "attempt", "duration", "error")
# A job's INFO lines (claimed, completed) wait up to this many seconds, then go in one write with the others
# waiting: a write a line (a system call, and a wake-up of what reads the pipe) was a sixth of a one-slot
# worker's CPU at the default level into a pipe (tests/bench/HISTORY.md, "log lines"). Any other line, and
# the worker's exit, writes them first, so the order stays; a SIGKILL loses at most this much of them.
LINE_DELAY = 0.05
LINE_BATCH = 64 * 1024  # characters waiting that are written at once, without waiting for the delay
_second: tuple[int, str] = (-1, "")  # the last second a line was stamped in, formatted (a line's date and time)


def _timestamp(created: float) -> str:
    """``created`` (a ``time.time()``) as ``2026-12-05T12:00:36.123Z``, milliseconds truncated. The second is
    formatted once: a datetime a line cost 1.8 µs, a third of a job line's cost on the direct path."""
    global _second
    second = int(created)
    micro = round((created - second) * 1_000_000)  # to the microsecond, half to even, as datetime rounds
    if micro == 1_000_000:
        second, micro = second + 1, 0
    if second != _second[0]:
        _second = (second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S"))
    return f"{_second[1]}.{micro // 1000:03d}Z"


def text_line(created: float, levelname: str, message: str) -> str:
    return f"{_timestamp(created)} {levelname} {message}"


def json_line(
    created: float,
    levelname: str,
    name: str,
    event: WorkerEvent | None,
    message: str,
    exc: str = "",
    ascii_only: bool = False,
) -> str:
    data = {"time": _timestamp(created), "level": levelname.lower(), "logger": name}
    if event is not None:
        for field in EVENT_FIELDS:
            data["event" if field == "kind" else field] = getattr(event, field)
        if event.error is not None:
            data["error"] = clipped(event.error)
    data["message"] = message
    if exc:
        data["exception"] = exc
    return printable(json.dumps(data, ensure_ascii=ascii_only))  # a bidi override is valid JSON, yet acts


def event_traceback(event: WorkerEvent | None) -> str:
    """A failed attempt's handler traceback, which its line carries as a logged exception's: in text, on the
    lines after it; in JSON, the record's ``exception``."""
    return "" if event is None or event.traceback is None else event.traceback


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = text_line(record.created, record.levelname, record.getMessage())
        if record.exc_info:
            line += "\n" + printable(self.formatException(record.exc_info), keep_newlines=True)
        elif tb := event_traceback(getattr(record, "worker_event", None)):
            line += "\n" + printable(tb, keep_newlines=True)
        return line


class JSONFormatter(logging.Formatter):
    """One JSON object per line; a worker event's fields are top-level keys (``event`` is its kind).
    ``ascii_only`` for a stream that cannot write every character (``queue_core.text``)."""

    def __init__(self, ascii_only: bool = False):
        super().__init__()
        self.ascii_only = ascii_only

    def format(self, record: logging.LogRecord) -> str:
        event = getattr(record, "worker_event", None)
        exc = self.formatException(record.exc_info) if record.exc_info else event_traceback(event)
        message, ascii_only = record.getMessage(), self.ascii_only
        return json_line(record.created, record.levelname, record.name, event, message, exc, ascii_only)


class LineHandler(logging.StreamHandler):
    """stderr's handler: a line through the logging module (a warning of the worker, another library's line),
    and the handler's flush (the logging module's at exit), write the job lines waiting first."""

    lines: EventLines | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.lines is not None and not self.lines.write_waiting():
            self.handleError(record)  # a broken or closed stream: said the logging module's way, never raised
            return
        super().emit(record)

    def flush(self) -> None:
        if self.lines is not None:
            self.lines.write_waiting()
        super().flush()


class EventLines:
    """Writes a worker event's line straight to the stream that ``configure_logging`` set up, the line the
    logging module would write, while nothing else could see or change it: no other handler or filter on
    the way, no level that drops it. A worker at the default level writes two lines a job, and the logging
    module's path (a ``LogRecord``, the caller's frame, the filters, a datetime) cost 18-19 µs a text line,
    16 % of a one-slot worker's busy slot thread; this costs 4.5 µs (JSON: 24-32 against 14). Anything it
    does not expect, and any error, is left to the logging module.

    INFO lines wait (``LINE_DELAY``, ``LINE_BATCH``) and a thread of their own writes them; a line of a
    higher level goes at once, after them."""

    def __init__(self, handler: LineHandler, json_format: bool):
        self.handler = handler
        self.formatter = handler.formatter
        self.json_format = json_format
        self.waiting: list[str] = []
        self.waiting_size = 0
        self.due = threading.Event()
        self.writer_pid: int | None = None  # the process whose thread writes the waiting lines
        handler.lines = self

    def write(self, level: int, event: WorkerEvent) -> bool:
        """Whether the line was written here, or is waiting to be (else the caller logs it the usual way)."""
        handler = self.handler
        if not self._alone(level):
            return False
        created, levelname = time.time(), logging.getLevelName(level)
        if self.json_format:
            tb, ascii_only = event_traceback(event), self.formatter.ascii_only
            line = json_line(created, levelname, logger.name, event, event.message, tb, ascii_only)
        else:
            line = text_line(created, levelname, event.message)
            if tb := event_traceback(event):
                line += "\n" + printable(tb, keep_newlines=True)  # a handler's text: no terminal escapes
        line += handler.terminator
        try:
            with handler.lock:
                if level > logging.INFO:
                    self._write(line)
                    return True
                if not self.waiting:
                    self._wake_writer()
                self.waiting.append(line)
                self.waiting_size += len(line)
                if self.waiting_size >= LINE_BATCH:
                    self._write("")
        except Exception:
            return False  # the logging module's path reports it (handleError)
        return True

    def write_waiting(self) -> bool:
        """Write the lines waiting; False if the stream refused them (a closed pipe: they are dropped)."""
        with self.handler.lock:
            if not self.waiting:
                return True
            try:
                self._write("")
            except Exception:
                self.forget_waiting()
                return False
            return True

    def _write(self, line: str) -> None:
        """The waiting lines and ``line``, in one write (the handler's lock held)."""
        text = "".join(self.waiting) + line
        self.waiting.clear()
        self.waiting_size = 0
        stream = self.handler.stream
        stream.write(text)
        stream.flush()

    def _wake_writer(self) -> None:
        if self.writer_pid != os.getpid():  # the first line, or the first of a forked worker process
            due = threading.Event()
            # Started first: a thread that could not start (a thread limit) leaves the next line to try again.
            threading.Thread(target=self._write_after_delay, args=(due,), name="log-lines", daemon=True).start()
            self.due, self.writer_pid = due, os.getpid()
        self.due.set()

    def _write_after_delay(self, due: threading.Event) -> None:
        while True:
            due.wait()
            time.sleep(LINE_DELAY)
            with self.handler.lock:
                due.clear()
                self.write_waiting()  # a closed or broken stream: the lines are dropped, as the logging module would

    def forget_waiting(self) -> None:
        """In a forked child: the parent's waiting lines are the parent's to write."""
        self.waiting.clear()
        self.waiting_size = 0

    def _alone(self, level: int) -> bool:
        """Whether the line would go to this handler only, unchanged: the level lets it through, the worker's
        logger has no filter (a logger's filters see only what is logged on it, not what its children
        pass up), and no logger on the way up has a handler but the root's one handler, this one."""
        if not logger.isEnabledFor(level) or logger.filters or logger.disabled:
            return False
        handler = self.handler
        if handler.level > level or handler.filters or handler.formatter is not self.formatter:
            return False
        current = logger
        while current.parent is not None:
            if current.handlers or not current.propagate:
                return False
            current = current.parent
        return current.handlers == [handler]  # the root's


_lines: EventLines | None = None


def write_waiting_lines() -> None:
    """Write the job lines waiting for the writer thread now (before a last line printed past the logger)."""
    if _lines is not None:
        _lines.write_waiting()


def _forget_waiting_in_child() -> None:
    if _lines is not None:
        _lines.forget_waiting()


os.register_at_fork(after_in_child=_forget_waiting_in_child)


def configure_logging(level: str, fmt: str) -> None:
    global _lines
    stream = LineHandler(sys.stderr)
    stream.setFormatter(JSONFormatter(not writes_unicode(sys.stderr)) if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [stream]
    root.setLevel(level.upper())
    # httpx (the --api client) logs every request at INFO; a polling worker would drown its job lines.
    logging.getLogger("httpx").setLevel(max(logging.WARNING, root.level))
    _lines = EventLines(stream, json_format=fmt == "json")


def event_level(kind: str) -> int:
    return EVENT_LEVELS.get(kind, logging.INFO)


def logged_kinds() -> list[str]:
    """The event kinds the log level lets through: a worker at ``--log-level warning`` builds no event per job."""
    return [kind for kind in EVENT_KINDS if logger.isEnabledFor(event_level(kind))]


def log_event(event: WorkerEvent) -> None:
    level = event_level(event.kind)
    if _lines is not None and _lines.write(level, event):
        return
    if event.traceback is None or not logger.isEnabledFor(level):
        logger.log(level, "%s", event.message, extra={"worker_event": event})
        return
    # A failed attempt's traceback as the record's exc_text, which logging's own formatters print under the line
    # (an embedded worker's program with logging.basicConfig showed the failed line alone); the worker's
    # formatters print it from the event instead (they do not call Formatter.format).
    pathname, lineno, func, _ = logger.findCaller()
    record = logger.makeRecord(
        logger.name, level, pathname, lineno, "%s", (event.message,), None, func, extra={"worker_event": event}
    )
    record.exc_text = event.traceback
    logger.handle(record)
