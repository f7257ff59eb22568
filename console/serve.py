"""``queue-console --serve``: the same console in a browser, through textual-serve.

textual-serve starts one console process per browser tab, running the command built here: this program with
the options it was given, less the server's own (``--serve``, ``--host``, ``--port``, ``--insecure``). Loopback
by default; on another address the console is served read-only unless ``--insecure`` (``console.options``).
``--db URL`` goes to those processes as ``$QUEUE_DB_URL`` instead: textual-serve prints the command it serves,
and every tab's process shows it in ``ps``, where a password in the URL would be there for anyone to read.
"""

from __future__ import annotations

import os
import shlex
import sys
from urllib.parse import urlsplit

from queue_core.cli.args import is_loopback

from .options import SERVE_FLAGS, build_parser

TAKES_VALUE = ("--host", "--port", "--db")
DB_URL_ENV = "QUEUE_DB_URL"


def app_argv(argv: list[str]) -> list[str]:
    """``argv`` without the server's flags and ``--db`` (and their values), abbreviations included as argparse
    reads them."""
    options = [option for action in build_parser()._actions for option in action.option_strings]
    kept, skip = [], False
    for token in argv:
        if skip:
            skip = False
            continue
        name = token.split("=", 1)[0]
        full = name if name in options else next(iter(o for o in options if o.startswith(name)), name)
        if token.startswith("--") and full in (*SERVE_FLAGS, "--db"):
            skip = full in TAKES_VALUE and "=" not in token
            continue
        kept.append(token)
    return kept


def serve(argv: list[str], host: str, port: int, *, read_only: bool = False, db: str | None = None) -> None:
    served = app_argv(argv)
    if db is not None:
        os.environ[DB_URL_ENV] = db  # each tab's process inherits it, as it would the operator's own
    if read_only and "--read-only" not in served:
        served.append("--read-only")  # a non-loopback address without --insecure, or the environment's setting
    command = shlex.join([sys.executable, "-m", "console", *served])
    mode = ", read-only" if read_only else ""
    print(f"queue-console in a browser: http://{host}:{port}/{mode} (ctrl+c stops)", file=sys.stderr)
    guarded_server(command, host, port).serve()


def origin_refusal(origin: str | None, host_header: str, *, loopback: bool) -> str | None:
    """Why a browser's websocket to the console is refused, or None to let it drive a console.

    A browser lets any page open a websocket to any address, sending the page's ``Origin``: without this
    check a web page the operator merely visits could type keys into the console at 127.0.0.1:8000 (an SSH
    tunnel's end included) and delete jobs. Served on loopback, the page must come from a loopback name
    (the port may differ); elsewhere, from the host the request is addressed to. No ``Origin``: not a
    browser, so not a page acting for someone else."""
    if origin is None:
        return None
    try:
        name = urlsplit(origin).hostname
    except ValueError:
        name = None
    if loopback and name is not None and is_loopback(name):
        return None
    try:
        addressed = urlsplit(f"//{host_header}").hostname
    except ValueError:
        addressed = None
    if not loopback and name is not None and name == addressed:
        return None
    where = "a loopback address (127.0.0.1, localhost)" if loopback else "this server's address"
    return f"the console is driven only from a page of {where}, not from {origin}"


def guarded_server(command: str, host: str, port: int):
    """textual-serve's server, whose console websocket refuses pages of other origins (``origin_refusal``)."""
    from aiohttp import web
    from textual_serve.server import Server  # only the browser mode needs the web server

    loopback = is_loopback(host)

    class GuardedServer(Server):
        async def handle_websocket(self, request: web.Request) -> web.StreamResponse:
            refusal = origin_refusal(request.headers.get("Origin"), request.host, loopback=loopback)
            if refusal is not None:
                return web.Response(status=403, text=refusal + "\n")
            return await super().handle_websocket(request)

    return GuardedServer(command, host=host, port=port, title="queue-console")
