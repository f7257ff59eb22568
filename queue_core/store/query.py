"""The operator's job query: ``type:send-invoice status:failed payload.invoice:78 "card declined"``.

``parse_query`` turns what an operator typed into a ``JobQuery`` (pure: no database); ``JobQuery.condition(repo)``
turns that into one peewee condition on the repository's ``Job``. Every value an operator typed is a bound
parameter; the only SQL text here is fixed, so a query can never run SQL of its own. Terms combine with AND.

Qualifiers: ``id:N``, ``type:T``, ``queue:Q``, ``status:S``, ``worker:W``, ``error:TEXT`` (the latest error
contains it), ``payload.KEY:VALUE`` (a top-level payload field equals VALUE, compared as text). Anything else
is free text, matched against the payload and the latest error. A value with spaces goes in double quotes:
``error:"connection refused"``. Text matches ignore case.
"""

from __future__ import annotations

import json
import operator
import re
from dataclasses import dataclass
from functools import reduce

import peewee as pw

from ..errors import ValidationError
from .models import JobStatus, is_postgres

QUALIFIERS = ("id", "type", "queue", "status", "worker", "error")
MAX_QUERY_CHARS = 1000
MAX_TERMS = 20
# A payload key is a plain name: the key is bound as a parameter anyway, this keeps the JSON path simple.
PAYLOAD_KEY = re.compile(r"[A-Za-z0-9_\-]{1,64}")
QUALIFIER_ONLY = re.compile(r"[A-Za-z_][\w.\-]*:")
TOKEN = re.compile(r'\s*(?:([A-Za-z_][\w.\-]*):)?(?:"((?:[^"\\]|\\.)*)"|(\S+))')


class QueryError(ValidationError):
    """What is wrong with a query, said so an operator can fix it (shown under the query line)."""

    def __init__(self, message: str):
        super().__init__("query", message)


@dataclass(frozen=True)
class Term:
    field: str  # a qualifier, "payload" (with key) or "text"
    value: str
    key: str | None = None  # payload.KEY


@dataclass(frozen=True)
class JobQuery:
    text: str
    terms: tuple[Term, ...]

    def __bool__(self) -> bool:
        return bool(self.terms)

    def condition(self, repo):
        """One condition on ``repo.Job``: every term, AND-ed. True for an empty query."""
        postgres = is_postgres(repo.db)
        conditions = [_term_condition(repo.Job, term, postgres) for term in self.terms]
        return reduce(operator.and_, conditions) if conditions else pw.SQL("1 = 1")


def parse_query(text: str) -> JobQuery:
    """The terms of ``text``; QueryError says what is wrong (unknown qualifier, bad id, unknown status...)."""
    if not isinstance(text, str):
        raise QueryError("a query is text")
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(f"a query is at most {MAX_QUERY_CHARS} characters")
    if not all(char.isprintable() or char in " \t" for char in text):
        # A NUL or a control character is a paste gone wrong; PostgreSQL refuses NUL in a bound text value.
        raise QueryError("a query is printable text (it has a control character)")
    terms, position, text = [], 0, text.strip()
    while position < len(text):
        match = TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise QueryError(f"cannot read the query from character {position + 1}: {text[position:][:20]!r}")
        qualifier, quoted, bare = match.groups()
        value = _unescape(quoted) if quoted is not None else bare
        if quoted is None and value.startswith('"'):
            raise QueryError(f"a quote is not closed: {value!r}")
        if qualifier is None and quoted is None and QUALIFIER_ONLY.fullmatch(value):
            qualifier, value = value[:-1], ""  # "type:" with nothing after it
        terms.append(_term(qualifier, value))
        position = match.end()
        if len(terms) > MAX_TERMS:
            raise QueryError(f"a query has at most {MAX_TERMS} terms")
    return JobQuery(text, tuple(terms))


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def _term(qualifier: str | None, value: str) -> Term:
    if qualifier is None:
        return Term("text", value)
    if not value:
        raise QueryError(f"{qualifier}: needs a value, e.g. {qualifier}:something")
    if qualifier.startswith("payload."):
        key = qualifier[len("payload.") :]
        if not PAYLOAD_KEY.fullmatch(key):
            raise QueryError(f"payload.{key}: a payload key is letters, digits, '_' or '-' (at most 64)")
        return Term("payload", value, key)
    if qualifier not in QUALIFIERS:
        known = ", ".join(f"{name}:" for name in QUALIFIERS)
        raise QueryError(f"unknown qualifier {qualifier}:; use {known} or payload.KEY:")
    if qualifier == "id" and not (value.isascii() and value.isdigit()):
        raise QueryError(f"id: takes a job id (digits), not {value!r}")
    if qualifier == "id" and len(value) > 18:  # beyond a 64-bit id: no job has it
        raise QueryError(f"id: a job id has at most 18 digits, not {len(value)} ({value[:20]}…)")
    if qualifier == "status" and value not in {status.value for status in JobStatus}:
        raise QueryError(f"status: is one of {', '.join(status.value for status in JobStatus)}, not {value!r}")
    return Term(qualifier, value)


def _term_condition(Job, term: Term, postgres: bool):
    if term.field == "id":
        return Job.id == int(term.value)
    if term.field == "worker":
        return Job.worker_id == term.value
    if term.field in ("type", "queue", "status"):
        return getattr(Job, term.field) == term.value
    if term.field == "error":
        return _contains(Job.error, term.value)
    if term.field == "payload":
        return _payload_field(Job, term.key, postgres) == term.value
    # Payloads are stored with JSON's escapes (``Zoë`` as ``Zo\\u00eb``, a quote as ``\\"``): free text with
    # accents, another script or a quote also looks for its escaped forms (see _forms; an escape's hex digits are
    # lowercase). Always the same SQL, a form bound as NULL where it repeats another (the test of NULL comes
    # first: no row is lowercased for it).
    value = term.value
    plain = _forms(value)
    escaped = [_ascii_lower(json.dumps(form)[1:-1]) for form in (value.lower(), value, value.upper())]
    first, *others = _distinct([*plain, *escaped])
    condition = _like(Job.payload, _value(first)) | _like(Job.error, _value(first))
    for index, form in enumerate(others, start=1):
        columns = (Job.payload, Job.error) if index < len(plain) else (Job.payload,)
        condition |= reduce(operator.or_, [_like_if_given(column, form) for column in columns])
    return condition


def _contains(column, value: str):
    """``column`` contains ``value``, ignoring case; ``%``, ``_`` and ``\\`` in the value match themselves."""
    first, *others = _distinct(_forms(value))
    return reduce(operator.or_, [_like(column, _value(first)), *(_like_if_given(column, form) for form in others)])


def _forms(value: str) -> list[str]:
    """``value`` as a ``LOWER()``ed column may hold it, ignoring case: lowered; and as typed and upper-cased, with
    only their ASCII letters lowered. ``LOWER()`` may leave other letters as they are (SQLite's lowers ASCII only,
    PostgreSQL's as its collation says): "ÉCHEC" stored was found by no search there, not even one typed so."""
    return [value.lower(), _ascii_lower(value), _ascii_lower(value.upper())]


def _ascii_lower(value: str) -> str:
    return value.translate(_ASCII_LOWER)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _distinct(forms: list[str]) -> list[str | None]:
    """``forms`` with each one that repeats an earlier one as None."""
    return [form if form not in forms[:index] else None for index, form in enumerate(forms)]


def _value(form: str | None) -> pw.Value:
    """A form's LIKE pattern as a bound value (NULL for None)."""
    return pw.Value(None if form is None else _pattern(form))


def _like_if_given(column, form: str | None):
    """``column`` contains ``form``, or false where it is None (the test of NULL first: no row is lowercased)."""
    pattern = _value(form)
    return pw.NodeList((pw.Cast(pattern, "TEXT"), pw.SQL("IS NOT NULL AND"), _like(column, pattern)))


def _pattern(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _like(column, pattern: pw.Value):
    return pw.NodeList((pw.fn.LOWER(column), pw.SQL("LIKE"), pattern, pw.SQL("ESCAPE '\\'")))


# A JSON escape PostgreSQL's ->> refuses, after a backslash not itself escaped: \u0000, a high surrogate not
# followed by a low one, a low one not preceded by a high one (json.dumps writes these escapes in lower case).
_HIGH, _LOW = r"\\ud[89ab][0-9a-f]{2}", r"\\ud[c-f][0-9a-f]{2}"
UNREADABLE_ESCAPE = rf"(?<!\\)((?:\\\\)*)(?:\\u0000|{_HIGH}(?!{_LOW})|(?<!{_HIGH}){_LOW})"


def _payload_field(Job, key: str, postgres: bool):
    """A top-level payload field as text (the key bound too): JSON functions differ per backend."""
    if postgres:
        # Read as json, not jsonb: json's ->> gives a number, object or array as its stored text, as SQLite's ->
        # does, where jsonb rewrote it (1e+20 as 100000000000000000000, -0.0 as 0.0, {"b":1,"a":2} as
        # {"a": 2, "b": 1}), and the same query found other jobs on the two backends.
        # Both refuse the escape \u0000 and that of a lone surrogate (\ud800 with no low one after it, \udc00
        # with no high one before), which a stored payload may hold (JSON allows them; the text column keeps
        # them): one such row failed every payload search. Each such escape (a backslash not itself escaped,
        # then u and the code) is read as U+FFFD, which matches nothing an operator types; a pair (an emoji)
        # stays, and "\\u0000" written out in a string is left alone. Rows without "\u0000" or "\ud" (nearly
        # all) are cast as they are.
        fixed = pw.fn.REGEXP_REPLACE(Job.payload, pw.Value(UNREADABLE_ESCAPE), pw.Value(r"\1\\ufffd"), pw.Value("g"))
        odd = (pw.fn.STRPOS(Job.payload, pw.Value("\\u0000")) > 0) | (pw.fn.STRPOS(Job.payload, pw.Value("\\ud")) > 0)
        text = pw.Case(None, [(odd, fixed)], Job.payload)
        return pw.NodeList((pw.NodeList((text, pw.SQL("::json")), glue=""), pw.SQL("->>"), pw.Value(key)))
    # The text PostgreSQL's ->> gives: a string's value, NULL for a JSON null, any other value as its JSON text
    # (SQLite's ->). json_extract made true 1 and false 0, and an integer past 64 bits a float ("1.0e+19").
    path = pw.Value(f'$."{key}"')
    kind = pw.fn.json_type(Job.payload, path)
    as_json = pw.NodeList((Job.payload, pw.SQL("->"), path))
    return pw.Case(kind, [("text", pw.fn.json_extract(Job.payload, path)), ("null", None)], as_json)
