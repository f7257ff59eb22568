"""``python -m queue_core``: the admin CLI for scripts and for enqueuing test jobs by hand."""

from __future__ import annotations

import argparse
import io
import sys
from datetime import timedelta

from ..errors import QueueError
from ..rules import DEFAULT_MAX_RETRIES, RUNNING
from ..store.database import DATABASE_ERRORS, default_url, schema_change, without_password
from ..store.models import JobStatus
from ..store.repository import JobRepository
from ..store.schema import SCHEMA_VERSION
from ..tasks import registered_task
from ..validation import MAX_LIST_LIMIT, parse_payload
from ..worker.cli import adopt_queue_url, import_handler_modules
from ..worker.handlers import registry
from . import bulk, controls, schedules
from .args import (
    EXIT_FAILURE,
    INTERRUPTED,
    WHOLE_NUMBER,
    CLIArgumentParser,
    bounded_number,
    fail,
    locked_database,
    non_negative_seconds,
    one_line,
    open_for_command,
    positive_seconds,
    print_json,
    readonly_database,
    refused,
    whole_number,
)
from .interrupt import StopOnInterrupt

INT64_MAX = 2**63 - 1  # ids are the database's 64-bit signed integers
JOB_ID = "a job id: pass its number in ASCII digits 0-9, e.g. 42"


def job_id(text: str) -> int:
    return bounded_number(text, whole_number, 1, INT64_MAX, JOB_ID, "a job id ")


def after_id(text: str) -> int:
    return bounded_number(text, whole_number, 0, INT64_MAX, JOB_ID, "a job id ")


def list_limit(text: str) -> int:
    return bounded_number(text, whole_number, 1, MAX_LIST_LIMIT, WHOLE_NUMBER)


def retry_limit(text: str) -> int:
    """``--max-retries``: its form here; its range is the repository's (``max_retries: must be ...``)."""
    try:
        return whole_number(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {WHOLE_NUMBER}") from None


def json_object(text: str) -> dict:
    """``--payload``: a JSON object within the payload rules (validation.parse_payload), as a usage error."""
    try:
        return parse_payload(text)
    except QueueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    db_help = "database URL (default: $QUEUE_DB_URL or sqlite:///queue.db)"
    # --db is accepted before or after the command; SUPPRESS keeps a sub-command from resetting it.
    db_option = CLIArgumentParser(add_help=False)
    db_option.add_argument("--db", default=argparse.SUPPRESS, help=db_help)

    parser = CLIArgumentParser(prog="python -m queue_core", description="Admin CLI of the job queue.")
    parser.add_argument("--db", default=None, help=db_help)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=CLIArgumentParser)

    enqueue = commands.add_parser(
        "enqueue",
        parents=[db_option],
        help="enqueue a job",
        description="Enqueue a job. The defaults of a task declared with @queue.task(...) (its queue, priority, "
        "max_retries, timeout, retry_backoff) apply only when its module is given with --handlers; without it "
        "the options' own defaults below apply, whatever the task declares.",
    )
    enqueue.add_argument("type", help="job type, e.g. echo")
    enqueue.add_argument("--payload", type=json_object, default=None, metavar="JSON", help="a JSON object (default {})")
    or_task = "(default: the task's with --handlers, else %s)"
    priority_help = f"low, medium, high, critical or an integer {or_task % 'low'}"
    enqueue.add_argument("--priority", default=None, help=priority_help)
    retries_help = f"retries after a failed attempt before the job stays failed {or_task % DEFAULT_MAX_RETRIES}"
    enqueue.add_argument("--max-retries", type=retry_limit, default=None, metavar="N", help=retries_help)
    key_help = "enqueue once per key: the same key again makes no new job and prints the one it made"
    enqueue.add_argument("--idempotency-key", default=None, metavar="KEY", help=key_help)
    delay_help = "seconds before it may run (default 0)"
    enqueue.add_argument("--delay", type=non_negative_seconds, default=0.0, metavar="SECONDS", help=delay_help)
    timeout_help = f"seconds an attempt may run before it fails as timed out {or_task % 'no limit'}"
    enqueue.add_argument("--timeout", type=positive_seconds, default=None, metavar="SECONDS", help=timeout_help)
    enqueue.add_argument("--queue", default=None, help=f"queue name {or_task % 'default'}")
    handlers_help = (
        "import MODULE (repeatable), as a worker's --handlers: a task of TYPE there gives the job its defaults "
        "and checks --payload against its arguments; its Queue's database is used unless --db or $QUEUE_DB_URL"
    )
    enqueue.add_argument("--handlers", action="append", default=[], metavar="MODULE", help=handlers_help)

    listing = commands.add_parser("list", parents=[db_option], help="list jobs as a table")
    statuses = [s.value for s in JobStatus]
    status_help = f"only jobs in this status: {', '.join(statuses)}"
    listing.add_argument("--status", choices=statuses, metavar="STATUS", help=status_help)
    listing.add_argument("--type", default=None, help="only jobs of this type")
    limit_help = f"at most this many jobs, up to {MAX_LIST_LIMIT} (default 50)"
    listing.add_argument("--limit", type=list_limit, default=50, metavar="N", help=limit_help)
    after_help = "show jobs with a larger id (paging)"
    listing.add_argument("--after", type=after_id, default=None, metavar="ID", help=after_help)
    listing.add_argument("--json", action="store_true", help="one JSON object per line instead of a table")

    show = commands.add_parser("show", parents=[db_option], help="one job, with its attempts' errors")
    show.add_argument("id", type=job_id, help="the job's id")

    commands.add_parser("stats", parents=[db_option], help="jobs per status and throughput")

    retry_help = "put a failed or cancelled job (or every one --query matches) back to pending"
    retry = commands.add_parser("retry", parents=[db_option], help=retry_help)
    bulk.add_bulk_options(retry, job_id, "retry", cause=True)

    reap = commands.add_parser("reap", parents=[db_option], help="take back stale claims")
    reap.add_argument(
        "--older-than", type=non_negative_seconds, metavar="SECONDS", help="claims with no heartbeat for this long"
    )
    reap.add_argument(
        "--lost",
        action="store_true",
        help="the claims of every worker the registry shows lost (silent past its own --stale-after)",
    )

    prune = commands.add_parser("prune", parents=[db_option], help="delete finished jobs older than a retention")
    prune_help = (
        "completed, failed and cancelled jobs (and their errors) finished this long ago, and stopped or lost"
        " workers last seen then (required)"
    )
    prune.add_argument("--older-than", type=non_negative_seconds, required=True, metavar="SECONDS", help=prune_help)

    schedules.add_parser(commands, [db_option])
    controls.add_commands(commands, db_option, job_id)
    bulk.add_delete_command(commands, db_option, job_id)
    commands.add_parser(
        "migrate",
        parents=[db_option],
        help="make the queue's tables, or upgrade older ones, and say which",
        description="Make the queue's tables in a database that has none (a new SQLite file too), or upgrade "
        "tables of an older queue_core, to this queue_core's schema version; say which, or that there was "
        "nothing to do. Enqueue, a worker, the server and the console do the same on their first open; this "
        "is the step for a deploy that wants it done, and seen, before them.",
    )
    return parser


def print_job(repo: JobRepository, job, *, with_errors: bool = False) -> None:
    data = job.to_dict()
    if with_errors:
        data["errors"] = [e.to_dict() for e in repo.errors_for(job.id)]
    print_json(data, indent=2)


def print_table(jobs) -> None:
    rows = [("ID", "TYPE", "PRIORITY", "STATUS", "QUEUE", "RETRIES", "WORKER", "ERROR")]
    for job in jobs:
        error = (job.error or "").splitlines()[0][:50] if job.error else ""
        retries = f"{job.retry_count}/{job.max_retries}"
        status = f"{job.status} (cancel requested)" if job.cancel_requested and job.status == RUNNING else job.status
        rows.append((str(job.id), job.type, job.priority_label, status, job.queue, retries, job.worker_id or "", error))
    controls.print_rows(rows)


def run_enqueue(args, repo: JobRepository) -> int:
    given = {"priority": args.priority, "max_retries": args.max_retries, "timeout": args.timeout, "queue": args.queue}
    options = {name: value for name, value in given.items() if value is not None}
    payload = args.payload
    if args.handlers:  # imported by main: a task of this type gives its defaults, as task.enqueue() would
        task = registered_task(args.type, registry)
        if task is not None:
            payload = task.payload_for(dict(payload or {}))
            options = {**task.options, **options}
        elif registry.get(args.type) is None:
            modules = ", ".join(args.handlers)
            return fail(
                f"no task or handler of type {args.type!r} in {modules}: check the type, or leave out --handlers"
            )
    run_at = repo.now() + timedelta(seconds=args.delay) if args.delay else None
    job, created = repo.create(args.type, payload, idempotency_key=args.idempotency_key, run_at=run_at, **options)
    print_job(repo, job)
    if not created:
        print(f"job {job.id} already exists with this idempotency key; nothing new enqueued", file=sys.stderr)
    return 0


def run_list(args, repo: JobRepository) -> int:
    jobs = repo.list(args.status, args.type, limit=args.limit, after=args.after)
    if args.json:
        for job in jobs:
            print_json(job.to_dict())
    else:
        print_table(jobs)
    return 0


def run_show(args, repo: JobRepository) -> int:
    job = repo.find_by_id(args.id)
    if job is None:
        return fail(f"no job with id {args.id}")
    print_job(repo, job, with_errors=True)
    return 0


def run_stats(args, repo: JobRepository) -> int:
    stats = {
        "counts": repo.counts(),
        "per_minute_last_5m": repo.throughput(),
        "db": without_password(args.db or default_url()),
    }
    print_json(stats, indent=2)
    return 0


def run_retry(args, repo: JobRepository) -> int:
    if (done := bulk.by_query(args, repo, "retry")) is not None:
        return done
    job = repo.retry(args.id)
    if job is None:
        found = repo.find_by_id(args.id)
        if found is None:
            return fail(f"no job with id {args.id}")  # as show, cancel and delete say it
        return fail(f"cannot retry job {args.id}: it is {found.status}; only failed or cancelled jobs can be retried")
    print_job(repo, job)
    return 0


def run_reap(args, repo: JobRepository) -> int:
    if args.older_than is None and not args.lost:
        return fail("reap needs --older-than SECONDS, --lost, or both (see python -m queue_core reap --help)")
    reaped = 0 if args.older_than is None else repo.reap_stale(timedelta(seconds=args.older_than))
    lost = repo.reap_lost_workers() if args.lost else {}
    print_json({"reaped": reaped + sum(lost.values()), **({"lost_workers": lost} if args.lost else {})})
    return 0


def run_prune(args, repo: JobRepository) -> int:
    with StopOnInterrupt() as interrupt:
        pruned = repo.prune(timedelta(seconds=args.older_than), on_batch=interrupt.keep_going)
    print_json({"pruned": pruned})
    if interrupt.stopped:
        note = (
            f"stopped by ctrl-C after {pruned:,} jobs: the others were not touched; run the command again for the rest"
        )
        print(note, file=sys.stderr)
        return INTERRUPTED
    return 0


def run_migrate(args, repo: JobRepository) -> int:
    url = without_password(args.db or default_url())
    current = f"the queue's tables in {url} are at schema version {SCHEMA_VERSION}, this queue_core's: nothing to do"
    print(schema_change(repo.db, args.db) or current)
    return 0


# One function per sub-command of build_parser, in the order --help lists them.
RUNNERS = {
    "enqueue": run_enqueue,
    "list": run_list,
    "show": run_show,
    "stats": run_stats,
    "retry": run_retry,
    "reap": run_reap,
    "prune": run_prune,
    "schedules": schedules.run_schedules,
    **controls.RUNNERS,
    "delete": bulk.run_delete,
    "migrate": run_migrate,
}
COMMANDS = tuple(RUNNERS)


# The commands that change nothing, whatever their options; the bulk actions change nothing with --dry-run.
READ_COMMANDS = frozenset({"list", "show", "stats", "queues", "workers", "schedules"})


def only_reads(args) -> bool:
    return args.command in READ_COMMANDS or getattr(args, "dry_run", False)


def run(args, repo: JobRepository) -> int:
    return RUNNERS[args.command](args, repo)


def failed(message: str) -> int:
    """A failure that is not the input's (the database's): one ``error:`` line, exit 1; running again may work."""
    print(f"error: {one_line(message)}", file=sys.stderr)
    return EXIT_FAILURE


def main(argv: list[str] | None = None) -> int:
    # A payload may hold a lone surrogate (JSON allows "\\ud800"), which no UTF-8 output can show: written
    # escaped rather than a traceback halfway through a listing.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    args = build_parser().parse_args(argv)
    if getattr(args, "handlers", None):
        # The schedules of --handlers modules: imported before the database is opened, which their Queue
        # may name (as a worker of them would serve it).
        problem = import_handler_modules(args.handlers) or adopt_queue_url(args)
        if problem:
            return fail(problem)
    try:
        # Only enqueue and migrate make a new SQLite file (or the tables): to every other command a database
        # without them is a mistyped path or name. A command that only reads upgrades no older schema: it
        # would write, and stop the workers of the older queue_core from opening the database again.
        db = open_for_command(args.db, create=args.command in ("enqueue", "migrate"), upgrade=not only_reads(args))
    except QueueError as exc:
        if cannot := locked_database(exc, args.db) or readonly_database(exc, args.db):  # a migration writes
            return failed(cannot)
        return fail(str(exc))
    try:
        return run(args, JobRepository(db))
    except QueueError as exc:
        return fail(str(exc))
    except DATABASE_ERRORS as exc:  # e.g. locked past busy_timeout, or the server went away: nothing was changed
        cannot = locked_database(exc, args.db) or readonly_database(exc, args.db) or refused(exc, args.db)
        return failed(cannot or f"database error: {str(exc) or type(exc).__name__}")
    except RecursionError:  # a payload stored before depth was limited: the JSON decoder cannot read it back
        return failed("cannot read a job: its stored payload is nested too deeply to decode")
    finally:
        db.close()
