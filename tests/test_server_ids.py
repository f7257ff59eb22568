"""Ids and counts the API reads from text are ASCII digits. A path's job id already was (its route matches
nothing else), but the 404 did not say so; a query's ``after`` and ``limit`` went through pydantic, which
reads ``1_000`` as 1000 and ``+1``, `` 1`` and ``1.0`` as 1; a priority went through int(), which also
reads ``１`` (full-width) as 1. Each is now a 404 or 422 saying what to send, and nothing reaches the
repository."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from queue_core.server.app import create_app

PROBLEM = "application/problem+json"


@pytest.fixture
def http(repo):
    with TestClient(create_app(repo), raise_server_exceptions=False) as client:
        yield client


def jobs(repo) -> list:
    return [job.to_dict() for job in repo.list(limit=1000)]


@pytest.mark.parametrize("job_id", ["１", "%EF%BC%91", "٣", "1_000", "+1", "1.0", "%201"])
@pytest.mark.parametrize(("method", "route"), [("GET", ""), ("POST", "/cancel"), ("POST", "/complete")])
def test_a_job_id_in_a_path_not_in_ascii_digits_is_a_404_that_says_what_an_id_is(http, repo, job_id, method, route):
    repo.create("t")
    before = jobs(repo)
    response = http.request(method, f"/jobs/{job_id}{route}")
    assert response.status_code == 404 and response.headers["content-type"] == PROBLEM, response.text
    assert "a job's id in a path is ASCII digits 0-9, e.g. /jobs/42" in response.json()["detail"]
    assert jobs(repo) == before


def test_a_path_that_is_not_about_a_job_id_gets_no_hint(http):
    # /jobs/bulk and /jobs/claims name a route (bulk/ACTION, claim), mistyped: no number was meant there.
    for path in ["/nope", "/jobs/1/explode", "/jobs/1/2/3", "/jobs/bulk", "/jobs/bulk/", "/jobs/claims"]:
        response = http.get(path)
        assert response.status_code == 404 and "ASCII digits" not in response.text, path


@pytest.mark.parametrize("value", ["1_0", "１", "+1", " 1", "1.0", "1e1"])
@pytest.mark.parametrize("name", ["after", "limit"])
def test_a_query_number_not_in_ascii_digits_is_a_422_naming_it(http, repo, name, value):
    for _ in range(3):
        repo.create("t")
    response = http.get("/jobs", params={name: value})
    assert response.status_code == 422 and response.headers["content-type"] == PROBLEM, response.text
    problem = response.json()
    assert problem["errors"] == [{"field": name, "message": "must be a whole number in ASCII digits 0-9, e.g. 42"}]


def test_query_numbers_in_ascii_digits_still_page(http, repo):
    for _ in range(3):
        repo.create("t")
    page = http.get("/jobs", params={"after": "01", "limit": "1"}).json()
    assert [job["id"] for job in page["jobs"]] == [2] and page["next_after"] == 2
    assert http.get("/jobs", params={"after": "-1"}).json()["errors"][0]["field"] == "after"  # by its range


@pytest.mark.parametrize("priority", ["１", "1_0", "٣"])
def test_a_priority_not_in_ascii_digits_is_a_422_and_nothing_is_enqueued(http, repo, priority):
    response = http.post("/jobs", json={"type": "t", "priority": priority})
    assert response.status_code == 422 and response.headers["content-type"] == PROBLEM, response.text
    assert response.json()["errors"][0]["field"] == "priority"
    assert jobs(repo) == []
    assert http.post("/jobs", json={"type": "t", "priority": " 15 "}).json()["priority"] == 15
