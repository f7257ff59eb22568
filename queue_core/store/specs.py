"""A new job's fields: create's arguments checked and put in their stored form, and what a repeated
idempotency key must match. No database here; ``JobRepository.create`` and ``create_many`` write the result."""

from __future__ import annotations

import json
from collections.abc import Mapping

from ..errors import IdempotencyConflict, ValidationError
from ..rules import DEFAULT_MAX_RETRIES, DEFAULT_QUEUE, PENDING
from ..validation import (
    encode_payload,
    validate_aware,
    validate_idempotency_key,
    validate_max_retries,
    validate_queue_name,
    validate_retry_backoff,
    validate_timeout,
    validate_type,
)
from .models import Job, parse_priority

CREATE_FIELDS = (
    "type",
    "payload",
    "priority",
    "max_retries",
    "idempotency_key",
    "run_at",
    "retry_backoff",
    "queue",
    "timeout",
)
CREATE_FIELD_SET = frozenset(CREATE_FIELDS)


def validated_fields(
    now, type, payload, priority, max_retries, idempotency_key, run_at, retry_backoff, queue=DEFAULT_QUEUE, timeout=None
) -> dict:
    """Every column a new job sets (store.statements.INSERT_COLUMNS), checked; ``now`` may be the server's clock."""
    return {
        "type": validate_type(type),
        "payload": encode_payload(payload),
        "priority": parse_priority(priority),
        "max_retries": validate_max_retries(max_retries),
        "idempotency_key": validate_idempotency_key(idempotency_key),
        "run_at": now if run_at is None else validate_aware("run_at", run_at),
        "retry_backoff": validate_retry_backoff(retry_backoff),
        "queue": validate_queue_name(queue),
        "timeout": validate_timeout(timeout),
        "status": PENDING,
        "retry_count": 0,
        "attempt": 0,
        "created_at": now,
        "updated_at": now,
    }


def same_job_or_conflict(existing: Job, fields: dict) -> Job:
    """The job a repeated idempotency key names, if the request is the same one; else IdempotencyConflict."""
    # Payloads compared as canonical JSON, not as Python values: 1 == 1.0 == True in Python, yet
    # {"amount": 1}, {"amount": 1.0} and {"amount": true} are different requests. Key order is not.
    new = json.loads(fields["payload"])
    same_place = existing.type == fields["type"] and existing.queue == fields["queue"]
    if not same_place or canonical(existing.payload) != canonical(new):
        raise IdempotencyConflict(fields["idempotency_key"], existing)
    return existing


def validated_spec(index: int, spec, now) -> dict:
    """``validated_fields`` of ``create_many``'s ``specs[index]``; a ValidationError names the spec."""
    # type() first: the Mapping ABC's isinstance is slow, and a batch is usually plain dicts.
    if type(spec) is not dict and not isinstance(spec, Mapping):
        raise ValidationError(f"specs[{index}]", f"must be a mapping of create()'s arguments, not {spec!r}")
    if not spec.keys() <= CREATE_FIELD_SET or "type" not in spec:
        unknown = sorted(map(str, spec.keys() - CREATE_FIELD_SET))
        what = f"unknown field(s) {', '.join(unknown)}" if unknown else "type is missing"
        raise ValidationError(f"specs[{index}]", f"{what}; a spec takes {', '.join(CREATE_FIELDS)}")
    try:
        return validated_fields(
            now,
            spec["type"],
            spec.get("payload"),
            spec.get("priority", 0),
            spec.get("max_retries", DEFAULT_MAX_RETRIES),
            spec.get("idempotency_key"),
            spec.get("run_at"),
            spec.get("retry_backoff"),
            spec.get("queue", DEFAULT_QUEUE),
            spec.get("timeout"),
        )
    except ValidationError as exc:
        raise ValidationError(f"specs[{index}].{exc.field}", exc.message) from None


def canonical(payload: dict) -> str:
    """One text per JSON value, types included: keys sorted, no spaces."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":"))


def reject_repeated_keys(rows: list[dict]) -> None:
    """A batch names each idempotency key once: which of two rows would the key's job be?"""
    first_use = {}
    for index, row in enumerate(rows):
        key = row["idempotency_key"]
        if key is None:
            continue
        if key in first_use:
            raise ValidationError(
                f"specs[{index}].idempotency_key", f"repeats the key of specs[{first_use[key]}]; one job per key"
            )
        first_use[key] = index
