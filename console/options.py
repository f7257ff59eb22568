"""The console's command line: ``queue-console --db URL --stale-after S --refresh S --worker --demo ...``.

Argument types and handler-module loading are the headless worker's, so both accept and refuse the same.
"""

from __future__ import annotations

from queue_core.cli.args import CLIArgumentParser, non_negative_seconds, positive_seconds
from queue_core.worker.cli import concurrency, queue_slots, worker_id
from queue_core.worker.defaults import DEFAULTS

from .demo import FORCE_FLAG

# The headless worker's default, so the console and the workers agree on what "stale" means.
DEFAULT_STALE_AFTER: float = DEFAULTS.stale_after
DEFAULT_REFRESH = 1.0
DEFAULT_CONCURRENCY = 2


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
        default=DEFAULT_CONCURRENCY,
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
    return parser


def parse_args(argv: list[str] | None = None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.force_demo and not args.demo:
        parser.error(f"{FORCE_FLAG} only goes with --demo")
    return args
