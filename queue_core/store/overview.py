"""What the console shows about queues and workers, each a bounded read: no read here scans every job.

``JobRepository.queues()`` counts every job per queue exactly (a full scan at a million jobs: 184 ms); the
console's queues view reads ``queue_overview`` instead: the queue names by a loose index scan, each
(queue, status) counted only up to a cap, the latency by one index seek per priority level, and the done
and failed rates over the recent few minutes' range of the (status, updated_at) and job_errors indexes.
The header needs only the names of paused queues, which the small ``queues`` table holds. The registry is
one row per worker, so ``workers()`` is cheap. Nothing here changes a job.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import peewee as pw

from ..rules import COMPLETED, PENDING, RUNNING, is_stale
from .models import JobStatus
from .reads import MAX_PRIORITY_LEVELS, page_columns
from .schema import queue_index_parts

MAX_QUEUES = 200  # a queues view lists at most this many queues (names beyond are not read)
RATE_PERIOD = timedelta(minutes=5)


@dataclass(frozen=True)
class QueueOverview:
    """A queue as the console's queues view shows it."""

    name: str
    paused: bool
    counts: dict[str, int]  # per status, each at most cap + 1 ("more than cap")
    latency: float | None  # seconds its oldest due pending job has waited; None when nothing is due
    done_per_minute: float  # completed jobs per minute over RATE_PERIOD
    failed_per_minute: float  # failed attempts per minute over RATE_PERIOD


def queue_overview(repo, *, now: datetime, cap: int, period: timedelta = RATE_PERIOD) -> list[QueueOverview]:
    """Every queue that has jobs or is paused, sorted by name, each read in bounded time."""
    Queue = repo.QueueRecord
    flags = dict(Queue.select(Queue.name, Queue.paused).tuples())
    names = sorted(set(queue_names(repo)) | {name for name, paused in flags.items() if paused})
    done, failed = _rates(repo, now - period)
    minutes = period.total_seconds() / 60
    return [
        QueueOverview(
            name,
            bool(flags.get(name, False)),
            {status.value: _capped_count(repo, name, status.value, cap) for status in JobStatus},
            oldest_due_age(repo, name, now),
            done.get(name, 0) / minutes,
            failed.get(name, 0) / minutes,
        )
        for name in names
    ]


def queue_names(repo, *, limit: int = MAX_QUEUES) -> list[str]:
    """The queues that hold jobs, by a loose index scan: one seek per queue on a (queue, ...) index.

    PostgreSQL's two such indexes are partial (``schema.queue_index_parts``): there the pending jobs' queues
    and the other jobs' are two scans, merged.
    """
    Job = repo.Job
    names = {name for part in queue_index_parts(Job) for name in _loose_scan(Job, part, limit)}
    return sorted(names)[:limit]


def _loose_scan(Job, among, limit: int) -> list[str]:
    """The first ``limit`` queue names of the jobs ``among`` selects (all with None), one seek each."""
    names: list[str] = []
    while len(names) < limit:
        query = Job.select(pw.fn.MIN(Job.queue))
        if among is not None:
            query = query.where(among)
        if names:
            query = query.where(Job.queue > names[-1])
        name = query.scalar()
        if name is None:
            break
        names.append(name)
    return names


def _capped_count(repo, queue: str, status: str, cap: int) -> int:
    Job = repo.Job
    return Job.select(pw.SQL("1")).where((Job.queue == queue) & (Job.status == status)).limit(cap + 1).count()


def oldest_due_age(repo, queue: str, now: datetime) -> float | None:
    """Seconds since ``queue``'s oldest due pending job became due; None when none is due.

    The claim index orders a queue's pending jobs by priority, then run_at: the oldest run_at of each
    priority level is one seek, and the levels are found by a loose scan (a queue uses a handful)."""
    Job = repo.Job
    pending = (Job.queue == queue) & (Job.status == PENDING)
    oldest, level = None, None
    for _ in range(MAX_PRIORITY_LEVELS):
        query = Job.select(pw.fn.MAX(Job.priority)).where(pending)
        level = query.where(Job.priority < level).scalar() if level is not None else query.scalar()
        if level is None:
            break
        first = Job.select(Job.run_at).where(pending & (Job.priority == level)).order_by(Job.run_at).limit(1)
        run_at = Job.run_at.python_value(first.scalar())
        oldest = run_at if oldest is None or run_at < oldest else oldest
    if oldest is None or oldest > now:
        return None
    return (now - oldest).total_seconds()


def _rates(repo, since: datetime) -> tuple[dict[str, int], dict[str, int]]:
    """Per queue: jobs completed and attempts failed since ``since`` (index range reads of the recent tail)."""
    Job, JobError = repo.Job, repo.JobError
    done = (
        Job.select(Job.queue, pw.fn.COUNT(pw.SQL("*")))
        .where((Job.status == COMPLETED) & (Job.updated_at >= Job.updated_at.to_value(since)))
        .group_by(Job.queue)
    )
    failed = (
        JobError.select(Job.queue, pw.fn.COUNT(pw.SQL("*")))
        .join(Job, on=(JobError.job_id == Job.id))
        .where(JobError.created_at >= JobError.created_at.to_value(since))
        .group_by(Job.queue)
    )
    return dict(done.tuples()), dict(failed.tuples())


def recent_failures(repo, since: datetime) -> dict[tuple[str, str], int]:
    """Attempts failed since ``since`` per (queue, type): the recent range of the job_errors ``created_at``
    index, each row joined to its job by primary key, so a read costs the recent failures, not the history."""
    Job, JobError = repo.Job, repo.JobError
    failed = (
        JobError.select(Job.queue, Job.type, pw.fn.COUNT(pw.SQL("*")))
        .join(Job, on=(JobError.job_id == Job.id))
        .where(JobError.created_at >= JobError.created_at.to_value(since))
        .group_by(Job.queue, Job.type)
    )
    return {(queue, type_): n for queue, type_, n in failed.tuples()}


def stale_claims(repo, *, now: datetime, default_stale_after: float) -> int:
    """Running jobs silent (no heartbeat, or no claim if never beaten) for longer than the ``stale_after`` their
    holder registered, or ``default_stale_after`` seconds when the holder has no registry row.

    Each worker's own setting, as its ``lost`` state is judged: one threshold for all counted a claim of a
    ``--stale-after 60`` worker that died as healthy for 300 s, and one of a ``--stale-after 3600`` worker as
    stale after 300 s, which its reaper would never take back. Reads the running jobs only (as many as the
    workers' slots) and the registry, one row per worker.
    """
    Job, Worker = repo.Job, repo.WorkerRecord
    limits = dict(Worker.select(Worker.id, Worker.stale_after).tuples())
    # A literal status (models.StatusField): the (status, ...) indexes serve it, as in reads.JobReads._stale.
    running = Job.select(Job.worker_id, Job.heartbeat_at, Job.claimed_at).where(Job.status == RUNNING)
    return sum(
        is_stale(job, now, timedelta(seconds=limits.get(job.worker_id, default_stale_after)))
        for job in running
        # A running job always has its claim time; a hand-edited row may not: not ours to judge.
        if job.claimed_at is not None
    )


def paused_queues(repo) -> list[str]:
    Queue = repo.QueueRecord
    return [name for (name,) in Queue.select(Queue.name).where(Queue.paused == True).order_by(Queue.name).tuples()]  # noqa: E712


def lost_workers(repo) -> list[str]:
    return [worker.id for worker in repo.workers() if worker.state == "lost"]


def held_by(repo, worker_id: str, *, limit: int = 200) -> list:
    """The running jobs ``worker_id`` holds, longest running first, as light rows (no payload)."""
    Job = repo.Job
    query = (
        Job.select(*page_columns(Job))
        .where((Job.status == "running") & (Job.worker_id == worker_id))
        .order_by(Job.claimed_at, Job.id)
        .limit(limit)
    )
    return repo._window_reader.named(repo.db.execute_sql(*query.sql()))
