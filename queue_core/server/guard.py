"""``RequestGuard``: the outermost ASGI layer of the API: bearer token, body-size limit, last-resort 500.

Pure ASGI rather than FastAPI dependencies, so it covers every path (unknown ones and ``/docs`` too)
and refuses an over-long body before anything parses it.
"""

from __future__ import annotations

import hmac
import logging

from .. import wire
from .problems import problem_response

logger = logging.getLogger("queue_core.server")

PUBLIC_PATHS = frozenset({"/healthz"})


class RequestGuard:
    """Outermost ASGI layer: bearer-token check, body-size limit, and the last-resort 500.

    The body is read here, up to the limit, and replayed to the app, so an over-long body (declared
    or streamed) is refused with 413 before anything parses it.
    """

    def __init__(self, app, *, token: str | None, max_body_bytes: int):
        self.app = app
        self.expected = f"Bearer {token}".encode() if token else None
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
            if self.expected is not None and scope["path"] not in PUBLIC_PATHS and not self.authorized(scope):
                response = problem_response(
                    401,
                    "send the server's token as 'Authorization: Bearer <token>'",
                    type=wire.UNAUTHORIZED,
                    headers={"WWW-Authenticate": 'Bearer realm="queue-core"'},
                )
                return await response(scope, receive, send)
            body = await self.read_body(scope, receive)
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

    def authorized(self, scope) -> bool:
        for name, value in scope["headers"]:
            if name == b"authorization":
                # Constant time, so a wrong token's timing says nothing about the right one.
                return hmac.compare_digest(value, self.expected)
        return False

    async def read_body(self, scope, receive) -> bytes | None:
        """The whole body, or None when it is over the limit."""
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > self.max_body_bytes:
                return None
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)


def replay(body: bytes, receive):
    sent = False

    async def receive_replayed():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return receive_replayed
