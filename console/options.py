"""The console's command line: ``queue-console --db URL --stale-after S --refresh S --worker --demo ...``."""

from __future__ import annotations

import argparse
import inspect

from queue_core.worker import Worker

# The headless worker's default, so the console and the workers agree on what "stale" means.
DEFAULT_STALE_AFTER: float = inspect.signature(Worker).parameters["stale_after"].default
DEFAULT_REFRESH = 1.0
DEFAULT_CONCURRENCY = 2


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a number of seconds above 0")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="queue-console", description="Operator console of the job queue.")
    parser.add_argument("--db", default=None, help="database URL (default: $QUEUE_DB_URL or sqlite:///queue.db)")
    parser.add_argument(
        "--stale-after",
        type=positive_seconds,
        default=DEFAULT_STALE_AFTER,
        help=f"a running job without a heartbeat for this long is stale (default {DEFAULT_STALE_AFTER:g} s)",
    )
    parser.add_argument("--refresh", type=positive_seconds, default=DEFAULT_REFRESH, help="seconds between refreshes")
    parser.add_argument("--worker", action="store_true", help="start the embedded worker at launch")
    parser.add_argument(
        "--concurrency", type=int, default=DEFAULT_CONCURRENCY, help="threads of the embedded worker (default 2)"
    )
    parser.add_argument(
        "--shutdown-timeout",
        type=positive_seconds,
        default=None,
        help="seconds a stopping worker lets running jobs finish before releasing them (default: the worker's)",
    )
    parser.add_argument(
        "--demo", action="store_true", help="seed a few dozen demo jobs and start the embedded worker to run them"
    )
    return parser
