"""The two routes only a remote worker needs: ``POST /jobs/{id}/complete-and-claim`` and ``POST /jobs/prune``."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from queue_core.server.app import create_app

DAY = 86400.0


@pytest.fixture
def http(repo):
    with TestClient(create_app(repo), raise_server_exceptions=False) as client:
        yield client


def assert_invalid(response, field: str) -> None:
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert field in [error["field"] for error in response.json()["errors"]]


def test_complete_and_claim_completes_the_held_job_and_claims_the_next_in_one_call(http, repo):
    first, _ = repo.create("a")
    second, _ = repo.create("b")
    repo.create("c")
    held = repo.claim("w1", types=["a"])
    response = http.post(f"/jobs/{held.id}/complete-and-claim", json={"worker_id": "w1", "attempt": 1, "types": ["b"]})
    assert response.status_code == 200, response.text
    data = response.json()
    assert (data["completed"]["id"], data["completed"]["status"]) == (first.id, "completed")
    claimed = data["claimed"]
    assert (claimed["id"], claimed["status"], claimed["worker_id"]) == (second.id, "running", "w1")
    completed, claimed = repo.find_by_id(first.id).to_dict(), repo.find_by_id(second.id).to_dict()
    assert data == {"completed": completed, "claimed": claimed, "refused": None}


def test_complete_and_claim_answers_null_for_a_claim_not_held_and_for_nothing_due(http, repo):
    job, _ = repo.create("a")
    repo.claim("w1")
    body = {"worker_id": "w1", "attempt": 2}  # a stale attempt: fenced off, nothing changes
    answer = http.post(f"/jobs/{job.id}/complete-and-claim", json=body).json()
    assert (answer["completed"], answer["claimed"], answer["refused"]["status"]) == (None, None, 409)
    assert repo.find_by_id(job.id).status == "running"
    answer = http.post(f"/jobs/{job.id}/complete-and-claim", json={"worker_id": "w1", "attempt": 1}).json()
    assert answer["completed"]["status"] == "completed" and answer["claimed"] is None and answer["refused"] is None


def test_complete_and_claim_says_an_unknown_id_was_not_found_and_still_hands_over_its_claim(http, repo):
    # 200, not 404: the claim is made either way, and a 404 would lose the job it claimed. The body says
    # what POST /jobs/{id}/complete says of the same ack, so a client can tell an unknown id from a lost claim.
    due, _ = repo.create("b")
    ack = {"worker_id": "w1", "attempt": 1}
    missing = http.post("/jobs/424242/complete-and-claim", json=ack)
    single = http.post("/jobs/424242/complete", json=ack)
    assert missing.status_code == 200 and single.status_code == 404
    data = missing.json()
    assert data["completed"] is None and data["claimed"]["id"] == due.id
    not_found = {
        "type": "urn:queue-core:problem:job-not-found",
        "title": "Not Found",
        "status": 404,
        "detail": "no job with id 424242",
        "job_id": 424242,
    }
    assert data["refused"] == single.json() == not_found
    assert repo.find_by_id(due.id).worker_id == "w1"


def test_complete_and_claim_says_why_a_held_elsewhere_job_was_not_completed(http, repo):
    job, _ = repo.create("a")
    repo.claim("w2")
    ack = {"worker_id": "w1", "attempt": 1}
    refused = http.post(f"/jobs/{job.id}/complete-and-claim", json=ack).json()["refused"]
    single = http.post(f"/jobs/{job.id}/complete", json=ack)
    assert single.status_code == 409 and refused == single.json()
    assert refused["type"] == "urn:queue-core:problem:job-not-held" and refused["job_id"] == job.id
    assert repo.find_by_id(job.id).worker_id == "w2"


def test_the_openapi_description_of_complete_and_claim_says_how_a_refusal_is_reported(http):
    schema = http.get("/openapi.json").json()
    route = schema["paths"]["/jobs/{job_id}/complete-and-claim"]["post"]
    assert "404" in route["description"] and "job-not-found" in route["description"]
    assert "refused" in schema["components"]["schemas"]["CompletedAndClaimed"]["properties"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"attempt": 1}, "worker_id"),
        ({"worker_id": "w1"}, "attempt"),
        ({"worker_id": "w1", "attempt": 0}, "attempt"),
        ({"worker_id": "w1", "attempt": "1"}, "attempt"),
        ({"worker_id": "w1", "attempt": 1, "types": "a"}, "types"),
        ({"worker_id": "w1", "attempt": 1, "typo": True}, "typo"),
        ({"worker_id": "", "attempt": 1}, "worker_id"),
    ],
)
def test_complete_and_claim_refuses_a_malformed_body(http, repo, body, field):
    job, _ = repo.create("a")
    repo.claim("w1")
    assert_invalid(http.post(f"/jobs/{job.id}/complete-and-claim", json=body), field)
    assert repo.find_by_id(job.id).status == "running"


def test_prune_deletes_old_finished_jobs_a_batch_at_a_time_if_asked(http, repo, clock):
    for _ in range(3):
        job, _ = repo.create("t")
        repo.claim("w")
        repo.complete(job.id)
    clock.advance(days=8)
    kept, _ = repo.create("t")
    one = http.post("/jobs/prune", json={"older_than_seconds": 7 * DAY, "batch": 1, "max_batches": 1})
    assert one.status_code == 200 and one.json() == {"pruned": 1}
    assert http.post("/jobs/prune", json={"older_than_seconds": 7 * DAY}).json() == {"pruned": 2}
    assert [job.id for job in repo.list()] == [kept.id]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "older_than_seconds"),
        ({"older_than_seconds": -1.0}, "older_than_seconds"),
        ({"older_than_seconds": 1.0, "batch": 0}, "batch"),
        ({"older_than_seconds": 1.0, "batch": 10**9}, "batch"),
        ({"older_than_seconds": 1.0, "max_batches": 0}, "max_batches"),
        ({"older_than_seconds": 1.0, "limit": 3}, "limit"),
    ],
)
def test_prune_refuses_a_malformed_body(http, body, field):
    assert_invalid(http.post("/jobs/prune", json=body), field)
