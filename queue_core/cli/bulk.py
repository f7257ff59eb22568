"""The admin CLI's bulk actions (issue 16): ``retry``, ``cancel`` and ``delete`` of every job a ``--query``
names, each with ``--dry-run``; and ``delete ID``. ``retry ID`` and ``cancel ID`` stay as they were.

One line of output says what was done, as the console's confirmation says it:
``retried 1,234 of 1,234 failed jobs matching type:x (0 skipped: changed meanwhile)``.
"""

from __future__ import annotations

import argparse

from ..store.bulk import PAST
from ..store.repository import JobRepository
from .args import INTERRUPTED, fail
from .interrupt import StopOnInterrupt

QUERY_HELP = 'act on every job this query matches, e.g. "status:failed type:send-invoice" (see README)'


CAUSE_HELP = (
    "act on the failed jobs of this cause: an error signature as the console's causes view (6) shows it, "
    'e.g. "card declined (order #<n>)"; with --query, those of its jobs that match'
)


def add_bulk_options(command, job_id, what: str, *, cause: bool = False) -> None:
    """``ID`` or ``--query`` (and, for the actions failed jobs take, ``--cause``), and ``--dry-run``."""
    command.add_argument("id", type=job_id, nargs="?", help=f"the job to {what} (or --query)")
    command.add_argument("--query", default=None, metavar="QUERY", help=QUERY_HELP)
    if cause:
        command.add_argument("--cause", default=None, metavar="SIGNATURE", help=CAUSE_HELP)
    else:
        # Known, to be refused in words: unknown, argparse took its value for the job ID ("'x' is not a job id").
        command.add_argument("--cause", dest="cause_refused", default=None, help=argparse.SUPPRESS)
    command.add_argument("--dry-run", action="store_true", help="say how many jobs would be touched; change none")


def add_delete_command(commands, db_option, job_id) -> None:
    delete = commands.add_parser(
        "delete", parents=[db_option], help="delete a job (or every job --query matches) and its errors"
    )
    add_bulk_options(delete, job_id, "delete", cause=True)


def bulk_request(args, action: str) -> str | None:
    """Why these arguments are not one job or one query (None when they are fine)."""
    if getattr(args, "cause_refused", None) is not None:
        why = f"a cause groups failed jobs, which {action} does not take (retry or delete them)"
        return f"{action} has no --cause: {why}"
    cause = getattr(args, "cause", None)
    either = "--query / --cause" if hasattr(args, "cause") else "--query"
    if args.id is not None and (args.query is not None or cause is not None):
        return f"{action} takes a job ID or {either}, not both"
    if args.id is None and args.query is None and cause is None:
        return f'{action} needs a job ID or --query "..." (e.g. --query "status:failed type:send-invoice")'
    if cause is not None and not cause.strip():
        return "--cause is empty: give an error signature as the causes view (6) shows it"
    if args.query is not None and not args.query.strip() and cause is None:
        return f'--query is empty: it would {action} every job; name them, e.g. --query "status:failed"'
    if args.dry_run and args.query is None and cause is None:
        return "--dry-run goes with --query or --cause"
    return None


def by_query(args, repo: JobRepository, action: str) -> int | None:
    """The exit code when the arguments are refused or name a ``--query`` (done here); None for one job ID,
    which the command's own runner acts on."""
    problem = bulk_request(args, action)
    if problem:
        return fail(problem)
    if args.query is None and getattr(args, "cause", None) is None:
        return None
    return run_bulk(args, repo, action)


def run_bulk(args, repo: JobRepository, action: str) -> int:
    """Plan (the dry run), then apply unless ``--dry-run``; one line saying what happened."""
    query, cause = args.query or "", getattr(args, "cause", None)
    if cause is None:
        plan = repo.plan_bulk(action, query)
    else:  # the failed jobs whose error has this signature, planned (and fenced) like any selection
        plan = repo.plan_bulk(action, query, status="failed", ids=repo.failure_group_ids(cause, query))
    described = plan.describe() + (f' of cause "{cause}"' if cause is not None else "")
    # A delete never takes a running job (its worker would ack a job that is gone): said, with what to do.
    running = repo.count_running_matching(query) if action == "delete" and cause is None else 0
    left = f"; {running:,} running {'job' if running == 1 else 'jobs'} left alone (cancel first)" if running else ""
    if args.dry_run:
        print(f"would {action} {described}{left}")
        return 0
    with StopOnInterrupt() as interrupt:
        outcome = repo.apply_bulk(plan, on_batch=interrupt.keep_going)
    skipped = f"{outcome.skipped:,} skipped: changed meanwhile"
    line = f"{PAST[action]} {outcome.changed:,} of {described} ({skipped}){left}"
    if outcome.stopped:
        rest = plan.count - outcome.changed - outcome.skipped
        print(f"stopped by ctrl-C: {line}; the other {rest:,} were not touched: run the command again for the rest")
        return INTERRUPTED
    print(line)
    return 0


def run_delete(args, repo: JobRepository) -> int:
    if (done := by_query(args, repo, "delete")) is not None:
        return done
    found = repo.find_by_id(args.id)
    if found is None:
        return fail(f"no job with id {args.id}")
    outcome = repo.bulk("delete", ids=[args.id])
    if outcome.changed == 0:
        # Running (or it changed meanwhile): a worker holds it, and its ack would find nothing.
        return fail(f"cannot delete job {args.id}: it is {repo.find_by_id(args.id).status}; cancel it first")
    print(f"deleted job {args.id}")  # the result, on stdout as every command's (and delete --query's) is
    return 0
