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
    from textual_serve.server import Server  # only the browser mode needs the web server

    served = app_argv(argv)
    if db is not None:
        os.environ[DB_URL_ENV] = db  # each tab's process inherits it, as it would the operator's own
    if read_only and "--read-only" not in served:
        served.append("--read-only")  # a non-loopback address without --insecure, or the environment's setting
    command = shlex.join([sys.executable, "-m", "console", *served])
    mode = ", read-only" if read_only else ""
    print(f"queue-console in a browser: http://{host}:{port}/{mode} (ctrl+c stops)", file=sys.stderr)
    Server(command, host=host, port=port, title="queue-console").serve()
