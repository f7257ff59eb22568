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
    assert data == {"completed": repo.find_by_id(first.id).to_dict(), "claimed": repo.find_by_id(second.id).to_dict()}


def test_complete_and_claim_answers_null_for_a_claim_not_held_and_for_nothing_due(http, repo):
    job, _ = repo.create("a")
    repo.claim("w1")
    body = {"worker_id": "w1", "attempt": 2}  # a stale attempt: fenced off, nothing changes
    assert http.post(f"/jobs/{job.id}/complete-and-claim", json=body).json() == {"completed": None, "claimed": None}
    assert repo.find_by_id(job.id).status == "running"
    answer = http.post(f"/jobs/{job.id}/complete-and-claim", json={"worker_id": "w1", "attempt": 1}).json()
    assert answer["completed"]["status"] == "completed" and answer["claimed"] is None
    missing = http.post("/jobs/424242/complete-and-claim", json={"worker_id": "w1", "attempt": 1})
    assert missing.status_code == 200 and missing.json() == {"completed": None, "claimed": None}


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
