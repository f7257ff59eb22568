"""The job model: the guide's ``jobs`` table, kept verbatim, plus extension columns.

Models here are unbound definitions; ``bind_models(db)`` gives subclasses bound to one database, so a
process (or a test) can hold several databases without rebinding a global.
"""

from __future__ import annotations

import json
import re
import weakref
from datetime import UTC, datetime
from enum import IntEnum, StrEnum
from types import SimpleNamespace

import peewee as pw

from .. import rules
from ..errors import ValidationError

SQLITE_TIME_FORMAT = "%Y-%m-%d %H:%M:%S.%f"


class JobStatus(StrEnum):
    PENDING = rules.PENDING
    RUNNING = rules.RUNNING
    COMPLETED = rules.COMPLETED
    FAILED = rules.FAILED
    CANCELLED = rules.CANCELLED


class Priority(IntEnum):
    LOW = 0
    MEDIUM = 10
    HIGH = 20
    CRITICAL = 30


def priority_label(value: int) -> str:
    """The label of the highest tier at or below ``value`` (15 -> "medium"; below 0 -> "low")."""
    label = Priority.LOW
    for tier in Priority:
        if value >= tier:
            label = tier
    return label.name.lower()


PRIORITY_DIGITS = re.compile(r"[+-]?[0-9]+")


def parse_priority(value) -> int:
    """Accept a label ("high"), an int, or a string of digits; raise ValidationError otherwise."""
    if isinstance(value, bool):
        raise ValidationError("priority", "must be a label or an integer, not a boolean")
    if isinstance(value, int):
        if not -(2**31) <= value < 2**31:
            raise ValidationError("priority", f"{value} is out of range: an integer from {-(2**31)} to {2**31 - 1}")
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.upper() in Priority.__members__:
            return Priority[text.upper()].value
        try:
            # ASCII digits only: int() also takes "１" (full-width), "1_0": forms no priority is written in.
            number = int(text) if PRIORITY_DIGITS.fullmatch(text) else None
        except ValueError:  # more digits than int() converts
            number = None
        if number is not None:
            return parse_priority(number)  # its range checked as an int's (ValidationError is a ValueError)
    labels = ", ".join(p.name.lower() for p in Priority)
    raise ValidationError("priority", f"unknown priority {value!r}; use one of {labels} or an integer")


class UTCDateTimeField(pw.DateTimeField):
    """Aware UTC datetimes in Python; naive UTC in the database.

    On SQLite the text is fixed-width, so comparing text compares times.
    """

    # The last datetime converted and its stored form, per backend (a tuple, replaced whole: threads share
    # it): a statement often binds one time to several columns (a create's created_at, updated_at and
    # run_at), and converting it was 11 % of a create's profile, three times over. Holding the datetime
    # keeps it alive, so an identical object is the same time.
    _last: tuple = (None, None, None)

    def db_value(self, value):
        if value is None or not isinstance(value, datetime):
            return value
        sqlite = isinstance(self.model._meta.database, pw.SqliteDatabase)
        last = UTCDateTimeField._last
        if last[0] is value and last[1] is sqlite:
            return last[2]
        if value.tzinfo is None:
            raise ValidationError(self.name, "naive datetime; pass an aware datetime (e.g. in UTC)")
        naive = _naive(value if value.tzinfo is UTC else value.astimezone(UTC))
        # SQLITE_TIME_FORMAT, written by isoformat (several times faster than strftime on the hot path).
        stored = naive.isoformat(" ", "microseconds") if sqlite else naive
        UTCDateTimeField._last = (value, sqlite, stored)
        return stored

    def python_value(self, value):
        if isinstance(value, str):
            try:
                # Our own stored form ("2026-01-01 12:00:00.000000") is naive UTC: parsed with the offset
                # appended it is aware at once (0.23 us; parsing, then replace(tzinfo=UTC), took 1.46), and
                # every row read has three or four of these.
                return datetime.fromisoformat(value + "+00:00")
            except ValueError:
                pass  # another form, or one with its own offset: the general way below
        try:
            value = datetime.fromisoformat(value) if isinstance(value, str) else super().python_value(value)
        except ValueError:
            value = super().python_value(value)
        if isinstance(value, datetime):
            return _aware(value) if value.tzinfo is None else value.astimezone(UTC)
        return value


# datetime.replace(tzinfo=...) costs ~0.9 us on CPython 3.11, the constructor ~0.26: a worker converts
# times in and out at every statement.
def _naive(value: datetime) -> datetime:
    """A UTC datetime without its tzinfo."""
    return datetime(value.year, value.month, value.day, value.hour, value.minute, value.second, value.microsecond)


def _aware(value: datetime) -> datetime:
    """A naive datetime read as UTC."""
    return datetime(value.year, value.month, value.day, value.hour, value.minute, value.second, value.microsecond, UTC)


class JSONTextField(pw.TextField):
    """JSON stored as text (the guide's ``payload`` column); dicts in Python."""

    def db_value(self, value):
        if value is None or isinstance(value, str):
            return value
        return json.dumps(value, separators=(",", ":"), allow_nan=False)

    def python_value(self, value):
        if value is None or not isinstance(value, str):
            return value
        return decoded_json(value)


def decoded_json(text: str):
    """Stored JSON text as Python values. Most payloads (and results) are empty: ``{}`` is a new dict
    without the decoder, at every row a worker reads and every job a create returns."""
    return {} if text == "{}" else json.loads(text)


STATUSES = frozenset(status.value for status in JobStatus)


def _as_literal(value):
    """A known status as a SQL literal (safe to inline: one of five fixed words); anything else as it is."""
    return pw.SQL(f"'{value}'") if isinstance(value, str) and value in STATUSES else value


class StatusField(pw.CharField):
    """``Job.status``: compared with a known status, it writes the status as a literal, not a bound value,
    and a comparison that excludes pending jobs says so.

    The claim's indexes are partial (pending jobs only), and a planner uses a partial index only when it can
    prove the query's WHERE implies the index's: PostgreSQL's generic (prepared) plans cannot see a bound
    value at all, and SQLite, which can, then re-prepares the statement at every execution that binds a
    value it compared with the index's WHERE (a one-slot worker's complete + claim, whose "status =
    'running'" was bound, ran at half speed with schema v10's partial index). A literal is in the SQL
    text: the plan is made once and proved once. Statuses are five fixed words, never user text.

    The (status, updated_at) index holds every job but the pending ones (schema v11). PostgreSQL proves
    that ``status = 'running'`` implies its ``status <> 'pending'``; SQLite (3.40) uses a partial index only
    when the query's WHERE has the index's own term, so ``== RUNNING`` is written ``status = 'running' AND
    status <> 'pending'``, and ``in_`` of statuses that are not pending likewise: the same rows, since a
    status is never NULL.
    """

    __hash__ = pw.CharField.__hash__  # defining __eq__ would otherwise drop it (fields are dict keys)

    def __eq__(self, rhs):
        same = super().__eq__(_as_literal(rhs))
        return same & self.not_pending() if isinstance(rhs, str) and rhs in CLAIMED_STATUSES else same

    def __ne__(self, rhs):
        return super().__ne__(_as_literal(rhs))

    def in_(self, rhs):
        literals = _literals(rhs)
        among = super().in_(literals)
        return among & self.not_pending() if literals is not rhs and CLAIMED_STATUSES.issuperset(rhs) else among

    def not_in(self, rhs):
        return super().not_in(_literals(rhs))

    def checked(self, statuses) -> pw.Expression:
        """The status among ``statuses``, compared through an expression no index covers (``status || ''``):
        for rows a statement finds by their ids and whose status it only checks. A planner's statistics can
        make a status look rarer than one id (PostgreSQL's, taken while nearly no job was running, made a
        generic plan of an ack walk every running entry of the status index, and a bulk batch read the whole
        index on a table with no statistics yet); the expression leaves the primary key the only way in."""
        return self.concat(pw.SQL("''")).in_(_literals(list(statuses)))

    def not_pending(self) -> pw.Expression:
        """``status <> 'pending'``: the WHERE of the (status, updated_at) index, as that index's SQL writes it."""
        return super().__ne__(_as_literal(rules.PENDING))


# The statuses a job has once claimed: rows of the (status, updated_at) index (schema v11).
CLAIMED_STATUSES = STATUSES - {rules.PENDING}


def _literals(values):
    if isinstance(values, list | tuple | set | frozenset) and values and all(v in STATUSES for v in values):
        return [_as_literal(v) for v in sorted(values)]  # sorted: one SQL text per set, whatever its order
    return values


class BaseModel(pw.Model):
    class Meta:
        legacy_table_names = False


class Job(BaseModel):
    # The guide's columns, names and meaning unchanged. 64-bit ids (schema version 15 on PostgreSQL, whose
    # SERIAL ran out at 2**31 jobs ever created: a week at a few thousand jobs a second; SQLite's are 64-bit).
    id = pw.BigAutoField()
    type = pw.CharField(max_length=255)
    payload = JSONTextField(default="{}")
    priority = pw.IntegerField(default=0)
    status = StatusField(max_length=16, default=JobStatus.PENDING.value)
    retry_count = pw.IntegerField(default=0)
    max_retries = pw.IntegerField(default=rules.DEFAULT_MAX_RETRIES)
    # UNIQUE where set: schema v4's partial index (queue_core.store.schema), so keyless jobs add no index entry.
    idempotency_key = pw.CharField(max_length=255, null=True)
    claimed_at = UTCDateTimeField(null=True)
    worker_id = pw.CharField(max_length=255, null=True)
    error = pw.TextField(null=True)
    created_at = UTCDateTimeField()
    updated_at = UTCDateTimeField()
    # Extensions (schema version 1).
    run_at = UTCDateTimeField()  # claimable from this time on: delayed jobs and retry back-off
    heartbeat_at = UTCDateTimeField(null=True)  # refreshed by the worker while the job runs
    retry_backoff = pw.DoubleField(null=True)  # base delay in seconds; None = repository default, 0 = at once
    # Schema version 5: claims so far, 1-based once claimed. Every claim adds one and nothing resets it (an
    # operator retry resets retry_count, not this), so it is the fencing token an ack names: a hung run's
    # late ack carries an older number than any later claim of the same job.
    attempt = pw.IntegerField(default=0, constraints=[pw.SQL("DEFAULT 0")])
    # Schema version 6.
    queue = pw.CharField(max_length=255, default=rules.DEFAULT_QUEUE, constraints=[pw.SQL("DEFAULT 'default'")])
    cancel_requested_at = UTCDateTimeField(null=True)  # an operator asked to cancel it while it ran
    result = JSONTextField(null=True)  # a handler's return value, as JSON
    timeout = pw.DoubleField(null=True)  # seconds an attempt may run; None: no limit (64-bit from v15)

    class Meta:
        table_name = "jobs"

    @property
    def priority_label(self) -> str:
        return priority_label(self.priority)

    @property
    def cancel_requested(self) -> bool:
        """Whether an operator asked to cancel this job while it ran (its handler should stop)."""
        return self.cancel_requested_at is not None

    def to_dict(self) -> dict:
        """Plain, JSON-ready data: every column, payload as an object, times as ISO 8601 UTC."""
        data = {}
        for name in self._meta.sorted_field_names:
            value = getattr(self, name)
            data[name] = value.isoformat() if isinstance(value, datetime) else value
        data["priority_label"] = self.priority_label
        data["cancel_requested"] = self.cancel_requested
        return data


class JobError(BaseModel):
    """One failed attempt of a job: every attempt's error, kept for operators."""

    id = pw.BigAutoField()
    job_id = pw.BigIntegerField()
    attempt = pw.IntegerField()
    worker_id = pw.CharField(max_length=255, null=True)
    error = pw.TextField()
    created_at = UTCDateTimeField()
    traceback = pw.TextField(null=True)  # the handler's frames, as Python prints them; None if none (v16)

    class Meta:
        table_name = "job_errors"
        indexes = ((("job_id", "attempt"), False),)

    def to_dict(self) -> dict:
        return {
            "attempt": self.attempt,
            "worker_id": self.worker_id,
            "error": self.error,
            "traceback": self.traceback,
            "created_at": self.created_at.isoformat(),
        }


class SchemaMeta(BaseModel):
    """Key/value facts about the database itself, e.g. the schema version."""

    key = pw.CharField(max_length=64, primary_key=True)
    value = pw.TextField()

    class Meta:
        table_name = "queue_meta"


class QueueRecord(BaseModel):
    """A queue's operator state: a paused queue's jobs are never claimed (schema version 6)."""

    name = pw.CharField(max_length=255, primary_key=True)
    paused = pw.BooleanField(default=False)
    updated_at = UTCDateTimeField()

    class Meta:
        table_name = "queues"


class WorkerRecord(BaseModel):
    """One worker process in the registry, refreshed by its heartbeat (schema version 6)."""

    id = pw.CharField(max_length=255, primary_key=True)
    host = pw.CharField(max_length=255)
    pid = pw.IntegerField()
    queues = pw.TextField()  # a JSON list of queue names, or "*" for every queue
    concurrency = pw.IntegerField()
    stale_after = pw.DoubleField()  # seconds without a sign of life after which it counts as lost
    started_at = UTCDateTimeField()
    last_seen_at = UTCDateTimeField()
    stopped_at = UTCDateTimeField(null=True)
    # 64-bit (schema version 14): a worker's counts since its start; PostgreSQL's INTEGER refused a heartbeat
    # past 2**31 completions (a few days of a busy worker), which SQLite, whose integers are 64-bit, took.
    running = pw.BigIntegerField(default=0)
    completed = pw.BigIntegerField(default=0)
    failed = pw.BigIntegerField(default=0)
    # A JSON list of the job types it has handlers for (schema version 13); NULL: not said (a worker from
    # before, or a caller that did not): "why is this job waiting?" then assumes it serves every type.
    types = pw.TextField(null=True)

    class Meta:
        table_name = "workers"


MODELS = (Job, JobError, SchemaMeta, QueueRecord, WorkerRecord)


def is_postgres(db: pw.Database) -> bool:
    return isinstance(db, pw.PostgresqlDatabase)


_bound: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def bind_models(db: pw.Database) -> SimpleNamespace:
    """Subclasses of every model bound to ``db`` (cached), as ``.Job``, ``.JobError``, ``.SchemaMeta``,
    ``.QueueRecord``, ``.WorkerRecord``."""
    models = _bound.get(db)
    if models is None:
        bound = {}
        for model in MODELS:
            meta = type("Meta", (), {"database": db, "table_name": model._meta.table_name})
            bound[model.__name__] = type(model.__name__, (model,), {"Meta": meta, "__module__": __name__})
        models = _bound[db] = SimpleNamespace(**bound)
    return models
