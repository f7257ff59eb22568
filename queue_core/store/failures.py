"""Failed jobs grouped by cause: ``error_signature`` turns an error into its cause, ``JobRepository``'s
``failure_groups`` counts the failed jobs per cause.

"card 4242 declined (request 9f2c...)" and "card 1881 declined (request 77ab...)" are one cause: the
signature keeps an error's first line with the values that differ per job (numbers, uuids, hex ids,
quoted strings) replaced by placeholders. An operator retries a cause, not a job.

The grouping reads each distinct (type, error prefix) once, counted by the database, and merges those
into signatures here: a million failures of one cause are one row to read.
"""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass
from datetime import datetime

import peewee as pw

from ..rules import FAILED
from ..validation import validate_positive_int
from .query import JobQuery, parse_query

SIGNATURE_CHARS = 200  # of the first line: what tells causes apart; the rest is detail
READ_CHARS = 1000  # of the first line: a longer one is cut before the patterns run
ERROR_PREFIX_CHARS = 1000  # read of each error: enough for any first line we keep
NO_ERROR = "(no error recorded)"

# Order matters: the wider patterns first, so a uuid is not read as hex pieces and numbers.
_PATTERNS = (
    (re.compile(r'"(?:[^"\\]|\\.)*"'), '"…"'),
    # A quote opens after a non-word character and closes before one: "can't connect to 'db1'" keeps "can't".
    (re.compile(r"(?<!\w)'(?:[^'\\]|\\.)*'(?!\w)"), "'…'"),
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), "<uuid>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    # Hex ids (hashes, request ids): 7+ hex digits holding a digit and a letter, so a plain word stays.
    (re.compile(r"\b(?=[0-9a-fA-F]*[0-9])(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{7,}\b"), "<hex>"),
    # Every other number, also one glued to a word or a unit: job42, worker-7, 30.5s, 12:30:00.
    (re.compile(r"\d+(?:[.,:]\d+)*"), "<n>"),
)


def error_signature(error: str | None) -> str:
    """The cause of ``error``: its first non-empty line, values that differ per job replaced by placeholders.

    Pure and idempotent: the signature of a signature is itself.
    """
    if not error or not error.strip():
        return NO_ERROR
    line = _first_line(error, READ_CHARS)
    for pattern, placeholder in _PATTERNS:
        line = pattern.sub(placeholder, line)
    # Cut after the placeholders, which may lengthen it: cutting first would make a signature's own
    # signature shorter than itself.
    return " ".join(line.split())[:SIGNATURE_CHARS].rstrip()


@dataclass(frozen=True)
class FailureGroup:
    """Failed jobs sharing one cause: how many, their job types, when the first and the last failed."""

    signature: str
    count: int
    types: tuple[str, ...]
    first_seen: datetime
    last_seen: datetime
    example: str  # one real error's first line, for the operator to read

    def to_dict(self) -> dict:
        data = dict(self.__dict__)
        data["types"] = list(self.types)
        data["first_seen"], data["last_seen"] = self.first_seen.isoformat(), self.last_seen.isoformat()
        return data


class FailureGroups:
    """``failure_groups`` and ``failure_group_ids`` (see ``JobRepository``)."""

    def failure_groups(self, query: str | JobQuery = "", *, limit: int = 200) -> list[FailureGroup]:
        """Failed jobs matching ``query``, grouped by ``error_signature``: the biggest groups first."""
        validate_positive_int("limit", limit)
        Job = self.Job
        prefix = _error_prefix(Job)
        rows = (
            Job.select(Job.type, prefix, pw.fn.COUNT(Job.id), pw.fn.MIN(Job.updated_at), pw.fn.MAX(Job.updated_at))
            .where(self._failed_matching(query))
            .group_by(Job.type, prefix)
        )
        merged: dict[str, dict] = {}
        convert = Job.updated_at.python_value
        for job_type, error, count, first, last in self.db.execute_sql(*rows.sql()).fetchall():
            first, last = convert(first), convert(last)
            signature = error_signature(error)
            group = merged.setdefault(
                signature,
                {"count": 0, "types": set(), "first": first, "last": last, "example": _first_line(error)},
            )
            group["count"] += count
            group["types"].add(job_type)
            group["first"], group["last"] = min(group["first"], first), max(group["last"], last)
        groups = [
            FailureGroup(sig, g["count"], tuple(sorted(g["types"])), g["first"], g["last"], g["example"])
            for sig, g in merged.items()
        ]
        groups.sort(key=lambda group: (-group.count, -group.last_seen.timestamp(), group.signature))
        return groups[:limit]

    def failure_group_ids(self, signature: str, query: str | JobQuery = "") -> array:
        """The ids (ascending, ``array('q')``) of the failed jobs matching ``query`` whose error has ``signature``."""
        Job = self.Job
        prefix = _error_prefix(Job)
        rows = Job.select(Job.id, prefix).where(self._failed_matching(query)).order_by(Job.id)
        signatures: dict[str | None, str] = {}  # most errors repeat: sign each distinct one once
        ids = array("q")
        for job_id, error in self.db.execute_sql(*rows.sql()).fetchall():
            if error not in signatures:
                signatures[error] = error_signature(error)
            if signatures[error] == signature:
                ids.append(job_id)
        return ids

    def _failed_matching(self, query: str | JobQuery):
        parsed = query if isinstance(query, JobQuery) else parse_query(query)
        return (self.Job.status == FAILED) & parsed.condition(self)


def _first_line(error: str | None, chars: int = SIGNATURE_CHARS) -> str:
    if not error or not error.strip():
        return NO_ERROR
    return next(line for line in error.splitlines() if line.strip()).strip()[:chars]


def _error_prefix(Job):
    # Literal numbers, not bound ones: PostgreSQL sees two parameters as two expressions, so the
    # SELECT's SUBSTR would not match the GROUP BY's.
    return pw.fn.SUBSTR(Job.error, pw.SQL("1"), pw.SQL(str(ERROR_PREFIX_CHARS)))
