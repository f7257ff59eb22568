"""Bad input raises a ValidationError that names the field, and writes nothing."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest

from queue_core.errors import QueueError, ValidationError
from queue_core.store.models import parse_priority, priority_label
from queue_core.validation import MAX_PAYLOAD_DEPTH, MAX_TYPES, parse_payload, validate_payload_depth

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
    ({"type": "t", "idempotency_key": "k\x00"}, "idempotency_key"),  # PostgreSQL's text cannot hold a NUL
    ({"type": "t", "idempotency_key": "k\x01"}, "idempotency_key"),  # nor any other control character
    ({"type": "t", "idempotency_key": "line\nbreak"}, "idempotency_key"),
    ({"type": "t", "run_at": datetime(2026, 1, 1)}, "run_at"),
    ({"type": "t", "run_at": "2026-01-01"}, "run_at"),
    # Out of range once converted to UTC, or a year SQLite's text order would misplace.
    ({"type": "t", "run_at": datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-5)))}, "run_at"),
    ({"type": "t", "run_at": datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5)))}, "run_at"),
    ({"type": "t", "run_at": datetime(5, 1, 1, tzinfo=UTC)}, "run_at"),
    ({"type": "t", "retry_backoff": -1}, "retry_backoff"),
    ({"type": "t", "retry_backoff": float("inf")}, "retry_backoff"),
    ({"type": "t", "retry_backoff": 1e300}, "retry_backoff"),  # PostgreSQL's REAL overflows
    ({"type": "t", "timeout": 1e300}, "timeout"),  # the attempt's deadline is past the platform's time
    ({"type": "t", "timeout": float("nan")}, "timeout"),
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
    ("value", "message"),
    [
        # A number out of range says so, written as a string (the CLI, a form) as much as an int.
        (2**31, "2147483648 is out of range: an integer from -2147483648 to 2147483647"),
        ("99999999999", "99999999999 is out of range: an integer from -2147483648 to 2147483647"),
        (" -2147483649 ", "-2147483649 is out of range: an integer from -2147483648 to 2147483647"),
        ("urgent", "unknown priority 'urgent'; use one of low, medium, high, critical or an integer"),
        ("1.5", "unknown priority '1.5'; use one of low, medium, high, critical or an integer"),
        (True, "must be a label or an integer, not a boolean"),
    ],
)
def test_a_bad_priority_says_what_to_fix(value, message):
    with pytest.raises(ValidationError) as info:
        parse_priority(value)
    assert (info.value.field, str(info.value)) == ("priority", f"priority: {message}")


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


def nested(depth: int, leaf=None) -> dict:
    """A payload whose containers nest ``depth`` deep, the payload object itself counting as 1 (``leaf``, a
    container with no container inside, as the deepest)."""
    value = [] if leaf is None else leaf
    for level in range(depth - 2):
        value = {"a": value} if level % 2 else [value]
    return {"a": value}


def test_payload_depth_counts_containers_up_to_the_limit():
    assert validate_payload_depth({}) == {}
    assert validate_payload_depth(nested(MAX_PAYLOAD_DEPTH)) == nested(MAX_PAYLOAD_DEPTH)
    with pytest.raises(ValidationError) as info:
        validate_payload_depth(nested(MAX_PAYLOAD_DEPTH + 1))
    assert info.value.field == "payload" and str(MAX_PAYLOAD_DEPTH) in info.value.message


@pytest.mark.parametrize("depth", [MAX_PAYLOAD_DEPTH + 1, 987, 990, 5000])
def test_a_payload_nested_past_the_limit_is_refused_before_anything_is_written(repo, depth):
    # Issue 19 defect 6: at ~987 levels create succeeded and the row could never be read back; at 988-990
    # create raised after the row was committed.
    with pytest.raises(ValidationError) as info:
        repo.create("echo", nested(depth))
    assert info.value.field == "payload" and f"{MAX_PAYLOAD_DEPTH} levels" in info.value.message
    with pytest.raises(ValidationError) as info:
        repo.create_many([{"type": "echo"}, {"type": "echo", "payload": nested(depth)}])
    assert info.value.field == "specs[1].payload"
    assert sum(repo.counts().values()) == 0


def test_a_payload_at_the_depth_limit_round_trips(repo):
    job, _ = repo.create("echo", nested(MAX_PAYLOAD_DEPTH, leaf={"deep": True}))
    assert repo.find_by_id(job.id).payload == nested(MAX_PAYLOAD_DEPTH, leaf={"deep": True})
    assert repo.claim("w").payload == job.payload


@pytest.mark.parametrize("depth", [MAX_PAYLOAD_DEPTH + 1, 980, 100_000])
def test_payload_json_text_nested_too_deep_is_a_validation_error_not_a_recursion_error(depth):
    text = '{"a":' + "[" * (depth - 1) + "]" * (depth - 1) + "}"
    with pytest.raises(ValidationError) as info:
        parse_payload(text)
    assert info.value.field == "payload" and f"{MAX_PAYLOAD_DEPTH} levels" in info.value.message


def test_parse_payload_takes_a_json_object_only():
    assert parse_payload('{"to": "ann"}') == {"to": "ann"}
    for text in ("[1]", "not json", '{"a": NaN}', ""):
        with pytest.raises(ValidationError) as info:
            parse_payload(text)
        assert info.value.field == "payload"


def test_a_payload_number_too_long_to_read_says_so_not_how_to_raise_pythons_limit():
    # `enqueue --payload '{"n": 999...}'` passed on Python's own message, "use sys.set_int_max_str_digits()".
    with pytest.raises(ValidationError) as info:
        parse_payload('{"n": ' + "9" * 5000 + "}")
    assert info.value.field == "payload" and "more than 4300 digits" in info.value.message
    assert "sys." not in info.value.message


def test_a_tuple_of_names_is_checked_once_and_a_bad_one_every_time():
    from queue_core import validation

    good = ("va-a", "va-b")
    assert validation.validate_types(good) == ["va-a", "va-b"]
    assert ("types", good) in validation._CHECKED_NAMES
    # The answer is a new list each time: a caller that changes it changes nothing kept.
    answer = validation.validate_types(good)
    answer.append("x")
    assert validation.validate_types(good) == ["va-a", "va-b"]
    assert validation.validate_queue_names(good) == ["va-a", "va-b"]  # kept per field
    kept = len(validation._CHECKED_NAMES)
    for bad in [("ok", ""), ("ok", 3), ("ok", ["unhashable"])]:
        for _ in range(2):  # refused again, never kept
            with pytest.raises(ValidationError, match="item 1"):
                validation.validate_types(bad)
    assert len(validation._CHECKED_NAMES) == kept
    too_many = tuple(f"t{i}" for i in range(MAX_TYPES + 1))
    with pytest.raises(ValidationError, match="at most"):
        validation.validate_types(too_many)


def test_names_kept_after_checking_are_bounded():
    from queue_core import validation

    for i in range(validation._CHECKED_NAMES_KEPT * 3):
        validation.validate_types((f"bounded-{i}",))
    assert len(validation._CHECKED_NAMES) <= validation._CHECKED_NAMES_KEPT


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("echo\x01", "holds the non-printable character '\\x01' at position 5: use printable characters only"),
        ("bad\ntype", "holds the non-printable character '\\n' at position 4"),
        ("\x1b[31mred", "holds the non-printable character '\\x1b' at position 1"),
        ("x" * 256, "must be at most 255 characters, got 256"),
    ],
)
def test_a_bad_name_says_which_rule_it_breaks(repo, name, says):
    """A five-character type holding a control character was told "must be at most 255 printable characters":
    each rule is said on its own, and for a type, a queue and a worker id alike."""
    with pytest.raises(ValidationError, match=r"^type: " + re.escape(says)):
        repo.create(name)
    with pytest.raises(ValidationError, match=r"^queue: " + re.escape(says)):
        repo.create("t", queue=name)
    with pytest.raises(ValidationError, match=r"^worker_id: " + re.escape(says)):
        repo.register_worker(name, host="h", pid=1, queues=None, concurrency=1, stale_after=5)
    with pytest.raises(ValidationError, match=r"^host: " + re.escape(says)):
        repo.register_worker("w", host=name, pid=1, queues=None, concurrency=1, stale_after=5)
    assert sum(repo.counts().values()) == 0
