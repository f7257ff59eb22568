"""The console's command line: ``queue-console --db URL --stale-after S --refresh S --worker --demo ...``.

Argument types and handler-module loading are the headless worker's, so both accept and refuse the same.
"""

from __future__ import annotations

import os

from queue_core.cli.args import CLIArgumentParser, bounded_number, is_loopback, non_negative_seconds, positive_seconds
from queue_core.worker.cli import concurrency, queue_slots, worker_id
from queue_core.worker.defaults import DEFAULTS

from .demo import FORCE_FLAG

# The headless worker's default, so the console and the workers agree on what "stale" means.
DEFAULT_STALE_AFTER: float = DEFAULTS.stale_after
DEFAULT_REFRESH = 1.0
DEFAULT_CONCURRENCY = 2
READ_ONLY_ENV = "QUEUE_CONSOLE_READ_ONLY"
READ_ONLY_WORDS = {word: True for word in ("1", "true", "yes", "on")} | {
    word: False for word in ("0", "false", "no", "off", "")
}
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
SERVE_FLAGS = ("--serve", "--host", "--port", "--insecure")  # the browser server's; the app it runs gets the rest


def build_parser() -> CLIArgumentParser:
    parser = CLIArgumentParser(prog="queue-console", description="Operator console of the job queue.")
    add = parser.add_argument
    add("--db", default=None, help="database URL (default: $QUEUE_DB_URL or sqlite:///queue.db)")
    add(
        "--stale-after",
        type=positive_seconds,
        default=DEFAULT_STALE_AFTER,
        metavar="S",
        help=f"a running job without a heartbeat for this long is stale (default {DEFAULT_STALE_AFTER:g})",
    )
    add(
        "--refresh",
        type=positive_seconds,
        default=DEFAULT_REFRESH,
        metavar="S",
        help=f"seconds between refreshes (default {DEFAULT_REFRESH:g})",
    )
    add("--worker", action="store_true", help="start the embedded worker at launch")
    add(
        "--concurrency",
        type=concurrency,
        default=None,  # DEFAULT_CONCURRENCY unless given: given with --queues, it is refused (parse_args)
        metavar="N",
        help=f"embedded worker threads (default {DEFAULT_CONCURRENCY})",
    )
    add(
        "--queues",
        type=queue_slots,
        default=None,
        metavar="NAME[=N],...",
        help="the embedded worker serves only these queues, each with its own N slots (default: every queue)",
    )
    add("--worker-id", type=worker_id, default=None, help="the embedded worker's name (default: host-pid)")
    add("--handlers", action="append", default=[], metavar="MODULE", help="import MODULE to register handlers")
    add(
        "--shutdown-timeout",
        type=non_negative_seconds,
        default=None,
        metavar="S",
        help="how long a stopping worker lets running jobs finish before releasing them (default: the worker's)",
    )
    add(
        "--demo",
        action="store_true",
        help="seed a few dozen demo jobs and start the embedded worker on them; refuses a PostgreSQL database "
        "or one holding jobs the demo did not seed",
    )
    add(
        FORCE_FLAG,
        action="store_true",
        help="with --demo: seed even a PostgreSQL database or one holding other jobs (it may be production)",
    )
    add_access_options(add)
    return parser


def add_access_options(add) -> None:
    """Who may write, and the console in a browser (issue 16)."""
    add(
        "--read-only",
        action="store_true",
        help=f"look, never write: every key that changes jobs is disabled, no embedded worker (or {READ_ONLY_ENV}=1)",
    )
    add("--serve", action="store_true", help="serve the console to a browser (textual-serve) instead of this terminal")
    add("--host", default=None, help=f"with --serve: the address to listen on (default {DEFAULT_HOST}, loopback only)")
    add("--port", type=port, default=None, help=f"with --serve: the port (default {DEFAULT_PORT})")
    add(
        "--insecure",
        action="store_true",
        help="with --serve: a non-loopback --host may write too (without it, it is served read-only)",
    )


def port(text: str) -> int:
    return bounded_number(text, int, 1, 65535, "a port number")


def parse_args(argv: list[str] | None = None, environ=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    environ = os.environ if environ is None else environ
    said = environ.get(READ_ONLY_ENV, "")
    word = said.strip().lower()
    if word not in READ_ONLY_WORDS:
        # A safety switch: a value it does not know is refused, not taken as "write" (say "on" and get writes).
        parser.error(
            f"{READ_ONLY_ENV}={said!r} is not a yes or a no: set it to 1, true, yes or on for read-only, "
            "or to 0, false, no, off or nothing to allow writes"
        )
    args.read_only = args.read_only or READ_ONLY_WORDS[word]
    if args.queues is not None and args.concurrency is not None:
        parser.error("give --queues or --concurrency, not both: with --queues each queue has its own slots")
    args.concurrency = DEFAULT_CONCURRENCY if args.concurrency is None else args.concurrency
    if args.force_demo and not args.demo:
        parser.error(f"{FORCE_FLAG} only goes with --demo")
    if args.read_only and (args.demo or args.worker):
        parser.error(f"{'--demo' if args.demo else '--worker'} writes jobs: it does not go with read-only mode")
    if not args.serve and (args.host is not None or args.port is not None or args.insecure):
        parser.error("--host, --port and --insecure only go with --serve")
    args.host = DEFAULT_HOST if args.host is None else args.host
    args.port = DEFAULT_PORT if args.port is None else args.port
    if args.serve and not is_loopback(args.host) and not args.insecure:
        # Anyone who reaches a non-loopback address could change jobs: it serves read-only unless --insecure.
        if args.demo or args.worker:
            parser.error(
                f"--host {args.host} is not loopback, so the console is served read-only, and "
                f"{'--demo' if args.demo else '--worker'} writes jobs; add --insecure if writes are meant "
                "(or keep 127.0.0.1 and use an SSH tunnel)"
            )
        args.read_only = True
    return args
