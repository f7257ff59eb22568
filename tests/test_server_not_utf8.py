"""A path (or query string) that is not UTF-8 once percent-decoded is a 400 saying so, and nothing is written.

The server decodes a request target with U+FFFD for each bad byte: ``POST /queues/%FF/pause`` answered 200
and paused a queue named "\\ufffd", ``/workers/%FF/register`` 204 and ``/schedules/%FF/ticks`` 201, each
under a name no one can type again (the admin CLI refuses such names); ``%C0%80`` (an over-long NUL) alike.
"""

from __future__ import annotations

from urllib.parse import unquote

import pytest
from fastapi.testclient import TestClient

from queue_core.server.app import create_app

pytestmark = pytest.mark.backends("sqlite")  # refused before any route runs: no database is touched

PROBLEM = "application/problem+json"
NOT_UTF8 = ["%FF", "%C0%80", "%ED%A0%80", "ok%E9"]  # a stray byte, an over-long NUL, a surrogate, Latin-1 é
REGISTER = {"host": "h", "pid": 1, "queues": None, "concurrency": 1, "stale_after": 30}
TICK = {"tick": "2026-01-02T03:00:00Z", "type": "t", "idempotency_key": "periodic:x"}
ROUTES = [
    ("POST", "/queues/{}/pause", None),
    ("POST", "/queues/{}/resume", None),
    ("POST", "/workers/{}/register", REGISTER),
    ("POST", "/workers/{}/seen", {"running": 0, "completed": 0, "failed": 0}),
    ("POST", "/workers/{}/stopped", None),
    ("GET", "/workers/{}/held", None),
    ("POST", "/schedules/{}/ticks", TICK),
    ("GET", "/no-such-route/{}", None),
]


@pytest.fixture
def http(repo):
    with TestClient(create_app(repo), raise_server_exceptions=False) as client:
        yield client


def everything(repo) -> tuple:
    meta = repo.SchemaMeta
    ticks = [row.key for row in meta.select().where(meta.key.startswith("tick:"))]
    return repo.list(), repo.queues(), repo.workers(), ticks


@pytest.mark.parametrize("name", NOT_UTF8)
@pytest.mark.parametrize(("method", "path", "body"), ROUTES, ids=[f"{m} {p}" for m, p, _ in ROUTES])
def test_a_name_in_a_path_that_is_not_utf8_is_a_400_and_nothing_is_written(http, repo, method, path, body, name):
    # Registered under the name the server read before (U+FFFD for each bad byte): /seen and /stopped found it.
    repo.register_worker(unquote(name), host="h", pid=1, queues=None, concurrency=1, stale_after=30)
    before = everything(repo)
    response = http.request(method, path.format(name), json=body)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == PROBLEM
    problem = response.json()
    assert problem["status"] == 400 and "not UTF-8" in problem["detail"] and name in problem["detail"]
    assert "percent-encode" in problem["detail"] and "Traceback" not in response.text
    assert everything(repo) == before


def test_head_of_a_path_not_utf8_is_a_400_without_a_body(http):
    response = http.head("/workers/%FF/held")
    assert response.status_code == 400 and response.content == b""


def test_a_query_string_not_utf8_is_a_400_but_healthz_ignores_its_query(http, repo):
    repo.create("\ufffd")
    response = http.get("/jobs?type=%FF")
    assert response.status_code == 400 and "query string" in response.json()["detail"], response.text
    assert http.get("/healthz?cache=%FF").status_code == 200


def test_utf8_names_in_a_path_still_work(http, repo):
    paused = http.post("/queues/caf%C3%A9/pause")
    assert paused.status_code == 200 and paused.json()["name"] == "café"
    assert http.post("/workers/w%E2%82%AC/register", json=REGISTER).status_code == 204
    assert [worker.id for worker in repo.workers()] == ["w€"]
    assert http.get("/jobs?type=caf%C3%A9&status=pending").status_code == 200
