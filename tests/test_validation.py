"""Bad input raises a ValidationError that names the field, and writes nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from queue_core.errors import QueueError, ValidationError
from queue_core.store.models import parse_priority, priority_label

BAD_CREATES = [
    ({"type": ""}, "type"),
    ({"type": "   "}, "type"),
    ({"type": 42}, "type"),
    ({"type": None}, "type"),
    ({"type": "x" * 256}, "type"),
    ({"type": "bad\ntype"}, "type"),
    ({"type": "t", "payload": [1, 2]}, "payload"),
    ({"type": "t", "payload": "text"}, "payload"),
    ({"type": "t", "payload": {"when": datetime(2026, 1, 1)}}, "payload"),
    ({"type": "t", "payload": {"x": float("nan")}}, "payload"),
    ({"type": "t", "payload": {"obj": object()}}, "payload"),
    ({"type": "t", "priority": "urgent"}, "priority"),
    ({"type": "t", "priority": True}, "priority"),
    ({"type": "t", "priority": 1.5}, "priority"),
    ({"type": "t", "priority": 2**40}, "priority"),
    ({"type": "t", "max_retries": -1}, "max_retries"),
    ({"type": "t", "max_retries": "3"}, "max_retries"),
    ({"type": "t", "max_retries": 2.0}, "max_retries"),
    ({"type": "t", "idempotency_key": ""}, "idempotency_key"),
    ({"type": "t", "idempotency_key": 5}, "idempotency_key"),
    ({"type": "t", "run_at": datetime(2026, 1, 1)}, "run_at"),
    ({"type": "t", "run_at": "2026-01-01"}, "run_at"),
    # Out of range once converted to UTC, or a year SQLite's text order would misplace.
    ({"type": "t", "run_at": datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-5)))}, "run_at"),
    ({"type": "t", "run_at": datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5)))}, "run_at"),
    ({"type": "t", "run_at": datetime(5, 1, 1, tzinfo=UTC)}, "run_at"),
    ({"type": "t", "retry_backoff": -1}, "retry_backoff"),
    ({"type": "t", "retry_backoff": float("inf")}, "retry_backoff"),
]


@pytest.mark.parametrize(("kwargs", "field"), BAD_CREATES)
def test_bad_create_names_the_field_and_writes_nothing(repo, kwargs, field):
    with pytest.raises(ValidationError) as info:
        repo.create(**kwargs)
    assert info.value.field == field
    assert isinstance(info.value, QueueError)
    assert field in str(info.value)
    assert sum(repo.counts().values()) == 0


def test_deeply_nested_payload_is_refused_not_crashing(repo):
    payload = {}
    node = payload
    for _ in range(100_000):
        node["x"] = {}
        node = node["x"]
    with pytest.raises(ValidationError) as info:
        repo.create("t", payload)
    assert info.value.field == "payload"


def test_odd_unicode_payload_round_trips(repo):
    payload = {"emoji": "💥", "rtl": "שלום", "zero": "a\u0000b", "surrogate": "\ud800", "ключ": ["é", "\u200b"]}
    job, _ = repo.create("t", payload)
    assert repo.find_by_id(job.id).payload == payload


def test_bad_claim_and_list_arguments(repo):
    with pytest.raises(ValidationError):
        repo.claim("")
    with pytest.raises(ValidationError):
        repo.list(status="done")
    with pytest.raises(ValidationError):
        repo.list(limit=0)
    with pytest.raises(ValidationError):
        repo.claim_many("w", 0)


@pytest.mark.parametrize(
    ("value", "expected"),
    [("low", 0), ("Medium", 10), ("HIGH", 20), ("critical", 30), (15, 15), ("25", 25), (-5, -5)],
)
def test_parse_priority(value, expected):
    assert parse_priority(value) == expected


@pytest.mark.parametrize(
    ("value", "label"),
    [(-3, "low"), (0, "low"), (9, "low"), (10, "medium"), (15, "medium"), (20, "high"), (99, "critical")],
)
def test_priority_label_for_any_int(value, label):
    assert priority_label(value) == label


def test_lone_surrogates_are_refused_in_text_columns_and_kept_readable_in_errors(repo):
    with pytest.raises(ValidationError) as info:  # a column of text, unlike a payload's escaped JSON
        repo.create("t", idempotency_key="k\ud800")
    assert info.value.field == "idempotency_key"
    with pytest.raises(ValidationError):
        repo.claim("w\udcff")
    job, _ = repo.create("t", {"emoji": "\U0001f600"})  # a surrogate pair in JSON's escapes: fine
    assert repo.find_by_id(job.id).payload == {"emoji": "\U0001f600"}
    repo.claim("w")
    failed = repo.fail(job.id, "cannot open b\udcff.txt")  # os.fsdecode of an undecodable file name
    assert failed.error == "cannot open b\\udcff.txt"
    assert repo.counts()["pending"] + repo.counts()["failed"] == 1
