"""HEAD on the API: load balancers and uptime checkers probe ``/healthz`` (and scrapers ``/metrics``) with
HEAD. Every GET route answers it as GET does, status and headers, with no body; it was a 405."""

from __future__ import annotations

import asyncio
import re

import httpx
import peewee as pw
import pytest
from fastapi.testclient import TestClient
from live_server import LiveServer

from queue_core.server.app import create_app

FULL, READ = "full-token", "read-token"


@pytest.fixture
def app(repo):
    return create_app(repo)


@pytest.fixture
def http(app):
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


def get_paths(http) -> list[str]:
    """Every GET route of the schema, its path parameters filled with 1."""
    spec = http.get("/openapi.json").json()
    return [re.sub(r"\{[^}]*\}", "1", path) for path, item in spec["paths"].items() if "get" in item]


def http_scope(method: str, path: str, headers: list[tuple[bytes, bytes]] = ()) -> dict:
    """The ASGI scope of a request as uvicorn makes it (``headers`` after Host)."""
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"testserver"), *headers],
        "client": ("127.0.0.1", 1234),
        "server": ("testserver", 80),
        "state": {},
    }


def asgi(app, method: str, path: str) -> tuple[dict, bytes]:
    """The response start message and the body bytes the app sends: what a server would put on the wire
    (the TestClient drops a HEAD response's body itself, so it cannot show one was sent)."""
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    asyncio.run(app(http_scope(method, path), receive, send))
    start = next(message for message in sent if message["type"] == "http.response.start")
    body = b"".join(message.get("body", b"") for message in sent if message["type"] == "http.response.body")
    return start, body


def test_head_healthz_is_200_with_the_headers_of_get_and_no_body(app, http):
    response = http.head("/healthz")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    start, body = asgi(app, "HEAD", "/healthz")
    _, get_body = asgi(app, "GET", "/healthz")
    assert start["status"] == 200 and body == b""
    assert dict(start["headers"])[b"content-length"] == str(len(get_body)).encode()


def test_head_healthz_is_503_when_the_database_is_unreachable(tmp_path):
    unreachable = pw.SqliteDatabase(str(tmp_path))  # a directory: every connection attempt fails
    app = create_app(unreachable)
    with TestClient(app, raise_server_exceptions=False) as http:
        response = http.head("/healthz")
        assert response.status_code == 503
        assert response.headers["retry-after"] == "1"
    start, body = asgi(app, "HEAD", "/healthz")
    assert start["status"] == 503 and body == b""


def test_every_get_route_answers_head_with_gets_status(app, http, repo):
    repo.create("t", {"a": 1})
    paths = get_paths(http)
    assert {"/healthz", "/metrics", "/stats", "/jobs", "/jobs/1"} <= set(paths)
    for path in [*paths, "/jobs/999", "/openapi.json"]:
        got = http.get(path)
        head = http.head(path)
        assert (head.status_code, head.headers["content-type"]) == (got.status_code, got.headers["content-type"])
        start, body = asgi(app, "HEAD", path)
        assert (start["status"], body) == (got.status_code, b""), path


def test_head_is_in_allow_where_get_is_and_still_405_where_it_is_not(http):
    refused = http.post("/healthz")
    assert refused.status_code == 405 and refused.headers["allow"] == "GET, HEAD"
    assert http.head("/jobs/claim").status_code == 405
    assert http.head("/jobs/claim").headers["allow"] == "POST"
    assert http.head("/nope").status_code == 404


def test_head_keeps_the_tokens_rules(repo):
    with TestClient(create_app(repo, token=FULL, read_token=READ), raise_server_exceptions=False) as http:
        assert http.head("/healthz").status_code == 200  # open to probes, as GET is
        assert http.head("/metrics").status_code == 401
        assert http.head("/metrics", headers={"Authorization": f"Bearer {READ}"}).status_code == 200
        assert http.head("/stats", headers={"Authorization": f"Bearer {FULL}"}).status_code == 200


def test_a_live_server_answers_a_head_probe(db_url):
    with LiveServer(db_url) as server:
        response = httpx.head(f"{server.url}/healthz", timeout=10)
        assert response.status_code == 200 and response.content == b""
        assert response.headers["content-type"] == "application/json"
