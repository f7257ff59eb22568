"""``POST /schedules/{name}/ticks``: a ``--api`` worker's scheduler enqueues a tick as one on the database
does (``JobRepository.create_tick``), so a tick whose job was pruned is not enqueued again."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from support import FakeClock

from queue_core.errors import ValidationError
from queue_core.server.app import create_app
from queue_core.store.repository import tick_record_key

PROBLEM = "application/problem+json"
KEY = "periodic:nightly:2026-01-02T03:00:00Z"
TICK = "2026-01-02T03:00:00+00:00"


@pytest.fixture
def clock() -> FakeClock:
    """The database's clock, past every tick these tests send (a tick ahead of it is refused)."""
    return FakeClock(datetime(2026, 1, 3, 4, tzinfo=UTC))


@pytest.fixture
def http(repo):
    with TestClient(create_app(repo), raise_server_exceptions=False) as client:
        yield client


def post_tick(http, name="nightly", **body):
    body = {"type": "nightly", "tick": TICK, "idempotency_key": KEY, **body}
    return http.post(f"/schedules/{name}/ticks", json=body)


def written(repo) -> tuple[list, list]:
    meta = repo.SchemaMeta
    ticks = [(row.key, row.value) for row in meta.select().where(meta.key.startswith("tick:"))]
    return [job.to_dict() for job in repo.list()], ticks


def test_a_tick_is_201_then_200_while_its_job_is_there_then_204_once_it_was_pruned(http, repo, clock):
    created = post_tick(http, payload={"kind": "full"}, priority="high", queue="reports")
    assert created.status_code == 201, created.text
    job = created.json()
    assert (job["idempotency_key"], job["payload"], job["priority"], job["queue"]) == (
        KEY,
        {"kind": "full"},
        20,
        "reports",
    )
    again = post_tick(http, payload={"kind": "full"}, priority="high", queue="reports")
    assert (again.status_code, again.json()["id"]) == (200, job["id"])
    held = repo.claim("w")
    repo.complete(held.id, worker_id="w", attempt=held.attempt)
    clock.advance(7200)
    assert repo.prune(timedelta(seconds=3600)) == 1
    gone = post_tick(http, payload={"kind": "full"}, priority="high", queue="reports")
    assert (gone.status_code, gone.content) == (204, b"")
    assert repo.list() == []
    earlier = post_tick(http, tick="2026-01-01T03:00:00Z", idempotency_key="periodic:nightly:2026-01-01T03:00:00Z")
    assert earlier.status_code == 204  # an older tick than the newest recorded: also enqueued before
    assert repo.last_tick("nightly") == datetime(2026, 1, 2, 3, tzinfo=UTC)
    # The next tick, and another schedule's first, are new.
    assert post_tick(http, tick="2026-01-03T03:00:00Z", idempotency_key="periodic:nightly:next").status_code == 201
    assert post_tick(http, name="hourly", idempotency_key="periodic:hourly:x").status_code == 201
    assert post_tick(http, name="re%2Fports", idempotency_key="periodic:re/ports:x").status_code == 201
    assert repo.last_tick("re/ports") == datetime(2026, 1, 2, 3, tzinfo=UTC)  # a name may hold "/", sent encoded


def test_a_tick_with_an_offset_is_recorded_in_utc(http, repo):
    assert post_tick(http, tick="2026-01-02T05:00:00+02:00").status_code == 201
    assert repo.last_tick("nightly") == datetime(2026, 1, 2, 3, tzinfo=UTC)


def test_the_same_key_with_another_payload_is_the_idempotency_conflict_of_create(http, repo):
    job = post_tick(http, payload={"kind": "full"}).json()
    conflict = post_tick(http, payload={"kind": "summary"})
    assert conflict.status_code == 422 and conflict.json()["job_id"] == job["id"]
    assert conflict.json()["type"] == "urn:queue-core:problem:idempotency-conflict"


@pytest.mark.parametrize(
    ("name", "body", "field"),
    [
        ("nightly", {"tick": "2026-01-02T03:00:00"}, "tick"),  # naive: which 03:00?
        ("nightly", {"tick": "0999-01-02T03:00:00Z"}, "tick"),
        ("nightly", {"tick": None}, "tick"),
        ("nightly", {"tick": 1767322800}, "tick"),  # a tick is the schema's date-time text, not Unix time
        ("nightly", {"tick": "1767322800"}, "tick"),
        ("nightly", {"tick": "tomorrow"}, "tick"),
        ("nightly", {"idempotency_key": None}, "idempotency_key"),
        ("nightly", {"idempotency_key": ""}, "idempotency_key"),
        ("nightly", {"type": ""}, "type"),
        ("nightly", {"priority": "１"}, "priority"),
        ("night%01ly", {}, "schedule"),
        ("a%0Ab", {}, "schedule"),  # a line break, percent-encoded
        ("%20", {}, "schedule"),
        ("x" * 256, {}, "name"),
    ],
)
def test_bad_input_is_a_422_naming_the_field_and_nothing_is_written(http, repo, name, body, field):
    response = post_tick(http, name=name, **body)
    assert response.status_code == 422 and response.headers["content-type"] == PROBLEM, response.text
    assert field in [error["field"] for error in response.json()["errors"]], response.json()
    assert written(repo) == ([], [])


def test_a_tick_ahead_of_the_databases_clock_is_a_422_and_nothing_is_written(http, repo):
    # Recorded, a tick from a host whose clock was a year fast silenced the schedule for that year.
    ahead = post_tick(http, tick="2027-01-03T03:00:00Z", idempotency_key="periodic:nightly:2027-01-03T03:00:00Z")
    assert ahead.status_code == 422 and ahead.headers["content-type"] == PROBLEM, ahead.text
    [error] = ahead.json()["errors"]
    assert error["field"] == "tick" and "ahead of the database's clock (2026-01-03T04:00:00Z)" in error["message"]
    assert written(repo) == ([], [])
    assert post_tick(http).status_code == 201  # the right tick is enqueued


def test_the_tick_record_is_the_repositorys(http, repo):
    post_tick(http)
    [(key, value)] = written(repo)[1]
    assert (key, value) == (tick_record_key("nightly"), "2026-01-02T03:00:00.000000Z")


OLDER_TICK = "2026-01-01T03:00:00Z"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"type": "\x00bad"}, "type"),
        ({"priority": "urgent"}, "priority"),
        ({"max_retries": -5}, "max_retries"),
        ({"timeout": -1.0}, "timeout"),
        ({"retry_backoff": -1.0}, "retry_backoff"),
        ({"idempotency_key": "k" * 1000}, "idempotency_key"),
        ({"queue": "a,b"}, "queue"),
        ({"payload": {"big": float("inf")}}, "payload"),  # sent as 1e999 below
    ],
)
def test_a_bad_body_for_a_tick_older_than_the_last_is_a_422_not_a_204(http, repo, body, field):
    # The "enqueued before" shortcut answered 204 before anything of the body was checked: a broken
    # definition went unnoticed as long as its ticks were old ones.
    assert post_tick(http).status_code == 201
    before = written(repo)
    sent = {"type": "nightly", "tick": OLDER_TICK, "idempotency_key": "periodic:nightly:older", **body}
    text = json.dumps(sent).replace("Infinity", "1e999")
    response = http.post("/schedules/nightly/ticks", content=text, headers={"content-type": "application/json"})
    assert response.status_code == 422 and response.headers["content-type"] == PROBLEM, response.text
    assert [error["field"] for error in response.json()["errors"]] == [field], response.json()
    assert written(repo) == before


def test_a_wholly_bad_body_for_an_older_tick_is_a_422(http, repo):
    assert post_tick(http).status_code == 201
    fields = {"type": "\x00bad", "priority": "urgent", "max_retries": -5, "timeout": -1.0, "queue": "a,b"}
    sent = {"tick": OLDER_TICK, **fields, "idempotency_key": "k" * 1000, "payload": {"x": "BIG"}}
    bad = json.dumps(sent).replace('"BIG"', "1e999")
    response = http.post("/schedules/nightly/ticks", content=bad, headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.json()["errors"][0]["field"] == "type"


def test_the_repository_checks_a_ticks_job_before_its_shortcut(repo):
    tick = datetime(2026, 1, 2, 3, tzinfo=UTC)
    assert repo.create_tick("nightly", tick, "nightly", idempotency_key=KEY) is not None
    older = tick - timedelta(days=1)
    with pytest.raises(ValidationError) as info:
        repo.create_tick("nightly", older, "nightly", idempotency_key="periodic:older", priority="urgent")
    assert info.value.field == "priority"
    assert repo.create_tick("nightly", older, "nightly", idempotency_key="periodic:older") is None
