"""The HTTP API through a real HTTP client (FastAPI's TestClient): every endpoint's status codes and bodies."""

from __future__ import annotations

import json
from datetime import timedelta

import peewee as pw
import pytest
from fastapi.testclient import TestClient

from queue_core.errors import ValidationError
from queue_core.server.app import create_app

PROBLEM = "application/problem+json"
JSON_BODY = {"content-type": "application/json"}


@pytest.fixture
def app(repo):
    return create_app(repo)


@pytest.fixture
def http(app):
    # raise_server_exceptions=False: a 500 must show up as a response, so the tests can say there is none.
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


def assert_problem(response, status: int, *, field: str | None = None) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    problem = response.json()
    assert problem["status"] == status
    assert problem["title"] and problem["detail"] and problem["type"]
    assert "Traceback" not in response.text
    if field is not None:
        assert field in [error["field"] for error in problem["errors"]], problem
        assert field in problem["detail"]
    return problem


def enqueue(http, **body) -> dict:
    response = http.post("/jobs", json={"type": "echo", **body})
    assert response.status_code == 201, response.text
    return response.json()


def claim(http, worker_id="w1", **body) -> dict:
    response = http.post("/jobs/claim", json={"worker_id": worker_id, **body})
    assert response.status_code == 200, response.text
    return response.json()


# --- POST /jobs ----------------------------------------------------------------------------------


def test_create_returns_201_with_every_column(http, repo):
    response = http.post(
        "/jobs",
        json={
            "type": "send-invoice",
            "payload": {"invoice": 7},
            "priority": "high",
            "max_retries": 5,
            "retry_backoff": 0,
            "run_at": "2026-01-01T13:00:00+01:00",
        },
    )
    assert response.status_code == 201
    job = response.json()
    stored = repo.find_by_id(job["id"])
    assert job == stored.to_dict()
    assert job["payload"] == {"invoice": 7}
    assert (job["priority"], job["priority_label"]) == (20, "high")
    assert job["max_retries"] == 5 and job["retry_backoff"] == 0.0 and job["status"] == "pending"
    assert job["run_at"] == "2026-01-01T12:00:00+00:00"
    assert set(job) >= {"id", "type", "payload", "priority", "status", "retry_count", "max_retries"}
    assert set(job) >= {"idempotency_key", "claimed_at", "worker_id", "error", "created_at", "updated_at"}


def test_create_accepts_an_integer_priority_and_defaults(http):
    job = enqueue(http, priority=15)
    assert (job["priority"], job["priority_label"]) == (15, "medium")
    assert enqueue(http)["payload"] == {}


def test_same_idempotency_key_returns_200_with_the_existing_job(http, repo):
    first = http.post("/jobs", json={"type": "charge", "payload": {"order": 1}, "idempotency_key": "k1"})
    again = http.post("/jobs", json={"type": "charge", "payload": {"order": 1}, "idempotency_key": "k1"})
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"]
    assert repo.counts()["pending"] == 1


@pytest.mark.parametrize("header", ["k2", '"k2"'])
def test_idempotency_key_header_works_like_the_field(http, repo, header):
    body = {"type": "charge", "payload": {"order": 2}}
    first = http.post("/jobs", json=body, headers={"Idempotency-Key": header})
    again = http.post("/jobs", json={**body, "idempotency_key": "k2"})
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["idempotency_key"] == "k2"
    assert again.json()["id"] == first.json()["id"]


@pytest.mark.parametrize(
    ("header", "key"),
    [
        ("été".encode(), "été"),  # UTF-8 bytes, as a client sends them: not read as Latin-1 ("Ã©tÃ©")
        (b'"a\\"b\\\\c"', 'a"b\\c'),  # a structured-field string's escapes
    ],
)
def test_an_idempotency_key_header_is_read_as_its_sender_meant(http, repo, header, key):
    first = http.post("/jobs", json={"type": "t"}, headers=[(b"Idempotency-Key", header)])
    assert first.status_code == 201 and first.json()["idempotency_key"] == key
    again = http.post("/jobs", json={"type": "t", "idempotency_key": key})
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]


def test_an_idempotency_key_header_that_is_not_utf8_is_refused_naming_the_field():
    """Bytes ff fe on the wire, which Starlette hands over as Latin-1 "ÿþ" (httpx's test client re-encodes
    what it is given, so the route's reading is checked directly)."""
    from queue_core.server.routes.jobs import idempotency_key_from
    from queue_core.server.schemas import CreateJob

    with pytest.raises(ValidationError) as info:
        idempotency_key_from(CreateJob(type="t"), b"\xff\xfe".decode("latin-1"))
    assert info.value.field == "idempotency_key" and "UTF-8" in str(info.value)


def test_header_and_body_keys_that_differ_are_refused(http, repo):
    response = http.post("/jobs", json={"type": "t", "idempotency_key": "a"}, headers={"Idempotency-Key": "b"})
    assert_problem(response, 422, field="idempotency_key")
    assert sum(repo.counts().values()) == 0


@pytest.mark.parametrize("change", [{"type": "refund"}, {"payload": {"order": 99}}])
def test_same_key_with_other_type_or_payload_is_422_and_leaves_the_job(http, repo, change):
    original = http.post("/jobs", json={"type": "charge", "payload": {"order": 3}, "idempotency_key": "k3"}).json()
    response = http.post("/jobs", json={"type": "charge", "payload": {"order": 3}, "idempotency_key": "k3", **change})
    problem = assert_problem(response, 422)
    assert problem["type"].endswith("idempotency-conflict")
    assert problem["job_id"] == original["id"]
    assert repo.find_by_id(original["id"]).to_dict() == original
    assert sum(repo.counts().values()) == 1


BAD_BODIES = [
    ({}, "type"),
    ({"type": ""}, "type"),
    ({"type": 42}, "type"),
    ({"type": "t", "payload": [1]}, "payload"),
    ({"type": "t", "priority": "urgent"}, "priority"),
    ({"type": "t", "priority": 2**40}, "priority"),
    ({"type": "t", "max_retries": -1}, "max_retries"),
    ({"type": "t", "max_retries": "3"}, "max_retries"),
    ({"type": "t", "run_at": "2026-01-01T00:00:00"}, "run_at"),
    ({"type": "t", "run_at": "tomorrow"}, "run_at"),
    ({"type": "t", "run_at": "9999-12-31T23:00:00-05:00"}, "run_at"),
    ({"type": "t", "run_at": 1e20}, "run_at"),  # a Unix time in seconds past the year 9999
    ({"type": "t", "retry_backoff": -1}, "retry_backoff"),
    ({"type": "t", "idempotency_key": ""}, "idempotency_key"),
    ({"type": "t", "priorty": "high"}, "priorty"),
]


@pytest.mark.parametrize(("seconds", "iso"), [(32503680000, "3000-01-01T00:00:00+00:00"), (1.5e9, "2017-07-14")])
def test_a_number_for_run_at_is_unix_time_in_seconds_even_far_ahead(http, seconds, iso):
    """pydantic read a number above 2e10 as milliseconds: the year 3000 became 1971, a job due at once."""
    response = http.post("/jobs", json={"type": "t", "run_at": seconds})
    assert response.status_code == 201 and response.json()["run_at"].startswith(iso)


@pytest.mark.parametrize(
    ("text", "iso"), [("32503680000", "3000-01-01T00:00:00+00:00"), ("1500000000.5", "2017-07-14")]
)
def test_a_number_in_a_string_for_run_at_is_unix_time_in_seconds_too(http, text, iso):
    """pydantic reads digits in a string as a Unix time as well, and those above 2e10 as milliseconds: the
    year 3000 as "32503680000" became 1971, a job due at once."""
    response = http.post("/jobs", json={"type": "t", "run_at": text})
    assert response.status_code == 201 and response.json()["run_at"].startswith(iso), response.text


def test_a_run_at_without_an_offset_says_how_to_write_one_over_http(http, repo):
    """The repository's own words ("pass an aware one, e.g. datetime.now(UTC)") are Python, no help to curl."""
    problem = assert_problem(
        http.post("/jobs", json={"type": "t", "run_at": "2026-01-01T00:00:00"}), 422, field="run_at"
    )
    assert "2026-01-02T03:00:00Z" in problem["detail"] and "datetime.now" not in problem["detail"]
    assert sum(repo.counts().values()) == 0


@pytest.mark.parametrize(("body", "field"), BAD_BODIES)
def test_invalid_fields_are_422_naming_the_field_and_write_nothing(http, repo, body, field):
    assert_problem(http.post("/jobs", json=body), 422, field=field)
    assert sum(repo.counts().values()) == 0


@pytest.mark.parametrize("body", [b"{not json", b'{"type": "t",}', b"", b"[" * 50_000 + b"]" * 50_000])
def test_malformed_json_is_400(http, repo, body):
    response = http.post("/jobs", content=body, headers={"Content-Type": "application/json"})
    if body == b"":
        assert_problem(response, 422, field="body")  # no body at all: the required body is missing
    else:
        assert_problem(response, 400)
    assert sum(repo.counts().values()) == 0


def test_a_body_that_is_not_json_is_415(http):
    assert_problem(http.post("/jobs", content=b"type=echo", headers={"Content-Type": "text/plain"}), 415)


def test_bodies_over_the_limit_are_413(repo):
    with TestClient(create_app(repo, max_body_bytes=100), raise_server_exceptions=False) as http:
        assert http.post("/jobs", json={"type": "t", "payload": {"x": "y" * 50}}).status_code == 201
        big = {"type": "t", "payload": {"x": "y" * 200}}
        assert_problem(http.post("/jobs", json=big), 413)

        def chunks():  # streamed without a Content-Length: counted as it arrives
            yield b'{"type": "t", "payload": {"x": "'
            yield b"y" * 200
            yield b'"}}'

        assert_problem(http.post("/jobs", content=chunks(), headers={"Content-Type": "application/json"}), 413)
    assert sum(repo.counts().values()) == 1


def test_default_limit_is_one_mebibyte(http):
    near = {"type": "t", "payload": {"x": "y" * (1024 * 1024 - 100)}}
    assert http.post("/jobs", json=near).status_code == 201
    assert_problem(http.post("/jobs", json={"type": "t", "payload": {"x": "y" * (1024 * 1024)}}), 413)


# --- claim / complete / fail / release / heartbeat ------------------------------------------------


def test_claim_returns_the_highest_priority_job_running_then_204(http):
    low = enqueue(http, priority="low")
    high = enqueue(http, priority="critical")
    job = claim(http, "w1")
    assert (job["id"], job["status"], job["worker_id"]) == (high["id"], "running", "w1")
    assert job["claimed_at"] is not None
    assert claim(http, "w2")["id"] == low["id"]
    response = http.post("/jobs/claim", json={"worker_id": "w3"})
    assert response.status_code == 204 and response.content == b""


def test_claim_by_types(http):
    enqueue(http, type="a")
    b = enqueue(http, type="b")
    assert claim(http, types=["b"])["id"] == b["id"]
    assert http.post("/jobs/claim", json={"worker_id": "w", "types": ["b"]}).status_code == 204
    assert http.post("/jobs/claim", json={"worker_id": "w", "types": []}).status_code == 204


@pytest.mark.parametrize("body", [{}, {"worker_id": ""}, {"worker_id": 7}, {"worker_id": "w", "types": "a"}])
def test_claim_with_bad_input_is_422(http, body):
    enqueue(http)
    problem = assert_problem(http.post("/jobs/claim", json=body), 422)
    assert problem["errors"][0]["field"] in ("worker_id", "types")


def test_claim_many_returns_a_batch_in_claim_order(http):
    ids = [enqueue(http, priority=p)["id"] for p in (0, 30, 10)]
    response = http.post("/jobs/claim-many", json={"worker_id": "w", "n": 2})
    assert response.status_code == 200
    assert [job["id"] for job in response.json()["jobs"]] == [ids[1], ids[2]]
    assert http.post("/jobs/claim-many", json={"worker_id": "w", "n": 5}).json()["jobs"][0]["id"] == ids[0]
    assert http.post("/jobs/claim-many", json={"worker_id": "w", "n": 5}).json() == {"jobs": []}
    assert_problem(http.post("/jobs/claim-many", json={"worker_id": "w", "n": 0}), 422, field="n")


def test_complete_by_the_holder_is_200(http, repo):
    enqueue(http)
    job = claim(http, "w1")
    response = http.post(f"/jobs/{job['id']}/complete", json={"worker_id": "w1", "attempt": 1})
    assert response.status_code == 200
    assert response.json()["status"] == "completed"
    assert repo.find_by_id(job["id"]).status == "completed"


def test_complete_without_a_body_is_allowed(http):
    enqueue(http)
    job = claim(http)
    assert http.post(f"/jobs/{job['id']}/complete").json()["status"] == "completed"


def test_complete_unknown_is_404_and_not_running_or_not_held_is_409(http, repo):
    assert assert_problem(http.post("/jobs/999/complete", json={}), 404)["job_id"] == 999
    pending = enqueue(http)
    problem = assert_problem(http.post(f"/jobs/{pending['id']}/complete", json={}), 409)
    assert "pending" in problem["detail"]
    job = claim(http, "w1")
    assert "w1" in assert_problem(http.post(f"/jobs/{job['id']}/complete", json={"worker_id": "w2"}), 409)["detail"]
    assert (
        "attempt"
        in assert_problem(http.post(f"/jobs/{job['id']}/complete", json={"worker_id": "w1", "attempt": 2}), 409)[
            "detail"
        ]
    )
    assert repo.find_by_id(job["id"]).status == "running"


def test_fail_requeues_with_retry_count_plus_one_then_fails(http, repo):
    enqueue(http, max_retries=1, retry_backoff=0)
    job = claim(http, "w1")
    first = http.post(f"/jobs/{job['id']}/fail", json={"error": "boom", "worker_id": "w1"})
    assert first.status_code == 200
    assert (first.json()["status"], first.json()["retry_count"], first.json()["error"]) == ("pending", 1, "boom")
    job = claim(http, "w1")
    last = http.post(f"/jobs/{job['id']}/fail", json={"error": "again", "worker_id": "w1", "attempt": 2})
    assert (last.json()["status"], last.json()["error"]) == ("failed", "again")
    detail = http.get(f"/jobs/{job['id']}").json()
    assert [e["error"] for e in detail["errors"]] == ["boom", "again"]


def test_fail_codes(http):
    assert_problem(http.post("/jobs/999/fail", json={"error": "x"}), 404)
    pending = enqueue(http)
    assert_problem(http.post(f"/jobs/{pending['id']}/fail", json={"error": "x"}), 409)
    assert_problem(http.post(f"/jobs/{pending['id']}/fail", json={}), 422, field="error")
    assert_problem(http.post(f"/jobs/{pending['id']}/fail", json={"error": 5}), 422, field="error")


def test_release_gives_the_job_back_without_a_retry(http, repo):
    enqueue(http)
    job = claim(http, "w1")
    assert_problem(http.post(f"/jobs/{job['id']}/release", json={"worker_id": "w2"}), 409)
    released = http.post(f"/jobs/{job['id']}/release", json={"worker_id": "w1", "attempt": 1})
    assert released.status_code == 200
    assert (released.json()["status"], released.json()["retry_count"], released.json()["worker_id"]) == (
        "pending",
        0,
        None,
    )
    assert_problem(http.post("/jobs/999/release", json={}), 404)


def test_heartbeat_returns_the_ids_still_held(http, repo, clock):
    enqueue(http)
    enqueue(http)
    mine = claim(http, "w1")
    other = claim(http, "w2")
    clock.advance(10)
    response = http.post("/jobs/heartbeat", json={"worker_id": "w1", "job_ids": [mine["id"], other["id"], 999]})
    assert response.status_code == 200
    assert response.json() == {"held": [mine["id"]]}
    assert repo.find_by_id(mine["id"]).heartbeat_at == clock.now
    assert repo.find_by_id(other["id"]).heartbeat_at is None
    assert_problem(http.post("/jobs/heartbeat", json={"worker_id": "w1", "job_ids": ["x"]}), 422)


# --- operator endpoints --------------------------------------------------------------------------


def test_list_pages_by_id_and_filters(http):
    ids = [enqueue(http, type="a" if i % 2 else "b")["id"] for i in range(5)]
    page = http.get("/jobs", params={"limit": 2}).json()
    assert [j["id"] for j in page["jobs"]] == ids[:2] and page["next_after"] == ids[1]
    page = http.get("/jobs", params={"limit": 2, "after": page["next_after"]}).json()
    assert [j["id"] for j in page["jobs"]] == ids[2:4]
    last = http.get("/jobs", params={"limit": 2, "after": page["next_after"]}).json()
    assert [j["id"] for j in last["jobs"]] == ids[4:] and last["next_after"] is None
    assert {j["type"] for j in http.get("/jobs", params={"type": "a"}).json()["jobs"]} == {"a"}
    claim(http)
    running = http.get("/jobs", params={"status": "running"}).json()["jobs"]
    assert [j["id"] for j in running] == [ids[0]]


@pytest.mark.parametrize(
    ("params", "field"),
    [({"status": "done"}, "status"), ({"limit": 0}, "limit"), ({"limit": "x"}, "limit"), ({"after": -1}, "after")],
)
def test_list_with_bad_query_is_422(http, params, field):
    assert_problem(http.get("/jobs", params=params), 422, field=field)


def test_get_job_and_404(http):
    job = enqueue(http)
    response = http.get(f"/jobs/{job['id']}")
    assert response.status_code == 200
    assert response.json() == {**job, "errors": []}
    assert_problem(http.get("/jobs/424242"), 404)


def test_retry_a_failed_job_else_404_or_409(http):
    enqueue(http, max_retries=0)
    job = claim(http)
    http.post(f"/jobs/{job['id']}/fail", json={"error": "x"})
    retried = http.post(f"/jobs/{job['id']}/retry")
    assert retried.status_code == 200
    assert (retried.json()["status"], retried.json()["retry_count"]) == ("pending", 0)
    assert "pending" in assert_problem(http.post(f"/jobs/{job['id']}/retry"), 409)["detail"]
    assert_problem(http.post("/jobs/999/retry"), 404)


def test_reap_takes_back_stale_claims(http, repo, clock):
    enqueue(http)
    job = claim(http)
    assert http.post("/jobs/reap", json={"older_than_seconds": 60}).json() == {"reaped": 0}
    clock.advance(61)
    assert http.post("/jobs/reap", json={"older_than_seconds": 60}).json() == {"reaped": 1}
    assert repo.find_by_id(job["id"]).status == "pending"
    for bad in (-1, "60", 1e300):
        assert_problem(http.post("/jobs/reap", json={"older_than_seconds": bad}), 422, field="older_than_seconds")


def test_stats_and_healthz(http, repo):
    enqueue(http)
    stats = http.get("/stats").json()
    assert stats["counts"] == {"pending": 1, "running": 0, "completed": 0, "failed": 0, "cancelled": 0}
    assert set(stats["per_minute_last_5m"]) == {"completed", "failed"}
    assert http.get("/healthz").json() == {"status": "ok"}


def test_database_errors_are_503_with_retry_after(tmp_path):
    unreachable = pw.SqliteDatabase(str(tmp_path))  # a directory: every connection attempt fails
    with TestClient(create_app(unreachable), raise_server_exceptions=False) as http:
        response = http.get("/healthz")
        assert_problem(response, 503)
        assert response.headers["retry-after"] == "1"
        assert_problem(http.post("/jobs", json={"type": "t"}), 503)


def test_any_other_database_error_is_503_too(http, repo, monkeypatch):
    def aborted(*args, **kwargs):
        raise pw.InternalError("current transaction is aborted, commands ignored until end of transaction block")

    monkeypatch.setattr(repo, "create", aborted)
    assert_problem(http.post("/jobs", json={"type": "t"}), 503)


def test_a_lone_surrogate_is_stored_and_sent_back_in_a_payload_and_refused_in_text_fields(http, repo):
    lone_surrogate = b"\\ud800"  # a valid JSON escape, but no character: UTF-8 cannot encode it
    created = http.post(
        "/jobs", content=b'{"type": "t", "payload": {"k": "' + lone_surrogate + b'"}}', headers=JSON_BODY
    )
    assert created.status_code == 201, created.text
    assert created.json()["payload"] == {"k": "\ud800"}
    assert http.get(f"/jobs/{created.json()['id']}").json()["payload"] == {"k": "\ud800"}
    for path, body in [
        ("/jobs", b'{"type": "t", "idempotency_key": "k' + lone_surrogate + b'"}'),
        ("/jobs/claim", b'{"worker_id": "w' + lone_surrogate + b'"}'),
    ]:
        assert_problem(http.post(path, content=body, headers=JSON_BODY), 422)
    assert repo.counts()["pending"] == 1


# --- routing errors and the OpenAPI document -----------------------------------------------------


@pytest.mark.parametrize("path", ["/nope", "/jobs/abc", "/jobs/1/explode", "/jobs/-1"])
def test_unknown_routes_are_404_problems(http, path):
    assert_problem(http.get(path), 404)


@pytest.mark.parametrize(("method", "path"), [("DELETE", "/jobs"), ("GET", "/jobs/claim"), ("PUT", "/jobs/1")])
def test_wrong_methods_are_405_with_allow(http, method, path):
    response = http.request(method, path)
    assert_problem(response, 405)
    assert response.headers["allow"]


def test_ids_beyond_64_bits_are_422_not_500(http):
    assert_problem(http.get(f"/jobs/{2**64}"), 422, field="job_id")
    assert_problem(http.get("/jobs", params={"after": 2**64}), 422, field="after")
    assert_problem(http.post(f"/jobs/{2**70}/complete"), 422, field="job_id")


def test_openapi_documents_every_endpoint_and_problem_responses(http):
    spec = http.get("/openapi.json").json()
    operations = {(method.upper(), path) for path, item in spec["paths"].items() for method in item}
    assert operations == {
        ("POST", "/jobs"),
        ("GET", "/jobs"),
        ("POST", "/jobs/claim"),
        ("POST", "/jobs/claim-many"),
        ("POST", "/jobs/bulk/{action}"),
        ("POST", "/jobs/heartbeat"),
        ("POST", "/jobs/reap"),
        ("POST", "/jobs/prune"),
        ("POST", "/jobs/refresh-statistics"),
        ("POST", "/jobs/{job_id}/complete"),
        ("POST", "/jobs/{job_id}/complete-and-claim"),
        ("POST", "/jobs/{job_id}/fail"),
        ("POST", "/jobs/{job_id}/release"),
        ("POST", "/jobs/{job_id}/retry"),
        ("POST", "/jobs/{job_id}/cancel"),
        ("POST", "/jobs/{job_id}/cancelled"),
        ("POST", "/jobs/cancel-requests"),
        ("GET", "/jobs/{job_id}"),
        ("GET", "/queues"),
        ("POST", "/queues/{name}/pause"),
        ("POST", "/queues/{name}/resume"),
        ("GET", "/workers"),
        ("POST", "/workers/{worker_id}/register"),
        ("POST", "/workers/{worker_id}/seen"),
        ("POST", "/workers/{worker_id}/stopped"),
        ("GET", "/workers/{worker_id}/held"),
        ("POST", "/schedules/{name}/ticks"),
        ("GET", "/stats"),
        ("GET", "/healthz"),
        ("GET", "/metrics"),
    }
    create = spec["paths"]["/jobs"]["post"]["responses"]
    assert {"200", "201", "422", "400", "413"} <= set(create)
    assert PROBLEM in create["422"]["content"]
    assert "Problem" in spec["components"]["schemas"]


# --- auth ------------------------------------------------------------------------------------------


@pytest.fixture
def secured(repo):
    with TestClient(create_app(repo, token="s3cret"), raise_server_exceptions=False) as client:
        yield client


@pytest.mark.parametrize("header", [None, "Bearer wrong", "Bearer s3cre", "s3cret", "Basic s3cret", "Bearer s3cret "])
def test_every_route_needs_the_token(secured, repo, header):
    headers = {"Authorization": header} if header else {}
    for method, path in [("POST", "/jobs"), ("GET", "/jobs"), ("GET", "/stats"), ("GET", "/openapi.json")]:
        response = secured.request(method, path, json={"type": "t"}, headers=headers)
        assert_problem(response, 401)
        assert response.headers["www-authenticate"].startswith("Bearer")
    assert sum(repo.counts().values()) == 0


def test_the_right_token_passes_and_healthz_is_open(secured):
    ok = {"Authorization": "Bearer s3cret"}
    assert secured.post("/jobs", json={"type": "t"}, headers=ok).status_code == 201
    assert secured.get("/jobs", headers=ok).status_code == 200
    assert secured.get("/healthz").status_code == 200
    spec = secured.get("/openapi.json", headers=ok).json()
    assert spec["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert spec["paths"]["/healthz"]["get"]["security"] == []


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "beaRer"])
def test_the_auth_scheme_is_case_insensitive_and_the_token_is_not(secured, scheme):
    # RFC 9110 11.1: a client sending "bearer s3cret" was refused with 401.
    assert secured.get("/stats", headers={"Authorization": f"{scheme} s3cret"}).status_code == 200
    assert_problem(secured.get("/stats", headers={"Authorization": f"{scheme} S3CRET"}), 401)


def test_token_is_compared_in_constant_time(monkeypatch, repo):
    import hmac

    calls = []
    real = hmac.compare_digest
    monkeypatch.setattr(hmac, "compare_digest", lambda a, b: calls.append((a, b)) or real(a, b))
    with TestClient(create_app(repo, token="t0k"), raise_server_exceptions=False) as http:
        assert http.get("/stats", headers={"Authorization": "Bearer nope"}).status_code == 401
    assert calls == [(b"Bearer nope", b"Bearer t0k")]


# --- last resort -----------------------------------------------------------------------------------


def test_an_unexpected_error_is_a_logged_problem_500_without_traceback(repo, monkeypatch, caplog):
    def explode(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(repo, "counts", explode)
    with TestClient(create_app(repo), raise_server_exceptions=False) as http:
        response = http.get("/stats")
    problem = assert_problem(response, 500)
    assert "disk on fire" not in json.dumps(problem)
    assert any("internal error on GET /stats" in r.getMessage() for r in caplog.records)


def test_heartbeat_keeps_a_claim_from_being_reaped(http, clock):
    enqueue(http)
    job = claim(http, "w1")
    clock.advance(50)
    http.post("/jobs/heartbeat", json={"worker_id": "w1", "job_ids": [job["id"]]})
    clock.advance(timedelta(seconds=50).total_seconds())
    assert http.post("/jobs/reap", json={"older_than_seconds": 60}).json() == {"reaped": 0}
