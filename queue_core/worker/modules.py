"""The ``--handlers`` modules of a worker (and of ``python -m queue_core schedules``): imported by name, and
when one cannot be, one error line that says what to fix, in place of the traceback that is not shown."""

from __future__ import annotations

import importlib
import os
import sys
import traceback

# Frames of ours and of the import machinery, skipped to find the line in the handler module that raised.
_NOT_THEIRS = (
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,
    os.path.dirname(importlib.__file__) + os.sep,
)


def import_handler_modules(names: list[str]) -> str | None:
    """Import each module (registering its handlers); the error line for the first that fails, else None."""
    # The script entry point does not put the current directory on sys.path the way ``python -m`` does.
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    for name in names:
        try:
            importlib.import_module(name)
        except (Exception, SystemExit) as exc:
            problem = _path_given(name) or f"{type(exc).__name__}: {exc}{raised_at(exc)}"
            return f"cannot import handler module {name!r}: {problem}"
    return None


def _path_given(name: str) -> str | None:
    """What to write instead of a file path given as a module (``tasks.py``, ``myapp/jobs``), else None."""
    if not (name.endswith(".py") or "/" in name or os.sep in name or name.startswith(".")):
        return None
    parts = [part for part in name.removesuffix(".py").replace(os.sep, "/").split("/") if part not in ("", ".")]
    if not parts or not all(part.isidentifier() for part in parts):
        return None
    return (
        "--handlers takes the module's name as an import statement writes it, not a file: "
        f"--handlers {'.'.join(parts)}, from the folder that holds it"
    )


def raised_at(exc: BaseException) -> str:
    """`` (at FILE, line N)``: the last line outside queue_core and the import machinery that ``exc`` passed
    through (the decorator whose options were refused, the line that raised), or "" when there is none (a
    SyntaxError's message says where already). The line stands in for the traceback, which is not shown."""
    found = None
    for frame, line in traceback.walk_tb(exc.__traceback__):
        path = frame.f_code.co_filename
        if not path.startswith(("<", *_NOT_THEIRS)):
            found = path, line
    if found is None:
        return ""
    path, line = found
    shown = os.path.relpath(path) if path.startswith(os.getcwd() + os.sep) else path
    return f" (at {shown}, line {line})"
