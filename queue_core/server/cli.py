"""``python -m queue_core.server`` (script ``queue-server``): serve the HTTP API with uvicorn."""

from __future__ import annotations

import argparse
import errno
import logging
import os
import socket
import sys

from ..cli.args import (
    EXIT_USAGE,
    WHOLE_NUMBER,
    CLIArgumentParser,
    api_token,
    bounded_number,
    fail,
    is_loopback,
    open_for_command,
    program_name,
    whole_number,
)
from ..errors import QueueError
from ..store.database import default_url, schema_change
from ..validation import validate_token
from .app import DEFAULT_MAX_BODY_BYTES, create_app


def positive_int(text: str) -> int:
    try:
        value = whole_number(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {WHOLE_NUMBER}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def port_number(text: str) -> int:
    return bounded_number(text, whole_number, 1, 65535, "a port number (ASCII digits 0-9)")


def build_parser() -> argparse.ArgumentParser:
    parser = CLIArgumentParser(
        prog=program_name("queue_core.server", "queue-server"), description="HTTP API of the job queue."
    )
    parser.add_argument("--db", default=None, help="database URL (default: $QUEUE_DB_URL or sqlite:///queue.db)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=port_number, default=8000, help="port to listen on, 1-65535 (default 8000)")
    token_help = "require 'Authorization: Bearer TOKEN' (default: $QUEUE_API_TOKEN)"
    parser.add_argument("--token", type=api_token, default=None, help=token_help)
    read_help = "a token that may only read: GET routes and /metrics; writes get 403 (default: $QUEUE_API_READ_TOKEN)"
    parser.add_argument("--read-token", type=api_token, default=None, help=read_help)
    parser.add_argument("--insecure", action="store_true", help="allow a non-loopback address without a token")
    body_help = f"refuse request bodies larger than this with 413 (default {DEFAULT_MAX_BODY_BYTES})"
    parser.add_argument("--max-body-bytes", type=positive_int, default=DEFAULT_MAX_BODY_BYTES, help=body_help)
    levels = ["critical", "error", "warning", "info", "debug"]
    parser.add_argument("--log-level", default="info", choices=levels, help="(default info)")
    return parser


def token_from(given: str | None, variable: str) -> str | None:
    """The flag's value (checked by argparse), else the environment variable, checked here the same way."""
    token = given or os.environ.get(variable) or None
    if token is not None and given is None:
        validate_token(variable, token)
    return token


def tokens_from(args) -> tuple[str | None, str | None]:
    """(token, read token); a read token alone, or one equal to the token, is refused: either would leave
    writes open to whoever holds the "read-only" one."""
    token = token_from(args.token, "QUEUE_API_TOKEN")
    read_token = token_from(args.read_token, "QUEUE_API_READ_TOKEN")
    if read_token is not None and token is None:
        raise QueueError(
            "a read token needs a full token too: set --token or QUEUE_API_TOKEN (without one, writes need no token)"
        )
    if read_token is not None and read_token == token:
        raise QueueError("the read token must differ from the token: the same value would be allowed to write")
    return token, read_token


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        token, read_token = tokens_from(args)
    except QueueError as exc:
        return fail(str(exc))
    if token is None and not is_loopback(args.host) and not args.insecure:
        print(
            f"error: refusing to listen on {args.host} without a token: set --token or QUEUE_API_TOKEN "
            "(or pass --insecure to expose the queue to anyone who can reach it)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    # The socket first: a server that cannot listen (the port in use, a host unknown here) must not have
    # made the SQLite file and the tables, or the tables in whatever PostgreSQL database --db names.
    try:
        sock = listen(args.host, args.port)
    except QueueError as exc:
        return fail(str(exc))
    try:
        db = open_for_command(args.db or default_url())
    except QueueError as exc:
        sock.close()
        return fail(str(exc))
    import uvicorn  # here, not at the top: --help and a bad argument answer without loading the server stack

    loopback = is_loopback(args.host)
    app = create_app(db, token=token, read_token=read_token, max_body_bytes=args.max_body_bytes, loopback=loopback)
    try:
        config = uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level)
        # uvicorn says where it listens only for sockets it bound itself.
        shown = f"[{args.host}]" if ":" in args.host else args.host
        log = logging.getLogger("uvicorn.error")
        if done := schema_change(db, args.db):
            log.info("%s", done)  # the first open of a new database, or the first after an upgrade of queue_core
        log.info("Serving on http://%s:%d (Press CTRL+C to quit)", shown, args.port)
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
        db.close()
    return 0


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host``:``port``, bound here rather than by uvicorn, whose failure to bind is
    its own log lines and exit code 3; a QueueError saying what to change instead."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except (socket.gaierror, UnicodeError) as exc:
        raise QueueError(f"cannot listen on {host}: not an address or a host name known here ({exc})") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: a restart need not wait
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        hint = "; stop what listens there or choose another --port" if exc.errno == errno.EADDRINUSE else ""
        raise QueueError(f"cannot listen on {host}:{port}: {exc.strerror or exc}{hint}") from None
    sock.set_inheritable(True)
    return sock
