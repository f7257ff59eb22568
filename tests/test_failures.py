"""Failures grouped by cause: ``error_signature`` (pure) and ``failure_groups`` (both backends)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from queue_core.errors import ValidationError
from queue_core.store.failures import NO_ERROR, SIGNATURE_CHARS, error_signature
from queue_core.store.query import QueryError


@pytest.mark.parametrize(
    ("error", "signature"),
    [
        ("card 4242 declined", "card <n> declined"),
        ("timeout after 30.5s at 12:30:00", "timeout after <n>s at <n>"),
        ("HTTP 502 from 10.0.0.7:8080", "HTTP <n> from <n>"),
        ("request 9f2c1e0a-1b2c-4d5e-8f90-123456789abc failed", "request <uuid> failed"),
        ("bad address 0xDEADBEEF", "bad address <hex>"),
        ("commit 3f9a2b7c1d not found", "commit <hex> not found"),
        ('no such user "alice"', 'no such user "…"'),
        ("can't connect to 'db-1'", "can't connect to '…'"),
        ("job42 lost worker-7", "job<n> lost worker-<n>"),
        ("Traceback (most recent call last):\n  File x", "Traceback (most recent call last):"),
        ("\n\n  first real line 1  \nsecond", "first real line <n>"),
        ("deadline exceeded", "deadline exceeded"),
        (None, NO_ERROR),
        ("   \n ", NO_ERROR),
    ],
)
def test_signature_keeps_the_cause_and_normalises_values(error, signature):
    assert error_signature(error) == signature


def test_errors_of_one_cause_share_a_signature_and_other_causes_do_not():
    one = error_signature("card 4242 declined (request 9f2c1e0a-1b2c-4d5e-8f90-123456789abc)")
    two = error_signature("card 1881 declined (request 00000000-1111-2222-3333-444444444444)")
    assert one == two
    assert error_signature("card 4242 expired") != one


@given(st.text(max_size=400))
def test_signature_of_a_signature_is_itself(text):
    signature = error_signature(text)
    assert error_signature(signature) == signature
    assert len(signature) <= SIGNATURE_CHARS and "\n" not in signature


@given(
    st.lists(
        st.one_of(
            st.integers(min_value=0).map(str),
            st.uuids().map(str),
            st.binary(min_size=4, max_size=16).map(lambda b: "0x" + b.hex()),
            st.text(alphabet="abcdefghij klm", max_size=10).map(lambda t: f'"{t}"'),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_values_never_reach_the_signature(values):
    signature = error_signature("failed on " + " and ".join(values))
    assert not re.search(r"\d", signature), signature
    rebuilt = error_signature("failed on " + " and ".join("7" for _ in values))
    assert rebuilt.count("<n>") == len(values)
    assert signature.count(" and ") == len(values) - 1


def fail_with(repo, type, error):
    job, _ = repo.create(type, max_retries=0)
    claimed = repo.claim("w", types=[type])
    return repo.fail(job.id, error, worker_id="w", attempt=claimed.attempt)


def test_failure_groups_count_types_and_times_biggest_first(repo, clock):
    first = fail_with(repo, "send-invoice", "card 4242 declined")
    clock.advance(minutes=5)
    fail_with(repo, "send-invoice", "card 1881 declined")
    clock.advance(minutes=5)
    last = fail_with(repo, "charge", "card 77 declined\nTraceback ...")
    lone = fail_with(repo, "charge", "gateway 502")
    repo.create("send-invoice")  # not failed: never grouped
    groups = repo.failure_groups()
    assert [(g.signature, g.count, g.types) for g in groups] == [
        ("card <n> declined", 3, ("charge", "send-invoice")),
        ("gateway <n>", 1, ("charge",)),
    ]
    assert (groups[0].first_seen, groups[0].last_seen) == (first.updated_at, last.updated_at)
    assert groups[0].example.startswith("card ") and "\n" not in groups[0].example
    assert list(repo.failure_group_ids("gateway <n>")) == [lone.id]
    ids = repo.failure_group_ids("card <n> declined", "type:send-invoice")
    assert list(ids) == [first.id, first.id + 1]
    assert [g.signature for g in repo.failure_groups(limit=1)] == ["card <n> declined"]


def test_a_group_feeds_a_bulk_retry(repo):
    for n in range(3):
        fail_with(repo, "t", f"card {n} declined")
    fail_with(repo, "t", "other cause")
    ids = repo.failure_group_ids("card <n> declined")
    outcome = repo.bulk("retry", ids=ids)
    assert (outcome.planned, outcome.changed) == (3, 3)
    assert [g.signature for g in repo.failure_groups()] == ["other cause"]


def test_bad_input_to_the_grouping_is_refused(repo):
    with pytest.raises(ValidationError):
        repo.failure_groups(limit=0)
    with pytest.raises(QueryError):
        repo.failure_groups("colour:red")
    with pytest.raises(QueryError):
        repo.failure_group_ids("x", "colour:red")
