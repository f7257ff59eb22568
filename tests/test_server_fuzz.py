"""Schemathesis fuzzing of the HTTP API from its own OpenAPI document.

Valid and invalid requests generated from ``/openapi.json`` must never get a 500, and every response
must match what the document promises: a documented status code, the documented content type
(problem+json for errors) and a body that fits the schema. Issue 18: against a seeded database, a refused
request (4xx) leaves every table as it was.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from support import every_row

from queue_core.server.app import create_app

# Enough to reach every branch of the small schemas; the whole module stays well under a minute.
FUZZ_SETTINGS = settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture
def api_schema(repo):
    """Jobs in each state a route acts on, so paths with ids sometimes hit a real job (200/409) and not only
    404: a failed job (id 1) on a paused queue, three pending with idempotency keys, one of them running
    (id 2), and the worker that holds it registered."""
    failed, _ = repo.create("echo", {"n": 0}, queue="reports", max_retries=0)
    claimed = repo.claim("seed-worker")
    repo.fail(failed.id, "boom", worker_id="seed-worker", attempt=claimed.attempt)
    for i in range(3):
        repo.create("echo", {"n": i}, idempotency_key=f"seed-{i}")
    repo.claim("seed-worker")
    repo.pause_queue("reports")
    return schemathesis.openapi.from_asgi("/openapi.json", create_app(repo))


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@FUZZ_SETTINGS
def test_no_input_gets_a_500_a_response_off_the_schema_or_a_write_when_refused(case, repo):
    before = every_row(repo)
    # Every check but "schema-valid data must be accepted": the repository's rules go beyond what a JSON
    # schema can say (a printable type, a JSON-safe payload, header and body keys that agree), and
    # their 422 is documented. Negative data must still be rejected, with a documented problem.
    response = case.call_and_validate(excluded_checks=[schemathesis.checks.positive_data_acceptance])
    assert response.status_code < 500, response.text
    if 400 <= response.status_code < 500:
        assert response.headers["content-type"] == ["application/problem+json"], response.text
        assert every_row(repo) == before, (case.method, case.path, response.status_code, response.text)
