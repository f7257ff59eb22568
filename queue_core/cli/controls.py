"""The admin CLI's operator controls (issue 13): pause and resume a queue, list queues, cancel a job, and
list the worker registry. ``admin.build_parser`` adds these sub-commands; ``admin.RUNNERS`` runs them."""

from __future__ import annotations

import sys

from ..rules import RUNNING
from ..store.repository import JobRepository
from .args import fail, one_line, print_json
from .bulk import add_bulk_options, by_query


def add_commands(commands, db_option, job_id) -> None:
    """The sub-commands of this module, on the admin parser's ``commands``."""
    for verb, what in (("pause", "stop workers claiming a queue's jobs"), ("resume", "let workers claim them again")):
        command = commands.add_parser(verb, parents=[db_option], help=what)
        command.add_argument("name", help="queue name (it need not have jobs yet)")
    queues = commands.add_parser("queues", parents=[db_option], help="queues: paused, jobs per status, latency")
    queues.add_argument("--json", action="store_true", help="one JSON object per line instead of a table")
    cancel_help = "cancel a pending or running job (or every one --query matches)"
    cancel = commands.add_parser("cancel", parents=[db_option], help=cancel_help)
    add_bulk_options(cancel, job_id, "cancel")
    workers = commands.add_parser("workers", parents=[db_option], help="the worker registry, with each state")
    workers.add_argument("--json", action="store_true", help="one JSON object per line instead of a table")


def print_rows(rows: list[tuple]) -> None:
    """A table: the first row is the header, columns padded to their widest cell. Each cell with its control
    characters escaped: a job's error text comes from handlers and API clients, and an escape sequence or a
    bidi override in it acted on the operator's terminal (coloured, reordered or hid the rows after it)."""
    rows = [tuple(one_line(cell) for cell in row) for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


def seconds_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}s"


def run_pause(args, repo: JobRepository) -> int:
    print_json(repo.pause_queue(args.name).to_dict())
    return 0


def run_resume(args, repo: JobRepository) -> int:
    print_json(repo.resume_queue(args.name).to_dict())
    return 0


def run_queues(args, repo: JobRepository) -> int:
    states = repo.queues()
    if args.json:
        for state in states:
            print_json(state.to_dict())
        return 0
    statuses = list(states[0].counts) if states else ["pending", "running", "completed", "failed", "cancelled"]
    rows = [("QUEUE", "PAUSED", *(status.upper() for status in statuses), "LATENCY")]
    for state in states:
        counts = (str(state.counts[status]) for status in statuses)
        rows.append((state.name, "yes" if state.paused else "no", *counts, seconds_text(state.latency)))
    print_rows(rows)
    return 0


def run_cancel(args, repo: JobRepository) -> int:
    if (done := by_query(args, repo, "cancel")) is not None:
        return done
    job = repo.cancel(args.id)
    if job is None:
        found = repo.find_by_id(args.id)
        if found is None:
            return fail(f"no job with id {args.id}")
        return fail(f"cannot cancel job {args.id}: it is already {found.status}")
    print_json(job.to_dict(), indent=2)
    if job.status == RUNNING:
        print(f"job {job.id} is running: its worker {job.worker_id} stops it at its next heartbeat", file=sys.stderr)
    return 0


def run_workers(args, repo: JobRepository) -> int:
    workers = repo.workers()
    if args.json:
        for worker in workers:
            print_json(worker.to_dict())
        return 0
    rows = [("WORKER", "STATE", "HOST", "PID", "QUEUES", "SLOTS", "RUNNING", "DONE", "FAILED", "SILENT")]
    for w in workers:
        queues = w.queues if isinstance(w.queues, str) else ",".join(w.queues)
        numbers = (w.pid, w.concurrency, w.running, w.completed, w.failed)
        pid, slots, running, done, failed = (str(n) for n in numbers)
        rows.append((w.id, w.state, w.host, pid, queues, slots, running, done, failed, seconds_text(w.silent_for)))
    print_rows(rows)
    return 0


RUNNERS = {
    "pause": run_pause,
    "resume": run_resume,
    "queues": run_queues,
    "cancel": run_cancel,
    "workers": run_workers,
}
