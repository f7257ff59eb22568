"""A client that leaves before its request body is whole: nothing is run, nothing is written.

The guard read ``http.disconnect`` as the end of the body, so ``POST /jobs`` with ``Content-Length: 50``
and only ``{"type":"trunc-halfclose"}`` (26 bytes) sent before the client shut its side, or a chunked body
with no last chunk, enqueued a job from the part that arrived.
"""

from __future__ import annotations

import asyncio

import pytest
from test_server_head import http_scope

from queue_core.server.app import create_app

pytestmark = pytest.mark.backends("sqlite")  # the guard reads the body before any database is touched
BODY = b'{"type":"trunc-halfclose"}'


def run_cut_short(app, messages: list[dict], headers: list[tuple[bytes, bytes]]) -> list[dict]:
    """``POST /jobs`` through the whole app (guard, routes) with the body messages ``messages`` and then a
    disconnect, as uvicorn sends them; the messages the app sent back."""
    sent, incoming = [], [*messages, {"type": "http.disconnect"}]

    async def receive():
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    scope = http_scope("POST", "/jobs", [(b"content-type", b"application/json"), *headers])
    asyncio.run(app(scope, receive, send))
    return sent


@pytest.mark.parametrize(
    "messages, headers",
    [
        # Content-Length 50, 26 bytes, then the client shuts its side (uvicorn: a body message, then disconnect).
        ([{"type": "http.request", "body": BODY, "more_body": True}], [(b"content-length", b"50")]),
        # Chunked, a whole JSON object in the first chunk but no terminating 0-chunk.
        ([{"type": "http.request", "body": BODY, "more_body": True}], [(b"transfer-encoding", b"chunked")]),
        # Gone before a byte of the body.
        ([], [(b"content-length", b"26")]),
    ],
    ids=["short-of-content-length", "chunked-without-last-chunk", "no-body-at-all"],
)
def test_a_body_cut_short_by_a_disconnect_writes_nothing(repo, messages, headers):
    sent = run_cut_short(create_app(repo), messages, headers)
    assert repo.list() == []
    assert sent == []  # the connection is gone: no answer, and no 500 logged for it


def test_the_same_body_whole_is_enqueued(repo):
    sent = run_cut_short(
        create_app(repo),
        [{"type": "http.request", "body": BODY, "more_body": False}],
        [(b"content-length", b"26")],
    )
    assert sent[0]["status"] == 201
    assert [job.type for job in repo.list()] == ["trunc-halfclose"]
