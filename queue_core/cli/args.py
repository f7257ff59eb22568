"""The argument kit every entry point shares: the admin CLI, ``queue-server``, ``queue-worker`` and the console.

One parser class, one set of argument types and one way to print an error, so every command accepts,
refuses and reports the same way: one ``error: ...`` line, exit 2 for usage, 1 for a failed operation.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import re
import signal
import sys
from collections.abc import Callable
from typing import NoReturn
from urllib.parse import parse_qsl, urlencode, urlparse

import peewee as pw

from ..errors import DatabaseURLError, QueueError
from ..store.database import (
    BUSY_TIMEOUT_MS,
    DATABASE_ERRORS,
    default_url,
    driver_reason,
    open_database,
    without_password,
)
from ..store.postgres import refusal
from ..text import json_text
from ..validation import ASCII_INTEGER, MAX_SECONDS, validate_token

EXIT_USAGE = 2
EXIT_FAILURE = 1
INTERRUPTED = 128 + signal.SIGINT  # ctrl-C, as a shell reports it


def program_name(module: str, script: str) -> str:
    """How the user ran the program, for its usage and its errors' ``--help`` pointer: ``script`` when started
    as the installed script (``queue-worker``), else ``python -m module``."""
    return script if os.path.basename(sys.argv[0]) == script else f"python -m {module}"


class CLIArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors look like every other error of ours: one line, ``error: ...``, exit 2.

    (argparse's own starts with the program name and prints the whole usage first.) The program, a
    sub-command's included, is named at the end with where to read its usage.
    """

    def error(self, message):
        self.exit(EXIT_USAGE, f"error: {one_line(message)} (see {self.prog} --help)\n")

    def parse_args(self, args=None, namespace=None):
        # argparse reports a stray argument from the top parser, whose --help says nothing of the sub-command's
        # options (``show 1 2`` pointed at ``python -m queue_core --help``): the sub-command's parser says it.
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self.chosen_parser(parsed).error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def chosen_parser(self, parsed) -> argparse.ArgumentParser:
        """The parser of the sub-command ``parsed`` names (self when there is none)."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(parsed, action.dest, None) or "")
                if chosen is not None:
                    return chosen
        return self


def one_line(message: str) -> str:
    """The message with control characters escaped, so an error is always exactly one line."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)


def print_json(data, *, indent: int | None = None) -> None:
    """``data`` as JSON on stdout, escaped as stdout's encoding needs (``queue_core.text``)."""
    print(json_text(data, sys.stdout, indent=indent))


def exit_with(main: Callable[[], int]) -> NoReturn:
    """Run a program's ``main`` and exit with its code; what a shell does to a program ends quietly, as it
    does for any Unix tool: a reader that closed the pipe early (``... | head``) exits 141 with nothing more
    written, and ctrl-C before the program handles signals itself (while ``--handlers`` modules import) 130."""
    try:
        code = main()
        sys.stdout.flush()  # a closed pipe shows here, not at the interpreter's exit (where it is a traceback)
    except BrokenPipeError:
        # Nothing more can reach the reader; stdout is pointed at /dev/null so the exit's flush cannot fail too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 128 + signal.SIGPIPE
    except KeyboardInterrupt:
        print(file=sys.stderr)
        code = INTERRUPTED
    sys.exit(code)


def fail(message: str, code: int = EXIT_USAGE) -> int:
    print(f"error: {one_line(message)}", file=sys.stderr)
    return code


WHOLE_NUMBER = "a whole number (ASCII digits 0-9)"


def whole_number(text: str) -> int:
    """``text`` as an int if it is written in ASCII digits, else ValueError. ``int`` alone also takes
    full-width or other Unicode digits (``１``), ``_`` between digits (``1_000``), a ``+`` and spaces around:
    forms no id or count is written in, which a typo or a paste from a document would pass unnoticed."""
    if not ASCII_INTEGER.fullmatch(text):
        raise ValueError(f"{text!r} is not written in ASCII digits")
    return int(text)


def bounded_number(text: str, parse, low, high, what: str, range_what: str = ""):
    """``parse(text)`` if it lies in [low, high]; else an argparse error naming ``what`` was expected."""
    try:
        value = parse(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"{text!r} must be {range_what}from {low} to {high}")
    return value


# A number of seconds on a command line: ASCII digits, a fraction and an exponent allowed (``0.5``, ``1e3``).
ASCII_DECIMAL = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def decimal_number(text: str) -> float:
    """``text`` as a float if it is written in ASCII (digits, point, exponent), else ValueError: ``float``
    alone also reads full-width digits (``１``), ``1_0``, spaces around, ``inf`` and ``nan``, as ``whole_number``
    says of ``int``."""
    if not ASCII_DECIMAL.fullmatch(text):
        raise ValueError(f"{text!r} is not written in ASCII digits")
    return float(text)


def non_negative_seconds(text: str) -> float:
    return bounded_number(text, decimal_number, 0, MAX_SECONDS, "a number of seconds", "a number of seconds ")


def positive_seconds(text: str) -> float:
    try:
        value = decimal_number(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= MAX_SECONDS:  # NaN too
        # One message for 0 and -1 alike: "from 0 to ..." for -1 read as if 0 would do.
        raise argparse.ArgumentTypeError(f"{text!r} must be a number of seconds > 0, at most {MAX_SECONDS}")
    return value


def api_token(text: str) -> str:
    """A bearer token, refused here if an HTTP header cannot carry it (a non-ASCII character, a space)."""
    try:
        return validate_token("token", text)
    except QueueError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def open_for_command(url: str | None, *, create: bool = True, upgrade: bool = True) -> pw.Database:
    """``open_database``, with every way the open can fail as a ``QueueError`` for the one-line error:
    a file that is not SQLite (sqlite3's DatabaseError), a schema whose version it cannot read; ``create``
    and ``upgrade`` as ``open_database``'s."""
    try:
        return open_database(url, create=create, upgrade=upgrade)
    except QueueError:
        raise
    except (*DATABASE_ERRORS, ValueError) as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise DatabaseURLError(f"cannot open {without_password(url or default_url())}: {reason}") from exc


def _raised_saying(exc: BaseException, phrases: tuple[str, ...]) -> bool:
    """Whether ``exc``, or an error it was raised from, says one of ``phrases`` (the driver's words)."""
    seen: BaseException | None = exc
    while seen is not None and not any(phrase in str(seen) for phrase in phrases):
        seen = seen.__cause__
    return seen is not None


def readonly_database(exc: BaseException, url: str | None) -> str | None:
    """What to do when ``exc`` (or the error it was raised from) is SQLite's "attempt to write a readonly
    database", which names neither the file nor why; None for any other error."""
    if not _raised_saying(exc, ("readonly database",)):
        return None
    url = url or default_url()
    path = urlparse(url).path.removeprefix("/") or url
    return (
        f"cannot write {without_password(url)}: the file {path}, or the folder it is in (SQLite writes {path}-wal"
        " and -shm beside it), is read-only to this user; nothing was changed. Give the user write access to"
        " both, or run this as the user that owns them"
    )


def refused(exc: BaseException, url: str | None) -> str | None:
    """What to change when PostgreSQL refused the command in a way no retry mends (a read-only or unprivileged
    role, a statement timeout, no connection slot left: ``store.postgres.refusal``); None for any other error."""
    why = refusal(exc)
    if why is None:
        return None
    return f"{without_password(url or default_url())} refused the command ({driver_reason(exc)}): {why}"


# SQLite's words for a write lock another connection held past the busy timeout (SQLITE_BUSY, SQLITE_LOCKED).
SQLITE_LOCKED = ("database is locked", "database table is locked")


def locked_database(exc: BaseException, url: str | None) -> str | None:
    """What to do when ``exc`` (or the error it was raised from) is SQLite's "database is locked", which says
    neither why nor what to do; None for any other error."""
    if not _raised_saying(exc, SQLITE_LOCKED):
        return None
    url = url or default_url()
    parsed = urlparse(url)
    options = dict(parse_qsl(parsed.query))
    busy_ms = options.get("busy_timeout", str(BUSY_TIMEOUT_MS))
    waited = f"{int(busy_ms) / 1000:g} s" if busy_ms.isdigit() else f"{busy_ms} ms"
    longer = without_password(f"{url.split('?', 1)[0]}?{urlencode({**options, 'busy_timeout': '60000'})}")
    return (
        f"{without_password(url)} is locked: another process (a worker, the server, the console or another"
        f" command) held its write lock for longer than the busy timeout ({waited}); nothing was changed."
        f" Run the command again once that process is done, or let it wait longer: --db '{longer}'"
    )


def is_loopback(host: str) -> bool:
    """``host`` is this machine only (``localhost`` or a loopback address); any other name may resolve anywhere."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
