"""The facts a console header shows on every view, each a small read: paused queues, lost workers.

``JobRepository.queues()`` counts every job per queue (a full scan at a million jobs); the header needs
only the names of paused queues, which the small ``queues`` table holds. The registry is one row per
worker, so ``workers()`` is cheap. Nothing here changes a job.
"""

from __future__ import annotations

from .pages import page_columns


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
