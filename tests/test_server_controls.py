"""The HTTP API of issue 13 (both backends): queues, pause and resume, cancel, the registry, and the remote
worker's routes for them; status codes, problem+json, and the OpenAPI schema."""

from __future__ import annotations

from datetime import timedelta

import pytest
from test_server import app, assert_problem, claim, enqueue, http  # noqa: F401 (fixtures and helpers)


def test_create_takes_a_queue_and_a_timeout_and_claims_limit_to_queues(http):  # noqa: F811
    mail = enqueue(http, queue="mail", timeout=2.5)
    plain = enqueue(http)
    assert (mail["queue"], mail["timeout"], plain["queue"], plain["timeout"]) == ("mail", 2.5, "default", None)
    assert mail["cancel_requested"] is False and mail["cancel_requested_at"] is None and mail["result"] is None
    assert claim(http, queues=["mail"])["id"] == mail["id"]
    assert http.post("/jobs/claim", json={"worker_id": "w1", "queues": ["mail"]}).status_code == 204
    many = http.post("/jobs/claim-many", json={"worker_id": "w2", "n": 5, "queues": ["default"]}).json()["jobs"]
    assert [job["id"] for job in many] == [plain["id"]]


def test_bad_queue_names_are_422_naming_the_field(http):  # noqa: F811
    assert_problem(http.post("/jobs", json={"type": "t", "queue": ""}), 422, field="queue")
    assert_problem(http.post("/jobs", json={"type": "t", "queue": "x" * 256}), 422, field="queue")
    assert_problem(http.post("/jobs/claim", json={"worker_id": "w", "queues": ["\x07"]}), 422, field="queues.0")
    assert_problem(http.post("/queues/%20/pause"), 422, field="name")
    assert_problem(http.post("/queues/bell%07/resume"), 422, field="name")
    assert http.get("/queues").json() == {"queues": []}


def test_pause_resume_and_list_queues(http, repo, clock):  # noqa: F811
    enqueue(http, queue="mail")
    clock.advance(4)
    paused = http.post("/queues/mail/pause")
    assert paused.status_code == 200
    assert paused.json() == {
        "name": "mail",
        "paused": True,
        "counts": {"pending": 1, "running": 0, "completed": 0, "failed": 0, "cancelled": 0},
        "latency": 4.0,
    }
    assert http.post("/jobs/claim", json={"worker_id": "w"}).status_code == 204
    assert http.post("/queues/not-yet/pause").json()["paused"] is True  # an unknown queue is fine
    assert [(q["name"], q["paused"]) for q in http.get("/queues").json()["queues"]] == [
        ("mail", True),
        ("not-yet", True),
    ]
    assert http.post("/queues/mail/resume").json()["paused"] is False
    assert claim(http)["queue"] == "mail"


def test_cancel_pending_running_final_and_unknown(http, repo):  # noqa: F811
    pending = enqueue(http)
    response = http.post(f"/jobs/{pending['id']}/cancel")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    problem = assert_problem(http.post(f"/jobs/{pending['id']}/cancel"), 409)
    assert problem["type"] == "urn:queue-core:problem:job-already-final" and "cancelled" in problem["detail"]
    assert_problem(http.post("/jobs/987654/cancel"), 404)

    enqueue(http)
    running = claim(http, "w1")
    requested = http.post(f"/jobs/{running['id']}/cancel").json()
    assert requested["status"] == "running" and requested["cancel_requested"] is True
    assert http.post("/jobs/cancel-requests", json={"worker_id": "w1", "job_ids": [running["id"], 5]}).json() == {
        "ids": [running["id"]]
    }
    wrong = http.post(f"/jobs/{running['id']}/cancelled", json={"worker_id": "w2", "attempt": running["attempt"]})
    assert "held by worker" in assert_problem(wrong, 409)["detail"]
    assert_problem(http.post("/jobs/987654/cancelled", json={"worker_id": "w1", "attempt": 1}), 404)
    done = http.post(f"/jobs/{running['id']}/cancelled", json={"worker_id": "w1", "attempt": running["attempt"]})
    assert done.status_code == 200 and done.json()["status"] == "cancelled"
    assert http.post(f"/jobs/{running['id']}/retry").json()["status"] == "pending"
    assert http.get("/stats").json()["counts"]["cancelled"] == 1


def test_a_cancelled_ack_without_a_request_is_409(http):  # noqa: F811
    enqueue(http)
    running = claim(http, "w1")
    body = {"worker_id": "w1", "attempt": running["attempt"]}
    assert (
        "no cancel was requested"
        in assert_problem(http.post(f"/jobs/{running['id']}/cancelled", json=body), 409)["detail"]
    )


def test_the_registry_routes_of_a_remote_worker_and_the_workers_list(http, clock):  # noqa: F811
    body = {"host": "box", "pid": 7, "queues": ["mail"], "concurrency": 2, "stale_after": 5.0}
    assert http.post("/workers/remote-1/register", json=body).status_code == 204
    assert http.post("/workers/remote-2/register", json={**body, "queues": "*"}).status_code == 204
    seen = http.post("/workers/remote-1/seen", json={"running": 1, "completed": 3, "failed": 0})
    assert seen.status_code == 204
    assert http.post("/workers/remote-2/stopped").status_code == 204
    # A worker id may hold a slash (quoted in the path by the client).
    assert http.post("/workers/host%2F1/register", json=body).status_code == 204
    assert_problem(http.post("/workers/%20/stopped"), 422, field="worker_id")
    # Ids and hosts are shown in the CLI's tables and the console: a control character would act on the
    # operator's terminal (an escape sequence, a line break in the middle of a table).
    assert_problem(http.post("/workers/line%0Abreak/stopped"), 422, field="worker_id")
    assert_problem(http.post("/workers/%1B%5B31mW/register", json=body), 422, field="worker_id")
    assert_problem(http.post("/workers/w9/register", json={**body, "host": "h\u001b[2J"}), 422, field="host")
    claim = {"worker_id": "\u001b[31mEVIL\u001b[0m", "types": ["esc"]}
    assert_problem(http.post("/jobs/claim", json=claim), 422, field="worker_id")
    assert http.post("/queues/team%2Fmail/pause").json()["name"] == "team/mail"
    clock.advance(timedelta(seconds=6).total_seconds())
    workers = http.get("/workers").json()["workers"]
    assert [(w["id"], w["state"], w["queues"], w["completed"]) for w in workers] == [
        ("host/1", "lost", ["mail"], 0),
        ("remote-1", "lost", ["mail"], 3),
        ("remote-2", "stopped", "*", 0),
    ]
    assert workers[1]["silent_for"] == 6.0
    assert_problem(http.post("/workers/w/register", json={**body, "concurrency": 0}), 422, field="concurrency")
    assert_problem(http.post("/workers/w/seen", json={"running": -1, "completed": 0, "failed": 0}), 422)


@pytest.mark.parametrize("field", ["queues", "types"])
def test_a_registration_names_at_most_1000_queues_or_types_as_a_claim_does(http, field):  # noqa: F811
    # 100,000 queue names were a 204, and every GET /workers after it sent them all (1.8 MB).
    body = {"host": "box", "pid": 7, "queues": None, "concurrency": 2, "stale_after": 5.0}
    problem = assert_problem(
        http.post("/workers/w/register", json={**body, field: [f"n{i}" for i in range(1001)]}), 422, field=field
    )
    assert problem["errors"] == [{"field": field, "message": f"names 1001 {field}; a claim takes at most 1000"}]
    assert http.get("/workers").json() == {"workers": []}
    assert http.post("/workers/w/register", json={**body, field: [f"n{i}" for i in range(1000)]}).status_code == 204


def test_a_heartbeat_or_stop_of_an_unregistered_worker_is_404_saying_to_register_first(http):  # noqa: F811
    """It was a 204 that recorded nothing: the worker never learned that no operator could see it."""
    seen = http.post("/workers/ghost/seen", json={"running": 1, "completed": 2, "failed": 0})
    problem = assert_problem(seen, 404)
    assert problem["type"] == "urn:queue-core:problem:worker-not-registered"
    assert "no worker registered with id 'ghost'" in problem["detail"] and "register it first" in problem["detail"]
    assert assert_problem(http.post("/workers/ghost/stopped"), 404)["type"] == problem["type"]
    assert http.get("/workers").json() == {"workers": []}  # nothing made up
    body = {"host": "box", "pid": 7, "queues": None, "concurrency": 1, "stale_after": 5.0}
    assert http.post("/workers/ghost/register", json=body).status_code == 204
    assert http.post("/workers/ghost/seen", json={"running": 1, "completed": 2, "failed": 0}).status_code == 204
    assert http.post("/workers/ghost/stopped").status_code == 204
    [worker] = http.get("/workers").json()["workers"]
    assert (worker["id"], worker["state"], worker["completed"]) == ("ghost", "stopped", 2)
    responses = http.get("/openapi.json").json()["paths"]["/workers/{worker_id}/seen"]["post"]["responses"]
    assert "register it first" in responses["404"]["description"]


def test_openapi_documents_the_new_routes_and_fields(http):  # noqa: F811
    schema = http.get("/openapi.json").json()
    for path in (
        "/queues",
        "/queues/{name}/pause",
        "/queues/{name}/resume",
        "/workers",
        "/workers/{worker_id}/register",
        "/workers/{worker_id}/seen",
        "/workers/{worker_id}/stopped",
        "/jobs/{job_id}/cancel",
        "/jobs/{job_id}/cancelled",
        "/jobs/cancel-requests",
    ):
        assert path in schema["paths"], path
    assert {"404", "409"} <= set(schema["paths"]["/jobs/{job_id}/cancel"]["post"]["responses"])
    job = schema["components"]["schemas"]["JobOut"]["properties"]
    assert {"queue", "cancel_requested_at", "cancel_requested", "result", "timeout"} <= set(job)
    assert "queues" in schema["components"]["schemas"]["ClaimJob"]["properties"]
    assert "queue" in schema["components"]["schemas"]["CreateJob"]["properties"]
