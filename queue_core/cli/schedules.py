"""``python -m queue_core schedules --handlers MODULE``: each periodic job with its cron, last and next run.

The schedules live in code (``@queue.periodic``, ``@queue.task(cron=...)``), so the command imports the
modules a worker would (``--handlers``) and reads the last run of each from the database.
"""

from __future__ import annotations

from ..clock import utc_now
from ..store.repository import JobRepository
from ..tasks import registered_schedules
from ..worker.handlers import registry
from ..worker.scheduler import ScheduleStatus, describe_schedules
from .args import print_json


def add_parser(commands, parents) -> None:
    schedules = commands.add_parser("schedules", parents=parents, help="periodic jobs: cron, last and next run")
    schedules.add_argument(
        "--handlers", action="append", default=[], metavar="MODULE", help="import MODULE to find its schedules"
    )
    schedules.add_argument("--json", action="store_true", help="one JSON object per line instead of a table")


def _when(value) -> str:
    return "" if value is None else value.isoformat(timespec="seconds").replace("+00:00", "Z")


def _as_dict(line: ScheduleStatus) -> dict:
    return {
        "name": line.name,
        "cron": line.cron,
        "type": line.type,
        "last_run": _when(line.last_run) or None,
        "last_job_id": line.last_job_id,
        "last_status": line.last_status,
        "next_run": _when(line.next_run),
    }


def run_schedules(args, repo: JobRepository) -> int:
    # The --handlers modules are imported by admin.main, before the database their Queue may name is opened.
    lines = describe_schedules(repo, registered_schedules(registry), utc_now())
    if args.json:
        for line in lines:
            print_json(_as_dict(line))
        return 0
    if not lines:
        print(
            f"no schedules in {', '.join(args.handlers)}: "
            "define one with @queue.periodic(...) or @queue.task(..., cron=...)"
            if args.handlers
            else "no schedules (give the modules that define them with --handlers MODULE)"
        )
        return 0
    rows = [("NAME", "CRON", "TYPE", "LAST RUN", "LAST JOB", "NEXT RUN")]
    for line in lines:
        last_job = "" if line.last_job_id is None else f"{line.last_job_id} {line.last_status}"
        rows.append((line.name, line.cron, line.type, _when(line.last_run), last_job, _when(line.next_run)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    return 0
