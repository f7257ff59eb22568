"""A token that can only read (issue 18): GET routes and /metrics answer, every write is a 403 with nothing
written, and neither token ever reaches the server's log."""

from __future__ import annotations

import re

import httpx
import pytest
from fastapi.testclient import TestClient
from live_server import LiveServer, run_module
from support import every_row

from queue_core.server.app import create_app

FULL, READ = "full-S3CRET-token", "read-S3CRET-token"
PROBLEM = "application/problem+json"


@pytest.fixture
def http(repo):
    with TestClient(create_app(repo, token=FULL, read_token=READ), raise_server_exceptions=False) as client:
        yield client


def operations(http) -> list[tuple[str, str]]:
    """Every (method, path) of the schema, path parameters filled with a value each route accepts as a name."""
    spec = http.get("/openapi.json", headers={"Authorization": f"Bearer {FULL}"}).json()
    found = []
    for path, item in spec["paths"].items():
        concrete = re.sub(r"\{[^}]*\}", "1", path)
        found += [(method.upper(), concrete) for method in item]
    return found


def test_the_read_token_reads_every_get_route_and_metrics(http, repo):
    repo.create("t", {"a": 1})
    gets = [path for method, path in operations(http) if method == "GET"]
    assert "/metrics" in gets and "/jobs" in gets
    for path in gets:
        response = http.get(path, headers={"Authorization": f"Bearer {READ}"})
        assert response.status_code not in (401, 403, 500), (path, response.text)
    assert http.get("/openapi.json", headers={"Authorization": f"Bearer {READ}"}).status_code == 200


def test_every_write_with_the_read_token_is_a_403_and_writes_nothing(http, repo):
    repo.create("t", {"a": 1})
    before = every_row(repo)
    writes = [(method, path) for method, path in operations(http) if method not in ("GET", "HEAD")]
    assert ("POST", "/jobs") in writes and len(writes) >= 10
    for method, path in writes:
        response = http.request(method, path, json={"type": "t"}, headers={"Authorization": f"Bearer {READ}"})
        assert response.status_code == 403, (method, path, response.text)
        assert response.headers["content-type"] == PROBLEM
        problem = response.json()
        assert problem["type"] == "urn:queue-core:problem:read-only-token"
        assert "read-only token" in problem["detail"] and READ not in response.text
    assert every_row(repo) == before
    # The full token still writes, so the 403s above were the read token's, not a broken route's.
    assert http.post("/jobs", json={"type": "t"}, headers={"Authorization": f"Bearer {FULL}"}).status_code == 201


@pytest.mark.parametrize("header", [None, "Bearer wrong", f"Bearer {READ[:-1]}", f"Bearer {READ} ", READ])
def test_anything_but_the_two_tokens_is_still_a_401(http, header):
    headers = {"Authorization": header} if header else {}
    assert http.get("/stats", headers=headers).status_code == 401
    assert http.post("/jobs", json={"type": "t"}, headers=headers).status_code == 401


def test_a_read_token_needs_a_token_for_writes(repo):
    with pytest.raises(ValueError, match="needs a token"):
        create_app(repo, read_token=READ)


@pytest.mark.parametrize(
    ("args", "env", "words"),
    [
        (["--read-token", READ], {}, ("read token needs a full token", "--token")),
        (["--token", FULL, "--read-token", FULL], {}, ("must differ",)),
        ([], {"QUEUE_API_READ_TOKEN": READ}, ("read token needs a full token",)),
        (["--token", FULL], {"QUEUE_API_READ_TOKEN": "sécret"}, ("QUEUE_API_READ_TOKEN", "ASCII")),
        (["--token", FULL, "--read-token", "two words"], {}, ("--read-token", "ASCII")),
    ],
)
def test_bad_token_settings_are_one_line_exit_2(tmp_path, args, env, words):
    result = run_module("queue_core.server", "--db", f"sqlite:///{tmp_path / 'q.db'}", *args, **env)
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr
    assert all(word in lines[-1] for word in words), result.stderr
    assert FULL not in result.stderr and READ not in result.stderr


def test_tokens_from_the_environment_and_never_in_the_log(db_url):
    env = {"QUEUE_API_TOKEN": FULL, "QUEUE_API_READ_TOKEN": READ}
    with LiveServer(db_url, "--log-level", "debug", env=env) as live:
        read, full = ({"Authorization": f"Bearer {token}"} for token in (READ, FULL))
        assert httpx.get(f"{live.url}/stats", headers=read).status_code == 200
        assert httpx.get(f"{live.url}/metrics", headers=read).status_code == 200
        assert httpx.post(f"{live.url}/jobs", json={"type": "t"}, headers=read).status_code == 403
        assert httpx.post(f"{live.url}/jobs", json={"type": "t"}, headers=full).status_code == 201
        assert httpx.get(f"{live.url}/stats", headers={"Authorization": f"Bearer {READ}x"}).status_code == 401
        log = live.stop()
    assert '"POST /jobs HTTP/1.1" 403' in log and '"GET /metrics HTTP/1.1" 200' in log  # the log was captured
    assert FULL not in log and READ not in log and "S3CRET" not in log
