"""Query parameters a route does not take, or takes once, are refused with a 422 naming them.

A parameter the route ignored used to be dropped in silence: ``POST /jobs/bulk/delete?dry_run=true`` deleted
the jobs it was only meant to count, ``?worker_id=`` on an ack left it unfenced, and ``GET /jobs?queue=mail``
(or a misspelt ``?stauts=``) listed every job as if it were the filtered page.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from test_server import assert_problem

from queue_core.server.app import create_app


@pytest.fixture
def http(repo):
    with TestClient(create_app(repo), raise_server_exceptions=False) as client:
        yield client


def test_a_dry_run_asked_in_the_query_string_deletes_nothing(http, repo):
    job, _ = repo.create("report")
    response = http.post("/jobs/bulk/delete?dry_run=true", json={"query": "type:report"})
    problem = assert_problem(response, 422, field="dry_run")
    assert "JSON body" in problem["detail"]
    assert repo.find_by_id(job.id) is not None


def test_an_ack_fenced_in_the_query_string_is_refused_not_applied_unfenced(http, repo):
    repo.create("echo")
    held = repo.claim("w1")
    response = http.post(f"/jobs/{held.id}/complete?worker_id=w2&attempt=1")
    assert_problem(response, 422, field="worker_id")
    assert repo.find_by_id(held.id).status == "running"


@pytest.mark.parametrize("query", ["stauts=failed", "queue=mail", "status=failed&page=2"])
def test_a_filter_the_listing_does_not_take_is_refused(http, repo, query):
    repo.create("echo")
    problem = assert_problem(http.get(f"/jobs?{query}"), 422)
    assert "status, type, limit, after" in problem["detail"]


@pytest.mark.parametrize(
    ("query", "field"), [("status=pending&status=running", "status"), ("limit=1&limit=2", "limit")]
)
def test_a_parameter_given_twice_is_refused(http, repo, query, field):
    repo.create("echo")
    problem = assert_problem(http.get(f"/jobs?{query}"), 422, field=field)
    assert "2 times" in problem["detail"]


def test_the_parameters_a_route_takes_still_work(http, repo):
    repo.create("echo")
    repo.create("echo")
    page = http.get("/jobs?status=pending&type=echo&limit=1&after=0")
    assert page.status_code == 200 and len(page.json()["jobs"]) == 1


def test_a_health_probe_with_a_query_string_still_answers(http):
    # Uptime checkers add cache-busting parameters; the probe takes none and ignores them.
    assert http.get("/healthz?nocache=123").status_code == 200


# --- a body sent to a route that takes none -------------------------------------------------------------


def test_a_field_sent_to_a_route_without_a_body_is_refused_and_nothing_is_done(http, repo):
    job, _ = repo.create("echo", max_retries=0)
    repo.claim("w1")
    repo.fail(job.id, "boom")
    response = http.post(f"/jobs/{job.id}/retry", json={"max_retries": 10})
    problem = assert_problem(response, 422, field="max_retries")
    assert "takes no body" in problem["detail"]
    assert repo.find_by_id(job.id).status == "failed"


def test_a_body_that_is_not_json_sent_to_a_route_without_a_body_is_refused(http, repo):
    job, _ = repo.create("echo")
    response = http.post(f"/jobs/{job.id}/cancel", content=b"now please", headers={"content-type": "text/plain"})
    assert_problem(response, 422, field="body")
    assert repo.find_by_id(job.id).status == "pending"


@pytest.mark.parametrize("body", [b"", b"{}", b" { } "])
def test_an_empty_body_or_object_is_still_no_body(http, repo, body):
    # HttpQueue.worker_stopped sends {}, as many clients do by default.
    job, _ = repo.create("echo")
    response = http.post(f"/jobs/{job.id}/cancel", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text
    assert http.post("/queues/mail/pause", content=body).json()["paused"] is True


def test_a_deeply_nested_body_sent_to_a_route_without_a_body_is_a_422_not_a_500(http, repo):
    job, _ = repo.create("echo")
    response = http.post(f"/jobs/{job.id}/cancel", content=b"[" * 100_000, headers={"content-type": "application/json"})
    assert_problem(response, 422, field="body")
    assert repo.find_by_id(job.id).status == "pending"
