"""Request and response bodies of the HTTP API, as pydantic models: they type the wire and document it.

They check shapes only (a string here, an integer there, no unknown fields); the rules (which
priorities exist, how many retries are allowed) stay in ``JobRepository``, which raises a
``ValidationError`` naming the field. The ranges below only *document* those rules in the OpenAPI
schema, using the repository's own constants.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
)
from pydantic_core import PydanticCustomError

from ..errors import ValidationError
from ..rules import DEFAULT_MAX_RETRIES
from ..store.bulk import MAX_SELECTION, VIEW_STATUSES
from ..store.models import JobStatus, Priority
from ..store.query import MAX_QUERY_CHARS
from ..store.repository import PRUNE_BATCH
from ..validation import (
    ASCII_INTEGER,
    MAX_INT32,
    MAX_LIST_LIMIT,
    MAX_RETRIES_LIMIT,
    MAX_SECONDS,
    MAX_TEXT_CHARS,
    MAX_TYPES,
    validate_queue_name,
    validate_type,
    validate_worker_id,
)
from ..wire import MAX_CLAIM_BATCH
from .problems import Problem

# What pydantic reads as a Unix time when it comes as text ("1700000000"), with the same guess at milliseconds.
NUMBER_TEXT = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")
OFFSET_EXAMPLE = "e.g. 2026-01-02T03:00:00Z"


def _unix_seconds(value):
    """A number for a time is Unix time in seconds, always, given as a number or as text: pydantic reads one
    above 2e10 as milliseconds (year 3000 in seconds became 1971-01-12, a job due at once). ISO 8601 text
    needs an offset, said in the terms of the wire (the repository's words are Python's)."""
    if isinstance(value, str):
        if NUMBER_TEXT.fullmatch(value):
            value = float(value)
        elif _naive_iso(value):
            raise PydanticCustomError("naive_time", f"has no UTC offset: add one, {OFFSET_EXAMPLE} or +02:00")
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value, UTC)
        except (OverflowError, OSError, ValueError):
            raise PydanticCustomError(
                "unix_time", "a number here is a Unix time in seconds up to the year 9999; or give ISO 8601"
            ) from None
    return value


def _naive_iso(text: str) -> bool:
    try:
        return datetime.fromisoformat(text).utcoffset() is None
    except ValueError:
        return False  # not ISO 8601 as Python reads it: pydantic's own parse says what is wrong


RunAt = Annotated[datetime, BeforeValidator(_unix_seconds)]


def _iso_time(value):
    """ISO 8601 text with an offset, read by Python (pydantic alone also reads a number, or text of digits,
    as Unix time, which the schema's ``date-time`` does not promise)."""
    try:
        parsed = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        parsed = None
    if parsed is None or parsed.utcoffset() is None:
        raise PydanticCustomError("iso_time", f"must be ISO 8601 text with an offset, {OFFSET_EXAMPLE}")
    return parsed


IsoTime = Annotated[datetime, BeforeValidator(_iso_time)]


def _ascii_digits(value):
    """A number in a query string is ASCII digits: pydantic alone reads ``1_000`` as 1000, and ``+1``,
    `` 1`` and ``1.0`` as 1 (a path's id is digits already: its route matches nothing else)."""
    if isinstance(value, str) and not ASCII_INTEGER.fullmatch(value):
        raise PydanticCustomError("ascii_integer", "must be a whole number in ASCII digits 0-9, e.g. 42")
    return value


QueryInt = Annotated[int, BeforeValidator(_ascii_digits)]

# Ids, attempts and counts must fit the database's 64-bit integers; larger ones would not even reach a query.
INT64_MAX = 2**63 - 1
JobId = Annotated[int, Field(strict=True, ge=1, le=INT64_MAX)]
Attempt = Annotated[int, Field(strict=True, ge=1, le=INT64_MAX, description="1-based attempt the worker holds")]
MAX_HEARTBEAT_IDS = 1000
# A claim filters on at most this many types: each is a bind parameter and a compiled statement of its own
# (PostgreSQL refuses more than 65,535 parameters, which would otherwise surface as a 503).
MAX_CLAIM_TYPES = MAX_TYPES  # the repository's own bound, checked here first so it is a 422 per field


def checked_by(rule):
    """A pydantic check that applies the repository's own ``rule``, so the API refuses text (a lone surrogate,
    a control character, an over-long name) with a 422 naming the field before any query is built."""

    def check(value):
        try:
            return rule(value)
        except ValidationError as exc:
            raise PydanticCustomError("invalid_text", exc.message) from None

    return AfterValidator(check)


WorkerId = Annotated[
    StrictStr,
    checked_by(validate_worker_id),
    Field(json_schema_extra={"minLength": 1, "maxLength": MAX_TEXT_CHARS}),
]
TypeName = Annotated[
    StrictStr, checked_by(validate_type), Field(json_schema_extra={"minLength": 1, "maxLength": MAX_TEXT_CHARS})
]
QueueName = Annotated[
    StrictStr,
    checked_by(validate_queue_name),
    Field(json_schema_extra={"minLength": 1, "maxLength": MAX_TEXT_CHARS}),
]
ClaimQueues = Annotated[
    list[QueueName],
    Field(max_length=MAX_CLAIM_TYPES, description=f"only claim jobs of these queues (at most {MAX_CLAIM_TYPES})"),
]
Count = Annotated[int, Field(strict=True, ge=0, le=INT64_MAX)]
ClaimTypes = Annotated[
    list[TypeName],
    Field(max_length=MAX_CLAIM_TYPES, description=f"only claim jobs of these types (at most {MAX_CLAIM_TYPES})"),
]


def _priority_shape(value):
    """A priority is a label or an integer; anything else is named as the JSON it came as: the repository's
    "unknown priority None" spoke Python to a client that sent null."""
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    sent = json.dumps(value)
    sent = sent if len(sent) <= 40 else f"{sent[:37]}..."
    labels = ", ".join(p.name.lower() for p in Priority)
    raise PydanticCustomError("priority", f"must be one of {labels} or an integer, not {sent}")


class Body(BaseModel):
    # A misspelt field ("priorty") is an error, not a silently ignored default.
    model_config = ConfigDict(extra="forbid")


class CreateJob(Body):
    type: StrictStr = Field(description="job type, e.g. 'send-invoice'", json_schema_extra={"minLength": 1})
    payload: dict[str, Any] | None = Field(default=None, description="any JSON object; default {}")
    # Any: parse_priority owns what a priority may be (the shape is checked here); the schema below documents it.
    priority: Annotated[Any, BeforeValidator(_priority_shape)] = Field(
        default=0,
        description="low, medium, high, critical, or a 32-bit integer (higher runs first)",
        json_schema_extra={
            "anyOf": [
                {"type": "integer", "minimum": -(2**31), "maximum": 2**31 - 1},
                {"type": "string", "enum": [p.name.lower() for p in Priority]},
            ]
        },
    )
    max_retries: StrictInt = Field(
        default=DEFAULT_MAX_RETRIES, json_schema_extra={"minimum": 0, "maximum": MAX_RETRIES_LIMIT}
    )
    idempotency_key: StrictStr | None = Field(
        default=None,
        description="same key again returns the existing job (200); also accepted as an Idempotency-Key header",
        json_schema_extra={"maxLength": MAX_TEXT_CHARS},
    )
    run_at: RunAt | None = Field(
        default=None,
        description="not claimable before this time (ISO 8601 with offset, or Unix time in seconds)",
        # The number documented too: a fuzzer sending one was told by the schema to expect a refusal.
        json_schema_extra={"anyOf": [{"type": "string", "format": "date-time"}, {"type": "number"}, {"type": "null"}]},
    )
    retry_backoff: StrictFloat | None = Field(
        default=None, description="base back-off in seconds between retries; 0 retries at once"
    )
    queue: StrictStr = Field(
        default="default", description="the queue it waits in", json_schema_extra={"minLength": 1, "maxLength": 255}
    )
    timeout: StrictFloat | None = Field(
        default=None,
        description="seconds an attempt may run; null: no limit",
        json_schema_extra={"exclusiveMinimum": 0},
    )


class CreateTick(CreateJob):
    """A periodic schedule's job for one tick: ``CreateJob`` with the tick, and the tick's idempotency key."""

    tick: IsoTime = Field(description="the schedule's tick this job is for (ISO 8601 with an offset)")
    idempotency_key: StrictStr = Field(
        description="the tick's key (a scheduler's is periodic:{name}:{tick}); the same key again returns that job",
        json_schema_extra={"minLength": 1, "maxLength": MAX_TEXT_CHARS},
    )


class ClaimJob(Body):
    worker_id: WorkerId
    types: ClaimTypes | None = None
    queues: ClaimQueues | None = None


class ClaimMany(ClaimJob):
    n: Annotated[int, Field(strict=True, ge=1, le=MAX_CLAIM_BATCH, description="claim up to this many jobs")]


class Ack(Body):
    """Who finishes a job: with ``worker_id`` (and ``attempt``) only the current holder can."""

    worker_id: WorkerId | None = None
    attempt: Attempt | None = None


class CompleteJob(Ack):
    result: Any = Field(
        default=None, description="the handler's return value, any JSON (at most 64 KB as JSON); null: none"
    )


class FailJob(Ack):
    error: StrictStr = Field(description="why the attempt failed; kept in the job's error history")
    traceback: StrictStr | None = Field(
        None,
        description="the handler's traceback, as Python prints it; kept with the error (a long one's first line"
        " and its last 16,000 characters)",
    )
    final: StrictBool = Field(
        False,
        description="fail the job for good, retries left or not (the handler returned a value that cannot be"
        " stored as its result: a retry would run it again)",
    )


class Heartbeat(Body):
    worker_id: WorkerId
    job_ids: list[JobId] = Field(max_length=MAX_HEARTBEAT_IDS)
    attempts: list[Attempt] | None = Field(
        None,
        max_length=MAX_HEARTBEAT_IDS,
        description="one per job id: a job counts as held only at that attempt (the answer then has attempts too)",
    )


class Reap(Body):
    older_than_seconds: StrictFloat = Field(
        description="take back running jobs whose heartbeat (or claim) is older than this",
        json_schema_extra={"minimum": 0},
    )


class CompleteAndClaim(Body):
    """A worker finishing the attempt it holds and asking for its next job in the same round trip."""

    worker_id: WorkerId
    attempt: Attempt
    types: ClaimTypes | None = None
    result: Any = Field(default=None, description="the completed job's result, as for complete")
    queues: ClaimQueues | None = None


class HeldAttempt(Body):
    """The worker and the attempt it holds (a cancel acknowledgement names both)."""

    worker_id: WorkerId
    attempt: Attempt


class CancelRequests(Body):
    worker_id: WorkerId
    job_ids: list[JobId] = Field(max_length=MAX_HEARTBEAT_IDS)


class CancelRequested(BaseModel):
    ids: list[int] = Field(description="of the ids sent, the running jobs of this worker an operator asked to cancel")


class RegisterWorker(Body):
    host: StrictStr = Field(json_schema_extra={"maxLength": MAX_TEXT_CHARS})
    pid: Annotated[int, Field(strict=True, ge=0, le=MAX_INT32)]
    queues: list[QueueName] | Literal["*"] | None = Field(
        default=None, description=f'queue names (at most {MAX_TYPES}, as a claim); "*" or null: all'
    )
    concurrency: Annotated[int, Field(strict=True, ge=1, le=MAX_INT32)]
    stale_after: StrictFloat = Field(
        description="seconds without a heartbeat after which it counts as lost",
        json_schema_extra={"minimum": 0, "maximum": MAX_SECONDS},
    )
    types: list[TypeName] | None = Field(
        default=None,
        description=f"the job types it has handlers for (at most {MAX_TYPES}); null: not said (taken as every type)",
    )


class WorkerSeen(Body):
    running: Count
    completed: Count
    failed: Count


class Prune(Body):
    older_than_seconds: StrictFloat = Field(
        description="delete completed and failed jobs finished longer ago than this", json_schema_extra={"minimum": 0}
    )
    # At most the repository's own batch: the server bounds how long one transaction holds its locks.
    batch: Annotated[int, Field(strict=True, ge=1, le=PRUNE_BATCH, description="jobs per transaction")] = PRUNE_BATCH
    max_batches: Annotated[int, Field(strict=True, ge=1, le=INT64_MAX)] | None = Field(
        default=None, description="stop after this many transactions; null: until nothing is left"
    )


class BulkRequest(Body):
    query: StrictStr = Field(
        default="",
        description='the operator\'s job query, e.g. "status:failed type:send-invoice" (see README)',
        json_schema_extra={"maxLength": MAX_QUERY_CHARS},
    )
    status: Literal[VIEW_STATUSES] | None = Field(  # type: ignore[valid-type]
        default=None, description="only jobs in this status (scheduled: pending with a future run_at)"
    )
    ids: Annotated[list[JobId], Field(max_length=MAX_SELECTION)] | None = Field(
        default=None, description="only these jobs (a selection); null: every job the query matches"
    )
    dry_run: StrictBool = Field(default=False, description="count the jobs it would touch; change none")


class BulkResult(BaseModel):
    action: Literal["retry", "cancel", "delete"]
    query: str
    description: str = Field(description='what was planned, in words: "3 failed jobs matching type:x"')
    dry_run: bool
    planned: int = Field(description="jobs the action would touch when it was planned")
    changed: int = Field(description="jobs it changed (0 for a dry run)")
    skipped: int = Field(description="planned jobs that changed state meanwhile: left alone")


class JobOut(BaseModel):
    """A job: every column of the ``jobs`` table, ``payload`` decoded, plus ``priority_label``."""

    id: int
    type: str
    payload: dict[str, Any]
    priority: int
    priority_label: Literal["low", "medium", "high", "critical"]
    status: JobStatus
    retry_count: int
    max_retries: int
    idempotency_key: str | None
    claimed_at: datetime | None
    worker_id: str | None
    error: str | None
    created_at: datetime
    updated_at: datetime
    run_at: datetime
    heartbeat_at: datetime | None
    retry_backoff: float | None
    attempt: int = Field(description="claims so far: the fencing token acks name; never reset")
    queue: str
    cancel_requested_at: datetime | None = Field(description="when an operator asked to cancel it while it ran")
    cancel_requested: bool
    result: Any = Field(default=None, description="the handler's return value (JSON), if it kept one")
    timeout: float | None = Field(default=None, description="seconds an attempt may run; null: no limit")


class AttemptError(BaseModel):
    attempt: int
    worker_id: str | None
    error: str
    created_at: datetime


class JobDetail(JobOut):
    errors: list[AttemptError] = Field(description="every failed attempt, oldest first")


class JobPage(BaseModel):
    jobs: list[JobOut]
    next_after: int | None = Field(description="pass as ?after= for the next page; null when this is the last")


class JobBatch(BaseModel):
    jobs: list[JobOut]


class HeartbeatResult(BaseModel):
    held: list[int] = Field(description="the ids this worker still holds; a missing one was lost")
    attempts: list[int] | None = Field(
        None, description="with attempts in the request: the attempt each id of held is held at, in the same order"
    )


class HeldClaims(BaseModel):
    held: list[int] = Field(description="the ids of the running jobs the worker holds, in order")
    attempts: list[int] = Field(description="the attempt each id of held is held at, in the same order")


class ReapResult(BaseModel):
    reaped: int


class StatisticsResult(BaseModel):
    analyzed: bool = Field(description="true if the jobs table's planner statistics were stale and were refreshed")


class CompletedAndClaimed(BaseModel):
    completed: JobOut | None = Field(description="the job, completed; null if the completion was refused")
    claimed: JobOut | None = Field(description="the next job, now running for worker_id; null if none is due")
    refused: Problem | None = Field(
        description="null if the job was completed; else why not, as POST /jobs/{id}/complete would have answered: "
        "status 404 (type urn:queue-core:problem:job-not-found) for an unknown id, 409 (job-not-held) for a job "
        "not running or held by another worker or attempt"
    )


class PruneResult(BaseModel):
    pruned: int


class Stats(BaseModel):
    counts: dict[str, int]
    per_minute_last_5m: dict[str, float]


class QueueOut(BaseModel):
    name: str
    paused: bool
    counts: dict[str, int] = Field(description="jobs per status")
    latency: float | None = Field(description="seconds since its oldest due pending job became due; null if none")


class QueueList(BaseModel):
    queues: list[QueueOut]


class WorkerOut(BaseModel):
    id: str
    host: str
    pid: int
    queues: list[str] | Literal["*"]
    concurrency: int
    stale_after: float
    started_at: datetime
    last_seen_at: datetime
    stopped_at: datetime | None
    running: int
    completed: int
    failed: int
    state: Literal["running", "stopped", "lost"]
    silent_for: float = Field(description="seconds since it was last seen")
    types: list[str] | None = Field(description="the job types it has handlers for; null: not recorded")


class WorkerList(BaseModel):
    workers: list[WorkerOut]


class Health(BaseModel):
    status: Literal["ok"]


LIST_LIMIT_DOC = {"minimum": 1, "maximum": MAX_LIST_LIMIT}
