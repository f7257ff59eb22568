"""``RequestGuard``: the outermost ASGI layer of the API: bearer tokens, body-size limit, HEAD, last-resort 500.

Pure ASGI rather than FastAPI dependencies, so it covers every path (unknown ones and ``/docs`` too)
and refuses an over-long body before anything parses it.
"""

from __future__ import annotations

import hmac
import logging
from urllib.parse import unquote_to_bytes

from starlette.requests import ClientDisconnect

from .. import wire
from .browser import browser_refusal
from .problems import problem_response

logger = logging.getLogger("queue_core.server")

PUBLIC_PATHS = frozenset({"/healthz"})
# What a read token may do: the methods that change nothing (GET routes, /metrics, the schema and docs).
READ_METHODS = frozenset({"GET", "HEAD"})
FULL, READ, REFUSED = "full", "read", "refused"


class RequestGuard:
    """Outermost ASGI layer: bearer-token check, body-size limit, and the last-resort 500.

    ``token`` may do everything; ``read_token`` (only with a ``token``) may only read: a write sent with
    it is refused with 403 before the route runs, so nothing is written.

    The body is read here, up to the limit, and replayed to the app, so an over-long body (declared
    or streamed) is refused with 413 before anything parses it.

    ``HEAD`` is answered as ``GET`` without the body, on every path: FastAPI routes a ``GET`` route's
    ``HEAD`` to nothing (405), and load balancers and uptime checkers probe ``/healthz`` with ``HEAD``.
    """

    def __init__(
        self, app, *, token: str | None, max_body_bytes: int, read_token: str | None = None, loopback: bool = False
    ):
        self.app = app
        self.loopback = loopback  # without a token: only requests addressed to a loopback name (browser.py)
        self.expected = f"Bearer {token}".encode() if token else None
        self.expected_read = f"Bearer {read_token}".encode() if read_token else None
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = False

        async def tracking_send(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            refusal = self.refusal(scope)
            if refusal is not None:
                return await refusal(scope, receive, send)
            if scope["method"] == "HEAD":
                scope, tracking_send = {**scope, "method": "GET"}, headers_only(tracking_send)
            not_text = not_utf8(scope)
            if not_text is not None:
                response = problem_response(400, not_text, title="Request target not UTF-8")
                return await response(scope, receive, tracking_send)
            try:
                body = await self.read_body(scope, receive)
            except ClientDisconnect:
                return  # the client is gone before its body was whole: nothing to run, no one to answer
            if body is None:
                response = problem_response(
                    413,
                    f"the request body is larger than {self.max_body_bytes} bytes; send a smaller payload",
                    type=wire.BODY_TOO_LARGE,
                )
                return await response(scope, receive, send)
            await self.app(scope, replay(body, receive), tracking_send)
        except Exception:
            logger.exception("internal error on %s %s", scope.get("method"), scope.get("path"))
            if not started:
                response = problem_response(500, "the server hit an unexpected error; it is logged", type=wire.INTERNAL)
                await response(scope, receive, send)

    def refusal(self, scope):
        """The 401 or 403 for a request its token does not allow, or None to let it through; without a token,
        the 403 for a browser's page of another site (``browser.py``)."""
        if scope["path"] in PUBLIC_PATHS:
            return None
        if self.expected is None:
            refused = browser_refusal(scope["headers"], loopback=self.loopback)
            return None if refused is None else problem_response(403, refused, type=wire.CROSS_ORIGIN)
        access = self.access(scope)
        if access == FULL or (access == READ and scope["method"] in READ_METHODS):
            return None
        if access == READ:
            return problem_response(
                403,
                f"the read-only token cannot {scope['method']} {scope['path']}; changing jobs needs the full token",
                type=wire.READ_ONLY,
            )
        return problem_response(
            401,
            "send the server's token as 'Authorization: Bearer <token>'",
            type=wire.UNAUTHORIZED,
            headers={"WWW-Authenticate": 'Bearer realm="queue-core"'},
        )

    def access(self, scope) -> str:
        for name, value in scope["headers"]:
            if name == b"authorization":
                if value[:7].lower() == b"bearer ":  # the scheme is case-insensitive (RFC 9110 11.1), the token not
                    value = b"Bearer " + value[7:]
                # Constant time, and both compared, so a wrong token's timing says nothing about either.
                full = hmac.compare_digest(value, self.expected)
                read = self.expected_read is not None and hmac.compare_digest(value, self.expected_read)
                return FULL if full else READ if read else REFUSED
        return REFUSED

    async def read_body(self, scope, receive) -> bytes | None:
        """The whole body, or None when it is over the limit. ``ClientDisconnect`` (as Starlette's own
        ``Request.body()`` raises) when the client leaves before the body's end: a body cut short (fewer bytes
        than its Content-Length, a chunked body with no last chunk) was run as if whole, and a POST /jobs
        whose client had gone wrote a job from the part that arrived."""
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > self.max_body_bytes:
                return None
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # http.disconnect: the body never came whole
                raise ClientDisconnect()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)


def not_utf8(scope) -> str | None:
    """What to fix when the path, or the query string of a route that reads one, is not UTF-8 once
    percent-decoded; None when both are. The server decodes them with U+FFFD for each bad byte, so
    ``POST /queues/%FF/pause`` paused a queue named "\ufffd" that no one can name (the admin CLI refuses
    such names), and ``/workers/%FF/register`` registered a worker by that id. Only a request with a
    ``%`` in it is decoded here (HTTP sends the target as ASCII)."""
    raw = scope.get("raw_path")
    if raw is not None and b"%" in raw and not _utf8(unquote_to_bytes(raw)):
        return (
            f"the path {raw.decode('ascii', 'replace')} is not UTF-8 text once percent-decoded: percent-encode "
            "a name's UTF-8 bytes, e.g. /queues/caf%C3%A9/pause for the queue café"
        )
    query = scope.get("query_string", b"")
    if b"%" in query and scope["path"] not in PUBLIC_PATHS and not _utf8(unquote_to_bytes(query.replace(b"+", b" "))):
        return (
            f"the query string {query.decode('ascii', 'replace')} is not UTF-8 text once percent-decoded: "
            "percent-encode each value's UTF-8 bytes, e.g. ?type=caf%C3%A9"
        )
    return None


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def headers_only(send):
    """``send`` without the body: a ``HEAD`` gets the status and headers ``GET`` would (Content-Length
    included, RFC 9110 9.3.2), and no content."""

    async def send_headers(message):
        if message["type"] == "http.response.body":
            if message.get("more_body", False):
                return
            message = {"type": "http.response.body", "body": b"", "more_body": False}
        await send(message)

    return send_headers


def replay(body: bytes, receive):
    sent = False

    async def receive_replayed():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return receive_replayed
