"""Hostile input to every route (issue 19): a 422 or 404 problem naming the field, never a 500 or a 503.

Run on both backends: PostgreSQL and SQLite refuse different things (a lone surrogate, 65,536 bind
parameters), and neither refusal may reach a client as a server error.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from test_server import JSON_BODY, assert_problem

from queue_core import wire
from queue_core.server.app import create_app
from queue_core.server.schemas import MAX_CLAIM_TYPES

LONE_SURROGATE = "\\ud800"  # a valid JSON escape, but no character: UTF-8 cannot encode it


@pytest.fixture
def http(repo):
    with TestClient(create_app(repo), raise_server_exceptions=False) as client:
        yield client


@pytest.fixture
def running(repo):
    """A job claimed by worker w1: the routes that finish a job have one to act on."""
    repo.create("echo")
    return repo.claim("w1")


def post_raw(http, path: str, body: str):
    return http.post(path, content=body.encode("ascii"), headers=JSON_BODY)


def unchanged(repo, job) -> bool:
    now = repo.find_by_id(job.id)
    return (now.status, now.worker_id, now.attempt, now.heartbeat_at) == (
        job.status,
        job.worker_id,
        job.attempt,
        job.heartbeat_at,
    )


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/jobs/claim", f'{{"worker_id": "w", "types": ["a{LONE_SURROGATE}"]}}', "types.0"),
        ("/jobs/claim-many", f'{{"worker_id": "w", "n": 2, "types": ["echo", "{LONE_SURROGATE}"]}}', "types.1"),
        ("/jobs/claim-many", f'{{"worker_id": "w{LONE_SURROGATE}", "n": 2}}', "worker_id"),
        ("/jobs/heartbeat", f'{{"worker_id": "w{LONE_SURROGATE}", "job_ids": [{{id}}]}}', "worker_id"),
        ("/jobs/{id}/complete", f'{{"worker_id": "{LONE_SURROGATE}"}}', "worker_id"),
        ("/jobs/{id}/release", f'{{"worker_id": "{LONE_SURROGATE}"}}', "worker_id"),
        ("/jobs/{id}/fail", f'{{"error": "x", "worker_id": "{LONE_SURROGATE}"}}', "worker_id"),
    ],
)
def test_a_lone_surrogate_in_any_text_field_is_422(http, repo, running, path, body, field):
    pending, _ = repo.create("echo")
    response = post_raw(http, path.replace("{id}", str(running.id)), body.replace("{id}", str(running.id)))
    assert_problem(response, 422, field=field)
    assert unchanged(repo, running) and repo.find_by_id(pending.id).status == "pending"


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/jobs/claim", {"worker_id": "w", "types": [""]}, "types.0"),
        ("/jobs/claim", {"worker_id": "w", "types": ["a\nb"]}, "types.0"),
        ("/jobs/claim", {"worker_id": "w", "types": ["x" * 256]}, "types.0"),
        ("/jobs/claim", {"worker_id": " "}, "worker_id"),
        ("/jobs/heartbeat", {"worker_id": "", "job_ids": [1]}, "worker_id"),
        ("/jobs/{id}/complete", {"worker_id": "w" * 256}, "worker_id"),
    ],
)
def test_text_fields_follow_the_repository_rules(http, repo, running, path, body, field):
    assert_problem(http.post(path.replace("{id}", str(running.id)), json=body), 422, field=field)
    assert unchanged(repo, running)


@pytest.mark.parametrize("path", ["/jobs/claim", "/jobs/claim-many"])
@pytest.mark.parametrize("count", [MAX_CLAIM_TYPES + 1, 65_536])
def test_too_many_types_is_a_422_not_a_503(http, repo, path, count):
    # PostgreSQL takes at most 65,535 bind parameters: the request must be refused before any query.
    repo.create("t0")
    body = {"worker_id": "w", "n": 1, "types": [f"t{i}" for i in range(count)]}
    if path == "/jobs/claim":
        del body["n"]
    problem = assert_problem(http.post(path, json=body), 422, field="types")
    assert f"at most {MAX_CLAIM_TYPES}" in problem["detail"]
    assert repo.counts()["pending"] == 1


def test_the_most_types_allowed_still_claims(http, repo):
    job, _ = repo.create(f"t{MAX_CLAIM_TYPES - 1}")
    types = [f"t{i}" for i in range(MAX_CLAIM_TYPES)]
    response = http.post("/jobs/claim", json={"worker_id": "w", "types": types})
    assert response.status_code == 200 and response.json()["id"] == job.id


@pytest.mark.parametrize("path", ["/jobs/{id}", "/jobs/{id}/complete", "/jobs/{id}/retry", "/jobs/{id}/fail"])
@pytest.mark.parametrize("job_id", [2**63, 2**64 + 1, 10**30])
def test_path_ids_beyond_64_bits_are_never_a_500(http, path, job_id):
    url = path.replace("{id}", str(job_id))
    response = http.get(url) if path == "/jobs/{id}" else http.post(url, json={"error": "x"})
    assert response.status_code in (404, 422), response.text
    assert_problem(response, response.status_code)


def test_retrying_a_job_that_is_not_failed_has_its_own_problem_type(http, repo):
    job, _ = repo.create("echo")
    problem = assert_problem(http.post(f"/jobs/{job.id}/retry"), 409)
    assert problem["type"] == wire.NOT_FAILED and problem["title"] == "Job not failed"
    assert wire.NOT_FAILED != wire.NOT_HELD
    # The not-held 409 keeps its own type.
    held = assert_problem(http.post(f"/jobs/{job.id}/complete"), 409)
    assert held["type"] == wire.NOT_HELD and held["title"] == "Job not held"


@pytest.mark.parametrize("depth", [980, 5000])
def test_a_deeply_nested_payload_is_refused_and_writes_nothing(http, repo, depth):
    payload = '{"a": ' + "[" * depth + "]" * depth + "}"
    response = post_raw(http, "/jobs", f'{{"type": "t", "payload": {payload}}}')
    assert response.status_code in (400, 422), response.text
    assert_problem(response, response.status_code)
    assert sum(repo.counts().values()) == 0


@pytest.mark.parametrize("field", ["timeout", "retry_backoff"])
def test_a_span_of_seconds_past_a_century_is_a_422_naming_it(http, repo, field):
    # 1e300 seconds: SQLite stored it and the job's first attempt failed on its deadline; PostgreSQL's REAL
    # overflowed, a 422 that named no field.
    assert_problem(http.post("/jobs", json={"type": "echo", field: 1e300}), 422, field=field)
    assert sum(repo.counts().values()) == 0


@pytest.mark.parametrize(
    ("queues", "field"), [(["a\nb"], "queues.0"), ("some", "queues"), (7, "queues")], ids=["bad name", "text", "number"]
)
def test_a_field_that_takes_several_shapes_is_named_as_the_client_sent_it(http, queues, field):
    # pydantic names the member of the union it tried (queues.list[function-after[check(), str]].0) and
    # reports each member's error ("Input should be '*'" beside the name's own).
    body = {"host": "h", "pid": 1, "queues": queues, "concurrency": 1, "stale_after": 60}
    problem = assert_problem(http.post("/workers/w1/register", json=body), 422, field=field)
    assert [error["field"] for error in problem["errors"]] == [field]


@pytest.mark.parametrize(
    ("change", "field"),
    [({"pid": 2**31}, "pid"), ({"concurrency": 2**31}, "concurrency"), ({"stale_after": 1e300}, "stale_after")],
)
def test_a_registration_past_the_registrys_columns_is_a_422_naming_the_field(http, repo, change, field):
    # PostgreSQL's INTEGER and REAL columns refused these with a 422 that named no field; SQLite stored them.
    body = {"host": "h", "pid": 1, "queues": None, "concurrency": 1, "stale_after": 60.0} | change
    assert_problem(http.post("/workers/w1/register", json=body), 422, field=field)
    assert repo.workers() == []


def test_a_heartbeat_with_counters_past_the_registrys_columns_is_accepted(http, repo):
    http.post("/workers/w1/register", json={"host": "h", "pid": 1, "concurrency": 1, "stale_after": 60.0})
    response = http.post("/workers/w1/seen", json={"running": 0, "completed": 2**31, "failed": 2**62})
    assert response.status_code == 204, response.text
    (worker,) = repo.workers()
    assert (worker.completed, worker.failed) == (2**31, 2**62)


@pytest.mark.parametrize("query", ["type=a%00b", "type=", "type=%20", "type=" + "x" * 256])
def test_a_list_filtered_by_a_type_no_job_can_have_is_a_422_naming_it(http, repo, query):
    # A NUL was a database error on PostgreSQL (a 422 naming no field) and an empty page on SQLite.
    repo.create("echo")
    assert_problem(http.get(f"/jobs?{query}"), 422, field="type")


def test_an_idempotency_key_holding_a_nul_is_a_422_naming_it_and_writes_nothing(http, repo):
    response = http.post("/jobs", json={"type": "echo", "idempotency_key": "k\x00"})
    assert_problem(response, 422, field="idempotency_key")
    assert sum(repo.counts().values()) == 0


@pytest.mark.parametrize(
    ("key", "code"), [("k\x01", "'\\x01'"), ("k\tx", "'\\t'"), ("k\n", "'\\n'"), ("k\x85", "'\\x85'")]
)
def test_an_idempotency_key_with_a_control_character_is_refused_as_nul_is_in_body_and_header(http, repo, key, code):
    # NUL was refused while \x01, a tab or a line break was stored, to come back in headers and the console.
    body = assert_problem(
        http.post("/jobs", json={"type": "echo", "idempotency_key": key}), 422, field="idempotency_key"
    )
    header = http.post("/jobs", json={"type": "echo"}, headers=[(b"Idempotency-Key", key.encode())])
    for problem in (body, assert_problem(header, 422, field="idempotency_key")):
        assert f"holds the non-printable character {code} at position 2" in problem["detail"], problem
    assert sum(repo.counts().values()) == 0


def test_two_idempotency_key_headers_are_a_422_as_a_query_parameter_given_twice_is(http, repo):
    # The first was used in silence: a client whose proxy added a second key enqueued under one it never chose.
    headers = [(b"Idempotency-Key", b"one"), (b"Idempotency-Key", b"two")]
    problem = assert_problem(http.post("/jobs", json={"type": "echo"}, headers=headers), 422, field="idempotency_key")
    assert "the Idempotency-Key header is given 2 times; give it once" in problem["detail"]
    assert sum(repo.counts().values()) == 0
    one = http.post("/jobs", json={"type": "echo"}, headers=[(b"Idempotency-Key", b"one")])
    assert one.status_code == 201 and one.json()["idempotency_key"] == "one"


@pytest.mark.parametrize(
    ("priority", "sent"),
    [(None, "null"), (True, "true"), (1.5, "1.5"), ([20], "[20]"), ({"level": "high"}, '{"level": "high"}')],
)
def test_a_priority_of_another_json_type_is_named_as_the_json_sent(http, repo, priority, sent):
    # "unknown priority None" named what a JSON client sent in Python's words (null), {'level': ...} too.
    response = http.post("/jobs", json={"type": "echo", "priority": priority})
    problem = assert_problem(response, 422, field="priority")
    assert problem["errors"][0]["message"] == f"must be one of low, medium, high, critical or an integer, not {sent}"
    assert "None" not in problem["detail"] and sum(repo.counts().values()) == 0


def test_a_bad_timeout_says_to_leave_it_out_for_no_limit_not_to_send_none(http, repo):
    problem = assert_problem(http.post("/jobs", json={"type": "echo", "timeout": -1.0}), 422, field="timeout")
    assert "or left out for no limit" in problem["detail"] and "None" not in problem["detail"], problem
    assert http.post("/jobs", json={"type": "echo", "timeout": None}).json()["timeout"] is None


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b'{"type": "t\xff"}', "not UTF-8 text (byte 11"),
        (b'{"type": "t", "payload": {"a": ' + b"[" * 5000 + b"]" * 5000 + b"}}", "nests arrays and objects too deep"),
        (b'{"type": "t", "payload": {"n": ' + b"9" * 5000 + b"}}", "a number in the body has more than 4300 digits"),
    ],
    ids=["latin-1 byte", "deep", "5000 digits"],
)
def test_a_body_that_cannot_be_decoded_says_why(http, repo, body, says):
    # FastAPI's own 400 said only "there was an error parsing the body" of a body that was JSON.
    problem = assert_problem(http.post("/jobs", content=body, headers=JSON_BODY), 400)
    assert says in problem["detail"] and problem["type"] == wire.MALFORMED_JSON
    assert "sys." not in problem["detail"]  # Python's own hint, to call sys.set_int_max_str_digits()
    assert sum(repo.counts().values()) == 0


@pytest.mark.parametrize("path", ["/jobs", "/jobs/claim", "/jobs/bulk/retry", "/workers/w1/register", "/jobs/reap"])
@pytest.mark.parametrize("headers", [{}, JSON_BODY])
def test_a_route_sent_no_body_says_to_send_a_json_object(http, repo, path, headers):
    # `curl -X POST` without -d: the 422 said "body: Field required", naming nothing to send or how.
    problem = assert_problem(http.post(path, content=b"", headers=headers), 422, field="body")
    assert "send this route's fields as a JSON object" in problem["detail"]
    assert "Content-Type: application/json" in problem["detail"] and repo.counts()["pending"] == 0


def test_an_unknown_bulk_action_names_the_three_there_are(http, repo):
    repo.create("echo")
    problem = assert_problem(http.post("/jobs/bulk/remove", json={"query": "type:echo"}), 422, field="action")
    assert problem["errors"][0]["message"] == "Input should be 'retry', 'cancel' or 'delete'"  # it was a regex
    assert repo.counts()["pending"] == 1
