"""Validation of every input a job takes: bad input raises ValidationError naming the field.

The repository validates before it writes anything, so a refused input leaves the database untouched.
"""

from __future__ import annotations

import json
import operator
import re
import sys
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

from .errors import ValidationError
from .store.models import JobStatus

MAX_RETRIES_LIMIT = 1000
MAX_ERROR_CHARS = 10_000
MAX_TRACEBACK_CHARS = 16_000  # a failed attempt's traceback as stored: its end kept (validate_traceback)
MAX_TEXT_CHARS = 255
MAX_LIST_LIMIT = 1000
# How deep a payload's objects and arrays may nest, the payload object itself being level 1. JSON
# decoders recurse (Python's gives up near 1,000 levels, after such a row was stored), and no job needs
# more; a deeper payload is refused before anything is written, so it can never become a poison job.
MAX_PAYLOAD_DEPTH = 64
# Names one claim's types (or queues) may hold. A worker claims with every type it has a handler for, so
# this is also the most handlers one worker may have (the worker refuses more at start). Each name is a
# bound parameter, a list padded to the next power of two (1,024) and named twice in an idle claim: ~4,100
# parameters with as many queues, far below SQLite's 32,766 and PostgreSQL's 65,535, and 1,024 names of
# 255 characters fit the API's 1 MiB body. Measured at 1,000 types behind 20,000 jobs of others: each job a
# claim reads costs what it does with 4 types (PostgreSQL hashes a long list: PostgresStatements.type_in);
# an idle worker's look seeks each type in the type index, ~1 ms a claim on either backend.
MAX_TYPES = 1000
# The longest span of seconds any option takes (a timeout, a back-off, a delay): a century, more than anyone
# means. Past it, a deadline leaves the platform's time range, and PostgreSQL's REAL column overflows.
MAX_SECONDS = 100 * 365 * 24 * 3600
# The largest value of an integer column (PostgreSQL's INTEGER is 32 bits): the registry's pid, concurrency
# and counters. Past it PostgreSQL refuses the row where SQLite stores it.
MAX_INT32 = 2**31 - 1
# The largest value of a 64-bit integer column (job ids) or a LIMIT, on both backends.
MAX_INT64 = 2**63 - 1


def is_text(value: str) -> bool:
    """Whether ``value`` can be stored and sent as UTF-8 (no lone surrogates, e.g. from os.fsdecode)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def validate_type(value) -> str:
    return _validate_name("type", value, "send-invoice")


def validate_queue_name(value, field: str = "queue") -> str:
    """A queue's name: the rules of a type name (non-empty, at most 255 printable characters)."""
    return _validate_name(field, value, "mail")


# An id or a count written as text (a command line, a query string): ASCII digits, a leading "-" let through so
# that a negative number is refused by its range, not its form. int() alone also reads "１" (full-width),
# "٣", "1_000", "+1" and " 1": forms no id or count is written in.
ASCII_INTEGER = re.compile(r"-?[0-9]+")


def validate_schedule(value) -> str:
    """A periodic schedule's name, as ``create_tick`` records its ticks: the rules of a type name."""
    return _validate_name("schedule", value, "nightly-report")


def validate_new_queue_name(value, field: str = "queue") -> str:
    """The queue of a new job: ``validate_queue_name``, and a name a worker's ``--queues NAME=N,...`` can
    name. A queue called "a,b", "x=2" or " mail" took jobs that no ``--queues`` worker would ever claim
    (the option splits at "," and "=" and strips spaces), only a worker of every queue. Claims, pause and
    resume still take any name, so jobs written before this rule stay reachable."""
    name = validate_queue_name(value, field)
    if "," in name or "=" in name or name != name.strip():
        raise ValidationError(
            field,
            f"{name!r} cannot be named by a worker's --queues NAME=N,...: "
            "use no ',' or '=' and no space at either end, e.g. 'mail'",
        )
    return name


def _validate_name(field: str, value, example: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(field, f"must be a non-empty string, e.g. {example!r}")
    return validate_printable(field, value)


def validate_printable(field: str, value: str) -> str:
    """A name shown in tables, logs and the console: at most MAX_TEXT_CHARS characters, none that would act on
    a terminal (a control character, an escape, a line break). Each of the two said as itself: a five-character
    type with a control character in it was told "must be at most 255 printable characters"."""
    if len(value) > MAX_TEXT_CHARS:
        raise ValidationError(field, f"must be at most {MAX_TEXT_CHARS} characters, got {len(value):,}")
    if not value.isprintable():
        position, char = next((i, c) for i, c in enumerate(value) if not c.isprintable())
        raise ValidationError(
            field,
            f"holds the non-printable character {char!r} at position {position + 1}: use printable characters only "
            "(no control characters, tabs or line breaks)",
        )
    return value


def validate_queue_names(value) -> list[str] | None:
    """A claim's ``queues``: None (every queue) or a list of at most ``MAX_TYPES`` queue names."""
    return _validate_names("queues", "queue", value, validate_queue_name)


def validate_timeout(value) -> float | None:
    """Seconds an attempt may run; None: no limit."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= MAX_SECONDS:  # NaN too
        raise ValidationError(
            "timeout",
            f"must be a number of seconds above 0 (at most {MAX_SECONDS}), or left out for no limit; got {value!r}",
        )
    return float(value)


def validate_seconds(field: str, value) -> float:
    """A non-negative, finite number of seconds up to ``MAX_SECONDS`` (a worker's ``stale_after``)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_SECONDS:  # NaN too
        raise ValidationError(field, f"must be a number of seconds from 0 to {MAX_SECONDS}")
    return float(value)


def validate_job_id(value, field: str = "job_id") -> int:
    """A job id as the repository's methods and the HTTP client take it: a whole number a 64-bit id column can
    hold (one below 1 names no job), as a plain int. A float, a bool or text is refused (peewee bound 1.9 and
    True as job 1; ``int()`` read "7"); an integer type that says it is one (numpy's int64) is its int."""
    try:
        number = None if isinstance(value, bool) else operator.index(value)
    except TypeError:
        number = None
    if number is None or number > MAX_INT64:
        raise ValidationError(field, f"a job id is a whole number of at most {MAX_INT64}, such as 42, not {value!r}")
    return number


def validate_job_ids(values, field: str = "job_ids") -> list[int]:
    return [validate_job_id(value, field) for value in values]


def validate_count(field: str, value, most: int = MAX_INT64) -> int:
    """A counter: a non-negative integer, at most ``most``."""
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= most:
        raise ValidationError(field, f"must be an integer from 0 to {most}")
    return value


def validate_types(value) -> list[str] | None:
    """A claim's ``types``: None (any type) or a list of at most ``MAX_TYPES`` type names."""
    return _validate_names("types", "type", value, validate_type)


# Tuples of names that passed, per field: a worker claims with the same tuple of types before every job.
_CHECKED_NAMES: dict[tuple[str, tuple], list[str]] = {}
_CHECKED_NAMES_KEPT = 64


def _validate_names(field: str, noun: str, value, validate_one) -> list[str] | None:
    """None, or a list of at most ``MAX_TYPES`` names each passing ``validate_one``; errors name ``field``."""
    if value is None:
        return None
    if type(value) is tuple:
        try:
            return list(_CHECKED_NAMES[field, value])
        except KeyError:
            names = _check_names(field, noun, value, validate_one)
            if len(_CHECKED_NAMES) >= _CHECKED_NAMES_KEPT:
                _CHECKED_NAMES.clear()
            _CHECKED_NAMES[field, value] = names
            return list(names)
        except TypeError:  # an unhashable item: not a name, and the check below says so
            pass
    return _check_names(field, noun, value, validate_one)


def _check_names(field: str, noun: str, value, validate_one) -> list[str]:
    if isinstance(value, str | bytes):
        raise ValidationError(field, f"must be a list of {noun} names, not the single string {value!r}")
    try:
        names = list(value)
    except TypeError:
        raise ValidationError(field, f"must be a list of {noun} names, not {type(value).__name__}") from None
    if len(names) > MAX_TYPES:
        raise ValidationError(field, f"names {len(names)} {field}; a claim takes at most {MAX_TYPES}")
    for index, name in enumerate(names):
        try:
            validate_one(name)
        except ValidationError as exc:
            raise ValidationError(field, f"item {index}: {exc.message}") from None
    return names


# json.dumps with these arguments builds a new encoder per call (a third of a small payload's encoding).
_encode_json = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


def encode_payload(value) -> str:
    """The payload as the JSON text that is stored; ValidationError for anything that could not be read back."""
    if value is None or (type(value) is dict and not value):
        return "{}"
    if not isinstance(value, dict):
        raise ValidationError("payload", f"must be a JSON object, got {type(value).__name__}")
    try:
        text = _encode_json(value)
    except RecursionError:
        raise _too_deep() from None
    except (TypeError, ValueError) as exc:
        raise ValidationError("payload", f"must be JSON-serialisable: {exc}") from None
    # Nesting needs an opening bracket per level: few brackets in all (nearly every payload) cannot nest
    # too deep, and two counts in C cost far less than walking the value.
    if text.count("{") + text.count("[") > MAX_PAYLOAD_DEPTH:
        validate_payload_depth(value)
    return text


def validate_payload_depth(value, limit: int = MAX_PAYLOAD_DEPTH):
    """``value`` (a decoded payload) unchanged, or ValidationError if its containers nest deeper than ``limit``.

    Iterative, so any depth is measured without recursion; for callers that decode JSON themselves
    (see ``parse_payload``) and for the repository's ``encode_payload``.
    """
    containers = (dict, list, tuple)
    stack = [(value, 1)] if isinstance(value, containers) else []
    while stack:
        node, depth = stack.pop()
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, containers):
                if depth >= limit:
                    raise _too_deep(limit)
                stack.append((child, depth + 1))
    return value


def parse_payload(text: str) -> dict:
    """A payload given as JSON text (CLI ``--payload``, a file): a JSON object nested at most ``MAX_PAYLOAD_DEPTH``.

    Every problem is a ValidationError naming ``payload``, never a RecursionError.
    """
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise _too_deep() from None
    except ValueError as exc:
        if "digits" in str(exc) and not isinstance(exc, json.JSONDecodeError):
            # Python's limit on the digits of an integer read from text; its message says to call a function.
            too_long = f"has a number of more than {sys.get_int_max_str_digits()} digits; write it as a string"
            raise ValidationError("payload", too_long) from None
        raise ValidationError("payload", f"is not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ValidationError("payload", 'must be a JSON object, e.g. {"to": "ann@example.com"}')
    return validate_payload_depth(value)


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _too_deep(limit: int = MAX_PAYLOAD_DEPTH) -> ValidationError:
    return ValidationError("payload", f"nests objects and arrays more than {limit} levels deep; flatten it")


def validate_max_retries(value) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_RETRIES_LIMIT:
        raise ValidationError("max_retries", f"must be an integer from 0 to {MAX_RETRIES_LIMIT}, got {value!r}")
    return value


def validate_idempotency_key(value) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ValidationError("idempotency_key", f"must be a non-empty string of at most {MAX_TEXT_CHARS} characters")
    # Printable, as a name: NUL was refused (PostgreSQL's text cannot hold it) while \x01, a tab or a line break
    # was stored, and a key is sent back in headers and shown in the CLI and the console. A lone surrogate too.
    return validate_printable("idempotency_key", value)


def validate_retry_backoff(value) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_SECONDS:  # NaN too
        raise ValidationError(
            "retry_backoff", f"must be a number of seconds from 0 (retries at once) to {MAX_SECONDS}; got {value!r}"
        )
    return float(value)


def validate_aware(field: str, value) -> datetime:
    if not isinstance(value, datetime):
        raise ValidationError(field, "must be a datetime")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValidationError(field, "naive datetime; pass an aware one, e.g. datetime.now(UTC)")
    try:
        value = value.astimezone(UTC)
    except OverflowError:
        value = None
    # Four-digit years only: SQLite compares times as fixed-width text, so year 5 would sort after 2026.
    if value is None or value.year < 1000:
        raise ValidationError(field, "must be between the years 1000 and 9999 in UTC")
    return value


def validate_worker_id(value) -> str:
    # Printable: an id is shown in the CLI's tables, the console and logs, where a control character (an
    # escape sequence, a line break) would act on the operator's terminal instead of being read.
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(
            "worker_id", f"must be a non-empty string of at most {MAX_TEXT_CHARS} printable characters"
        )
    return validate_printable("worker_id", value)


def validate_token(field: str, value) -> str:
    """A bearer token: printable ASCII without spaces, which every HTTP client can send as a header as is."""
    if not isinstance(value, str) or not value or not all("!" <= c <= "~" for c in value):
        raise ValidationError(field, "must be printable ASCII characters without spaces (a bearer token)")
    return value


def validate_api_url(field: str, value) -> str:
    """The base URL of the HTTP API: http(s), a host, and a port in range if one is given."""
    try:
        parts = urlsplit(value) if isinstance(value, str) else None
        port_ok = parts is not None and (parts.port is None or parts.port > 0)  # .port raises past 65535
    except ValueError as exc:
        raise ValidationError(field, f"{value!r} is not a valid URL ({exc})") from None
    if not port_ok or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError(field, f"{value!r} is not an http:// or https:// URL, e.g. http://127.0.0.1:8000")
    return value


def validate_error(value) -> str:
    if not isinstance(value, str):
        raise ValidationError("error", "must be a string")
    value = _storable(value)
    if len(value) > MAX_ERROR_CHARS:
        value = value[:MAX_ERROR_CHARS] + " ... (truncated)"
    return value or "(no error message)"


def validate_traceback(value) -> str | None:
    """A failed attempt's traceback, or None. One longer than ``MAX_TRACEBACK_CHARS`` keeps its first line
    and its end, the innermost frames and the exception, which say most; the middle is cut, whole lines."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationError("traceback", "must be a string, or null for none")
    value = _storable(value)
    if len(value) > MAX_TRACEBACK_CHARS:
        head = value.split("\n", 1)[0][:200]
        tail = value[len(value) - (MAX_TRACEBACK_CHARS - len(head) - 48) :]
        tail = tail[tail.find("\n") + 1 :] or tail  # from a line's start
        cut = len(value) - len(head) - len(tail) - value.startswith(head + "\n")
        value = f"{head}\n  ... ({cut:,} characters cut)\n{tail}"
    return value or None


def _storable(value: str) -> str:
    """``value`` as both backends store it alike."""
    if not is_text(value):
        # A handler's message may hold undecodable bytes (os.fsdecode): keep them, readable, rather than fail.
        value = value.encode("utf-8", "backslashreplace").decode("utf-8")
    # PostgreSQL text cannot hold NUL (fail() would raise DataError and leave the job running): show it
    # escaped, on both backends alike. Escaped before truncating, so the length bound holds.
    return value.replace("\x00", "\\x00")


def validate_status(value) -> str:
    try:
        return JobStatus(value).value
    except ValueError:
        raise ValidationError("status", f"unknown status {value!r}; use one of {', '.join(JobStatus)}") from None


def validate_positive_int(field: str, value, most: int = MAX_INT64) -> int:
    """A positive integer up to ``most``: by default what a 64-bit column or a LIMIT holds (past it SQLite raised
    OverflowError and PostgreSQL DataError, neither naming the argument)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValidationError(field, "must be a positive integer")
    if value > most:
        raise ValidationError(field, f"must be a positive integer of at most {most}")
    return value


def validate_age(field: str, value) -> timedelta:
    if not isinstance(value, timedelta) or value.total_seconds() < 0:
        raise ValidationError(field, "must be a non-negative timedelta")
    return value


def validate_limit(value) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_LIST_LIMIT:
        raise ValidationError("limit", f"must be an integer from 1 to {MAX_LIST_LIMIT}")
    return value
