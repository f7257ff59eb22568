"""``POST /jobs/bulk/{action}`` (issue 16, both backends): dry run, apply, the selection, problem+json 422 on
bad input with nothing changed, the token, and the OpenAPI schema."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from test_server import app, assert_problem, http  # noqa: F401 (fixtures and helpers)

from queue_core.server.app import create_app


def fail_jobs(repo, type, n):
    ids = []
    for _ in range(n):
        job, _ = repo.create(type, max_retries=0)
        claimed = repo.claim("w", types=[type])
        repo.fail(job.id, f"card {job.id} declined", worker_id="w", attempt=claimed.attempt)
        ids.append(job.id)
    return ids


def test_dry_run_counts_and_retry_applies(http, repo):  # noqa: F811
    invoices = fail_jobs(repo, "send-invoice", 3)
    fail_jobs(repo, "other", 1)
    body = {"query": "type:send-invoice", "status": "failed", "dry_run": True}
    response = http.post("/jobs/bulk/retry", json=body)
    assert response.status_code == 200, response.text
    assert response.json() == {
        "action": "retry",
        "query": "type:send-invoice",
        "description": "3 failed jobs matching type:send-invoice",
        "dry_run": True,
        "planned": 3,
        "changed": 0,
        "skipped": 0,
    }
    assert repo.counts()["failed"] == 4
    done = http.post("/jobs/bulk/retry", json={**body, "dry_run": False}).json()
    assert (done["planned"], done["changed"], done["skipped"], done["dry_run"]) == (3, 3, 0, False)
    assert [repo.find_by_id(i).status for i in invoices] == ["pending"] * 3
    assert repo.counts()["failed"] == 1


def test_cancel_and_delete_with_a_selection(http, repo):  # noqa: F811
    jobs = [repo.create("t")[0] for _ in range(4)]
    chosen = [jobs[0].id, jobs[2].id]
    result = http.post("/jobs/bulk/cancel", json={"query": "type:t", "ids": chosen}).json()
    assert (result["planned"], result["changed"]) == (2, 2)
    assert [repo.find_by_id(job.id).status for job in jobs] == ["cancelled", "pending", "cancelled", "pending"]
    result = http.post("/jobs/bulk/delete", json={"status": "cancelled"}).json()
    assert (result["planned"], result["changed"]) == (2, 2)
    assert sorted(job.id for job in repo.list()) == [jobs[1].id, jobs[3].id]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/jobs/bulk/retry", {"query": "colour:red"}, "query"),
        ("/jobs/bulk/retry", {"query": 'error:"open'}, "query"),
        ("/jobs/bulk/retry", {"query": "status:lost"}, "query"),
        ("/jobs/bulk/delete", {"query": "   "}, "query"),
        ("/jobs/bulk/delete", {}, "query"),
        ("/jobs/bulk/retry", {"query": "type:t", "status": "lost"}, "status"),
        ("/jobs/bulk/retry", {"query": "type:t", "ids": ["7"]}, "ids.0"),
        ("/jobs/bulk/retry", {"query": "type:t", "ids": [0]}, "ids.0"),
        ("/jobs/bulk/retry", {"query": "type:t", "dryrun": True}, "dryrun"),
        ("/jobs/bulk/retry", {"query": 7}, "query"),
        ("/jobs/bulk/retry", {"query": "type:t", "dry_run": 0}, "dry_run"),
        ("/jobs/bulk/explode", {"query": "type:t"}, "action"),
    ],
)
def test_bad_input_is_a_422_problem_naming_the_field_and_nothing_changes(http, repo, path, body, field):  # noqa: F811
    fail_jobs(repo, "t", 2)
    assert_problem(http.post(path, json=body), 422, field=field)
    assert repo.counts()["failed"] == 2


def test_bulk_needs_the_token(repo):
    fail_jobs(repo, "t", 1)
    with TestClient(create_app(repo, token="s3cret"), raise_server_exceptions=False) as secured:
        assert_problem(secured.post("/jobs/bulk/retry", json={"query": "type:t"}), 401)
        assert repo.counts()["failed"] == 1
        ok = secured.post("/jobs/bulk/retry", json={"query": "type:t"}, headers={"Authorization": "Bearer s3cret"})
        assert ok.json()["changed"] == 1


def test_openapi_documents_the_bulk_route(http):  # noqa: F811
    spec = http.get("/openapi.json").json()
    operation = spec["paths"]["/jobs/bulk/{action}"]["post"]
    assert set(operation["responses"]) >= {"200", "422"}
    schemas = spec["components"]["schemas"]
    assert set(schemas["BulkRequest"]["properties"]) == {"query", "status", "ids", "dry_run"}
    assert set(schemas["BulkResult"]["required"]) >= {"action", "query", "planned", "changed", "skipped"}
