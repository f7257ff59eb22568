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
