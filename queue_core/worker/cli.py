"""``python -m queue_core.worker`` (script ``queue-worker``): the headless worker, one log line per job event.

SIGTERM, SIGINT or SIGHUP (the terminal closed) stops claiming and lets running jobs finish within
``--shutdown-timeout``; a second signal releases them back to pending at once (``signals``). Bad arguments
or an unimportable ``--handlers`` module print one line and exit 2 before any job is touched. With ``--api
URL`` the same loop runs over the HTTP API (``queue_core.server``) through ``HttpQueue``, with no database
connection of its own.
"""

from __future__ import annotations

import argparse
import gc
import os
import signal
from typing import NoReturn

from ..cli.args import (
    EXIT_FAILURE,
    WHOLE_NUMBER,
    CLIArgumentParser,
    api_token,
    bounded_number,
    exit_with,
    fail,
    non_negative_seconds,
    positive_seconds,
    program_name,
    whole_number,
)
from ..errors import QueueError, WorkerGaveUp
from ..store.database import DATABASE_ERRORS, default_url, without_password
from ..tasks import declared_database_url, registered_schedules, serve_database
from ..validation import MAX_TYPES, validate_api_url, validate_worker_id
from .defaults import (
    DEFAULTS,
    IDLE_CEILING,
    MAX_CONCURRENCY,
    MAX_PROCESSES,
    check_ack_delay,
    idle_ceiling,
    valid_queue_slots,
)
from .handlers import BUILTINS, registry
from .logs import configure_logging, log_event, logged_kinds, logger, write_waiting_lines
from .loop import Worker
from .modules import import_handler_modules
from .opening import member_worker_id, open_queue, start_metrics, take_back, take_back_unreplaced, worker_id_of
from .pool import Member, WorkerPool
from .protocol import JobQueue
from .scheduler import Scheduler
from .signals import StopOnSignal, stop_signals

LOG_LEVELS = ("debug", "info", "warning", "error")
EXIT_OK, EXIT_CRASH = 0, 1


def concurrency(text: str) -> int:
    return bounded_number(text, whole_number, 1, MAX_CONCURRENCY, WHOLE_NUMBER)


def queue_slots(text: str) -> dict[str, int]:
    """``mail=2,default=4`` -> {"mail": 2, "default": 4}; a name alone gets one slot."""
    slots: dict[str, int] = {}
    for item in text.split(","):
        name, sep, count = item.strip().partition("=")
        name = name.strip()
        if name in slots:
            raise argparse.ArgumentTypeError(f"queue {name!r} is named twice in {text!r}")
        slots[name] = concurrency(count.strip()) if sep else 1
    try:
        return valid_queue_slots(slots)
    except QueueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {exc.message}") from None


def process_count(text: str) -> int:
    return bounded_number(text, whole_number, 1, MAX_PROCESSES, WHOLE_NUMBER)


def port_number(text: str) -> int:
    return bounded_number(text, whole_number, 1, 65535, "a TCP port number (ASCII digits 0-9)")


def worker_id(text: str) -> str:
    try:
        return validate_worker_id(text)
    except QueueError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def api_url(text: str) -> str:
    try:
        return validate_api_url("--api", text)
    except QueueError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def build_parser() -> argparse.ArgumentParser:
    parser = CLIArgumentParser(
        prog=program_name("queue_core.worker", "queue-worker"),
        description="Run queued jobs with the registered handlers until stopped (SIGTERM/SIGINT/SIGHUP).",
    )
    add = parser.add_argument
    db_help = "database URL (default: $QUEUE_DB_URL, else the --handlers modules' Queue's, else sqlite:///queue.db)"
    add("--db", default=None, help=db_help)
    api_help = "claim over the HTTP API at URL (queue_core.server) instead of --db"
    add("--api", type=api_url, default=None, metavar="URL", help=api_help)
    add("--token", type=api_token, default=None, help="bearer token for --api (default: $QUEUE_API_TOKEN)")
    add("--worker-id", type=worker_id, default=None, help="name in job claims and logs (default: host-pid)")
    add("--handlers", action="append", default=[], metavar="MODULE", help="import MODULE to register handlers")

    def seconds(name: str, kind, default: float, help: str) -> None:
        add(name, type=kind, default=default, metavar="S", help=f"{help} (default {default:g})")

    d = DEFAULTS  # the Worker's own defaults: one table, read here, by Worker() and by the console
    add(
        "--concurrency",
        type=concurrency,
        default=None,  # None, not d.concurrency: "--concurrency 1" beside --queues is refused like any other N
        metavar="N",
        help=f"jobs run at once, one thread each (default {d.concurrency})",
    )
    processes_help = "worker processes, forked from this one once it has started, each with its own slots "
    processes_help += "(--concurrency or --queues); one that dies is replaced (default 1: this process)"
    add("--processes", type=process_count, default=1, metavar="N", help=processes_help)
    queues_help = "claim only from these queues, each with its own slots: mail=2,default=4 (a name alone: 1 slot; "
    queues_help += "default: every queue, on --concurrency slots)"
    add("--queues", type=queue_slots, default=d.queues, metavar="NAME[=N],...", help=queues_help)
    seconds("--poll-interval", positive_seconds, d.poll_interval, "first wait when idle")
    max_poll_help = f"longest wait when idle, at least --poll-interval (default {IDLE_CEILING:g}, or --poll-interval "
    max_poll_help += "if longer)"
    add("--max-poll-interval", type=positive_seconds, default=d.max_poll_interval, metavar="S", help=max_poll_help)
    seconds("--stale-after", positive_seconds, d.stale_after, "reap claims with no heartbeat for this long")
    seconds("--shutdown-timeout", non_negative_seconds, d.shutdown_timeout, "on stop, how long running jobs may finish")
    ack_help = "how long a completion may wait to be written with others, one statement per batch, and a slot "
    ack_help += "after a job shorter than that to claim with the others; at most half of --stale-after"
    seconds("--ack-delay", non_negative_seconds, d.ack_delay, ack_help)
    prune_help = "delete finished jobs older than S seconds, checked hourly (default: keep them)"
    add("--prune-after", type=positive_seconds, default=d.prune_after, metavar="S", help=prune_help)
    add("--burst", action="store_true", help="exit once nothing is claimable and nothing runs")
    no_scheduler_help = "do not enqueue the periodic jobs of the --handlers modules (default: every worker does)"
    add("--no-scheduler", action="store_true", help=no_scheduler_help)
    metrics_help = "serve this worker's Prometheus metrics on 127.0.0.1:N/metrics (default: off)"
    add("--metrics-port", type=port_number, default=None, metavar="N", help=metrics_help)
    add("--log-level", type=str.lower, choices=LOG_LEVELS, default="info", help="(default info)")
    add("--log-format", choices=("text", "json"), default="text", help="one line per event (default text)")
    return parser


# --- running -----------------------------------------------------------------------------------------


def too_many_types(count: int) -> str | None:
    """The error line for a registry of ``count`` job types when that is more than one claim may name, else
    None. Every claim names all of them, so such a worker would log a refused claim at each poll and never run
    a job; said once, here, before a process forks."""
    if count <= MAX_TYPES:
        return None
    return (
        f"the handler modules register {count} job types ({len(BUILTINS)} of them built in) and a claim names at "
        f"most {MAX_TYPES}: split the --handlers modules across workers, each registering at most "
        f"{MAX_TYPES - len(BUILTINS)} types"
    )


def install_signal_handlers(worker: Worker) -> dict:
    """First SIGTERM/SIGINT/SIGHUP: graceful stop; the next one: release running jobs now (a SIGHUP ignored
    under ``nohup`` stays ignored). Returns the old handlers."""
    on_signal = StopOnSignal(worker)
    # A signal before the worker has started finds nothing to stop (request_stop needs a run under way): it
    # takes effect once the run exists, as a pool's process does with its parent's word (pool.Member.obey).
    worker.subscribe(lambda _event: on_signal.started(), ["started"])
    return on_signal.install(stop_signals())


def conflicting_arguments(args) -> str | None:
    """The error line for arguments that are each valid but not together, else None."""
    if args.api and args.db:
        return "give --db or --api, not both: --api runs over the HTTP API, which has its own database"
    if args.prune_after is not None and args.api:
        return "--prune-after needs --db: prune where the database is, not over the HTTP API"
    if args.token and not args.api:
        return "--token is for --api; a --db worker talks to the database directly"
    if args.processes > 1:
        if not hasattr(os, "fork"):
            return "--processes needs os.fork, which this system lacks: start one worker command per process"
        if args.worker_id is not None:
            try:
                validate_worker_id(member_worker_id(args.worker_id, args.processes - 1))
            except QueueError as exc:
                return f"--worker-id with --processes {args.processes} (its processes add -1, -2, ...): {exc}"
        if args.metrics_port is not None and args.metrics_port + args.processes - 1 > 65535:
            last = args.metrics_port + args.processes - 1
            return (
                f"--metrics-port {args.metrics_port} with --processes {args.processes}: process k serves on the "
                f"port + k, up to {last}, past 65535; give a lower port"
            )
    if args.queues is not None and args.concurrency is not None:
        return "give --queues or --concurrency, not both: with --queues each queue has its own slots"
    try:
        check_ack_delay(args.ack_delay, args.stale_after, names=("--ack-delay", "--stale-after"))
        idle_ceiling(args.poll_interval, args.max_poll_interval, names=("--poll-interval", "--max-poll-interval"))
    except QueueError as exc:
        return str(exc)
    return None


def run() -> NoReturn:
    """The program (``python -m queue_core.worker``, ``queue-worker``): ``main`` with its start-up frozen."""
    exit_with(lambda: main(freeze_after_startup=True))


def main(argv: list[str] | None = None, *, freeze_after_startup: bool = False) -> int:
    """The worker command; returns its exit code. ``freeze_after_startup``: for a process of its own (see
    ``run``), never for a caller's process, whose garbage it would keep from the cyclic collector."""
    args = build_parser().parse_args(argv)
    configure_logging(args.log_level, args.log_format)
    problem = (
        import_handler_modules(args.handlers)
        or too_many_types(len(registry))
        or conflicting_arguments(args)
        or adopt_queue_url(args)
    )
    if problem:
        return fail(problem)
    if args.processes == 1:
        return serve(args, freeze_after_startup=freeze_after_startup)
    try:
        # Once, before any process forks: a bad URL or an unreachable database is one line, and a new schema
        # is made (or an old one upgraded) by one process instead of raced by N. No connection crosses a fork.
        queue, database, close = open_queue(args)
    except QueueError as exc:
        return fail(str(exc))
    try:
        if database is not None:
            # Stale planner statistics analyzed once here, not by every process at once, and none of their
            # first claims planned without them (~20 ms each on a fresh 20,000-job backlog, 1.5 ms after).
            queue.refresh_statistics()
    except DATABASE_ERRORS as exc:  # the processes try again as they start
        logger.warning("could not refresh the planner statistics: %s", exc)
    finally:
        close()
    if freeze_after_startup:
        gc.freeze()  # what the processes share stays shared: no collection in one of them touches its pages
    pool = WorkerPool(
        args.processes,
        lambda member: serve(args, freeze_after_startup=freeze_after_startup, member=member),
        burst=args.burst,
        shutdown_timeout=args.shutdown_timeout,
        exit_hooks=freeze_after_startup,
        on_unreplaced=lambda index, pid: take_back_unreplaced(args, index, pid),
        gone=getattr(database, "file_gone", None),  # the SQLite file the pool was started on (closed, still known)
    )
    return pool.run()


def adopt_queue_url(args) -> str | None:
    """With neither ``--db``, ``--api`` nor ``$QUEUE_DB_URL``: the database the ``--handlers`` modules' Queue
    names, as a worker of those tasks is expected to serve (``args.db`` set); the error line if they name
    several, else None. Their Queues then use the database served, for what their handlers enqueue."""
    if getattr(args, "api", None) is not None:
        return None
    if args.db is None and not os.environ.get("QUEUE_DB_URL"):
        try:
            args.db = declared_database_url(registry)
        except QueueError as exc:
            return str(exc)
        if args.db is not None:
            logger.info("using %s, the database the handler modules' Queue names", without_password(args.db))
    serve_database(args.db or default_url(), registry)
    return None


def serve(args, *, freeze_after_startup: bool = False, member: Member | None = None) -> int:
    """Run one worker with ``args`` until it stops; its exit code. ``member``: a process of a ``--processes``
    pool, stopped by its parent rather than by signals; the first one runs the periodic jobs, and the k-th
    (from 0) serves metrics on ``--metrics-port`` + k."""
    index = 0 if member is None else member.index
    try:
        schedules = [] if args.no_scheduler or index > 0 else registered_schedules(registry)
        # A pool's process opens what its parent made (or found): a SQLite file gone meanwhile is an error, not
        # a new, empty file at the path.
        queue, database, close = open_queue(args, create=member is None)
    except QueueError as exc:
        return fail(str(exc))
    previous: dict = {}  # the signal handlers before this worker's, put back once its clean-up is over
    try:
        worker = build_worker(args, queue, schedules, member)
        # From here to the end of the clean-up: a signal before the start stops the worker once it has
        # started, and one after the stop lets the clean-up finish (the defaults killed the process in it).
        if member is None:
            previous = install_signal_handlers(worker)
        else:
            member.obey(worker)
        if member is not None and member.replaces is not None and database is not None:
            take_back(queue, args, member.index, member.replaces)
        worker.subscribe(log_event, logged_kinds())
        metrics = start_metrics(worker, None if args.metrics_port is None else args.metrics_port + index)
        if freeze_after_startup:
            # What start-up made (modules, classes, handlers, the connection) lives as long as the process:
            # moved out of the cyclic collector's way, no full collection walks it again, nor does the
            # interpreter's exit (~40 ms of every worker process's exit, 12 ms with it frozen).
            gc.freeze()
        try:
            worker.run(burst=args.burst)
        finally:
            if metrics is not None:
                metrics.close()
    except WorkerGaveUp as exc:  # the database or the API away for stale_after: running it again may work
        write_waiting_lines()  # the stop's lines first: the error is the last
        return fail(str(exc), EXIT_FAILURE)
    except QueueError as exc:
        return fail(str(exc))
    except Exception:
        logger.exception("worker crashed")
        return EXIT_CRASH
    finally:
        close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return EXIT_OK


def build_worker(args, queue: JobQueue, schedules: list, member: Member | None) -> Worker:
    """The worker ``args`` describe, on ``queue`` (named by ``worker_id_of``)."""
    return Worker(
        queue,
        worker_id=worker_id_of(args, None if member is None else member.index),
        concurrency=DEFAULTS.concurrency if args.concurrency is None else args.concurrency,
        registry=registry,
        poll_interval=args.poll_interval,
        max_poll_interval=args.max_poll_interval,
        stale_after=args.stale_after,
        shutdown_timeout=args.shutdown_timeout,
        prune_after=args.prune_after,
        queues=args.queues,
        scheduler=Scheduler(queue, schedules) if schedules else None,
        ack_delay=args.ack_delay,
    )
