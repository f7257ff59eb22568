"""A server without a token and the browser (CSRF, DNS rebinding): a web page of any site the operator
visits could POST to 127.0.0.1:8000 (a form's POST needs no CORS preflight) and pause queues or cancel jobs,
and one that re-resolved its own name to 127.0.0.1 could read every job as "same origin". Without a token
such requests are a 403 with nothing written; with one, the token decides (a browser never sends it alone)."""

from __future__ import annotations

import httpx
import pytest
from fastapi.testclient import TestClient
from live_server import LiveServer

from queue_core import wire
from queue_core.server.app import create_app
from queue_core.server.browser import browser_refusal

EVIL = {"Origin": "https://evil.example"}


@pytest.fixture
def http(repo):
    app = create_app(repo, loopback=True)
    with TestClient(app, base_url="http://127.0.0.1:8000", raise_server_exceptions=False) as client:
        yield client


def test_a_page_of_another_site_changes_nothing(http, repo):
    job, _ = repo.create("t")
    for path in ("/queues/default/pause", f"/jobs/{job.id}/cancel"):
        answer = http.post(path, headers={**EVIL, "Content-Type": "application/x-www-form-urlencoded"})
        assert answer.status_code == 403 and answer.json()["type"] == wire.CROSS_ORIGIN, answer.text
        assert "evil.example" in answer.json()["detail"] and "--token" in answer.json()["detail"]
    assert repo.find_by_id(job.id).status == "pending" and not repo.queue_state("default").paused
    assert http.get("/jobs", headers=EVIL).status_code == 403


@pytest.mark.parametrize("host", ["evil.example:8000", "evil.example", "10.0.0.5:8000"])
def test_on_loopback_a_request_addressed_to_another_name_is_refused(http, repo, host):
    """DNS rebinding: the page's origin is evil.example, now resolving to 127.0.0.1; same origin to the
    browser, so no Origin header on a GET: only the Host header tells."""
    repo.create("t", {"card": "4111"})
    answer = http.get("/jobs", headers={"Host": host})
    assert answer.status_code == 403 and "4111" not in answer.text and "127.0.0.1" in answer.json()["detail"]
    answer = http.post("/jobs", json={"type": "x"}, headers={"Host": host, "Origin": f"http://{host}"})
    assert answer.status_code == 403 and repo.counts()["pending"] == 1


@pytest.mark.parametrize("host", ["127.0.0.1:8000", "localhost:8000", "[::1]:8000", "127.0.0.2"])
def test_programs_and_the_servers_own_pages_are_served(http, host):
    assert http.get("/jobs", headers={"Host": host}).status_code == 200
    origin = {"Host": host, "Origin": f"http://{host}"}  # the /docs page's "Try it out"
    assert http.post("/jobs", json={"type": "x"}, headers=origin).status_code == 201
    assert http.get("/healthz", headers={"Host": "evil.example"}).status_code == 200  # probes, whatever name


def test_with_a_token_the_token_decides(repo):
    app = create_app(repo, token="T0KEN", loopback=True)
    with TestClient(app, base_url="http://evil.example", raise_server_exceptions=False) as client:
        bearer = {"Authorization": "Bearer T0KEN"}
        assert client.post("/jobs", json={"type": "x"}, headers={**EVIL, **bearer}).status_code == 201
        assert client.post("/jobs", json={"type": "x"}, headers=EVIL).status_code == 401


@pytest.mark.parametrize(
    ("host", "origin", "loopback", "allowed"),
    [
        ("queue.internal:8000", None, False, True),
        ("queue.internal:8000", "http://queue.internal:8000", False, True),
        ("Queue.Internal:8000", "http://queue.internal:8000", False, True),
        ("queue.internal:8000", "https://evil.example", False, False),
        ("127.0.0.1:8000", "null", True, False),  # a sandboxed frame, a file:// page
        ("127.0.0.1:8000", "http://[::1", True, False),
        ("[::1", None, True, False),
        (None, None, True, True),  # HTTP/1.0, no Host
    ],
)
def test_browser_refusal(host, origin, loopback, allowed):
    headers = [(b"host", host.encode())] if host else []
    headers += [(b"origin", origin.encode())] if origin else []
    assert (browser_refusal(headers, loopback=loopback) is None) is allowed


def test_the_served_server_refuses_a_foreign_host_on_loopback(db_url):
    """The command line passes the address it listens on to the guard: 127.0.0.1 without a token."""
    with LiveServer(db_url) as server:
        assert httpx.get(f"{server.url}/stats").status_code == 200
        answer = httpx.get(f"{server.url}/stats", headers={"Host": "evil.example"})
        assert answer.status_code == 403 and answer.json()["type"] == wire.CROSS_ORIGIN
        answer = httpx.post(f"{server.url}/queues/mail/pause", headers=EVIL)
        assert answer.status_code == 403
        assert not any(q["paused"] for q in httpx.get(f"{server.url}/queues").json()["queues"])
