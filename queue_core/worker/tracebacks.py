"""A failed attempt's traceback, kept with its error and shown by the ``failed`` log line: the handler's
frames only, none of the worker's around them.

Formatted once per failed attempt (``Outcomes.fail``): a job that succeeds pays nothing for it.
"""

from __future__ import annotations

import traceback
from types import TracebackType

from .events import LOG_ERROR_CHARS, clipped
from .handlers import call_handler
from .runner import AttemptTimedOut, HandlerExited, _attempt

# The worker's frames that call a handler: what the traceback shows starts below the last of them (the
# handler's own frames; a queue call the handler made stays, it is below).
_CALLERS = frozenset({call_handler.__code__, _attempt.__code__})


def _handler_frames(tb: TracebackType | None) -> TracebackType | None:
    """The traceback from the handler's frame on, or None if it never reached the handler (our own error)."""
    below = None
    while tb is not None:
        if tb.tb_frame.f_code in _CALLERS:
            below = tb.tb_next
        tb = tb.tb_next
    return below


def _cancelled_in_handler(exc: BaseException) -> BaseException | None:
    """A coroutine's timeout: the ``CancelledError`` its deadline raised in the handler (where it was waiting)."""
    seen: set[int] = set()
    pending = [exc.__cause__, exc.__context__]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if type(current).__name__ == "CancelledError" and _handler_frames(current.__traceback__) is not None:
            return current
        pending += [current.__cause__, current.__context__]
    return None


def _lines(chunks) -> str:
    """Each chunk (a frame, an exception's line) at most ``LOG_ERROR_CHARS``: a 200,000-character message
    makes no 200,000-character log record, and the frames stay."""
    out = []
    for chunk in chunks:
        text = chunk.rstrip("\n")
        out.append(clipped(text) + "\n" if len(text) > LOG_ERROR_CHARS else chunk)
    return "".join(out).rstrip("\n")


def handler_traceback(exc: BaseException | None) -> str | None:
    """The traceback of the handler that raised ``exc``, as Python prints it; for a timeout, where the
    handler was when its deadline cancelled it, ending with the timeout. None when no frame of the handler
    is in it: a result that could not be stored, a plain handler's timeout (the slot's own waiting)."""
    if exc is None:
        return None
    if isinstance(exc, HandlerExited) and exc.__cause__ is not None:
        exc = exc.__cause__  # an async handler's sys.exit(): its own exit, not our carrier
    if isinstance(exc, AttemptTimedOut):
        cancelled = _cancelled_in_handler(exc)
        if cancelled is None:
            return None
        stack = traceback.StackSummary.extract(traceback.walk_tb(_handler_frames(cancelled.__traceback__)))
        head = ["Traceback (most recent call last):\n", *stack.format()]
        return _lines([*head, f"{exception_line(exc)}: the handler was waiting here when it was cancelled\n"])
    frames = _handler_frames(exc.__traceback__)
    if frames is None:
        return None
    return _lines(traceback.TracebackException(type(exc), exc, frames).format())


def exception_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
