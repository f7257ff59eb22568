"""Must hold (issue 13), on both backends: 4 worker processes drain 2,000 jobs in 3 queues while one queue is
paused mid-drain. No job of the paused queue starts after ``pause_queue`` returns; after ``resume_queue``
all finish; each job runs exactly once."""

from __future__ import annotations

import multiprocessing
import time

import procs

from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository

QUEUES = ("alpha", "beta", "gamma")
PAUSED = "beta"
JOBS = 2000
WORKERS = 4


def wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def started(repo: JobRepository, queue: str) -> set[int]:
    """The ids of the queue's jobs that were ever claimed (a claim is what starts a job)."""
    Job = repo.Job
    return {job_id for (job_id,) in Job.select(Job.id).where((Job.queue == queue) & (Job.attempt > 0)).tuples()}


def completed(repo: JobRepository, queue: str) -> int:
    return next(state.counts["completed"] for state in repo.queues() if state.name == queue)


def test_a_queue_paused_mid_drain_starts_nothing_until_resumed_and_every_job_runs_once(db_url):
    db = open_database(db_url)
    repo = JobRepository(db)
    ids = {job.id for job in repo.create_many({"type": "t", "queue": QUEUES[i % 3]} for i in range(JOBS))}
    sizes = {queue: state.counts["pending"] for queue, state in ((s.name, s) for s in repo.queues())}
    assert sum(sizes.values()) == JOBS and set(sizes) == set(QUEUES)

    ctx = multiprocessing.get_context("spawn")
    start, stop, results = ctx.Barrier(WORKERS + 1), ctx.Event(), ctx.Queue()
    workers = [
        ctx.Process(target=procs.drain_until_stopped, args=(db_url, f"w{i}", start, stop, results))
        for i in range(WORKERS)
    ]
    for process in workers:
        process.start()
    try:
        start.wait(timeout=120)
        wait_for(lambda: completed(repo, PAUSED) >= 60, 60, f"the drain of {PAUSED} to be under way")
        repo.pause_queue(PAUSED)
        before = started(repo, PAUSED)
        assert len(before) < sizes[PAUSED], "the queue drained before the pause: the test proves nothing"

        # The other queues drain fully; the paused one's running jobs finish; none of its jobs starts.
        others = [queue for queue in QUEUES if queue != PAUSED]
        wait_for(lambda: all(completed(repo, q) == sizes[q] for q in others), 120, "the other queues to drain")
        wait_for(lambda: repo.queue_state(PAUSED).counts["running"] == 0, 30, "the paused queue's running jobs")
        time.sleep(0.5)  # workers keep polling: give a wrong claim every chance to happen
        assert started(repo, PAUSED) == before
        assert repo.queue_state(PAUSED).counts["pending"] == sizes[PAUSED] - len(before)

        repo.resume_queue(PAUSED)
        wait_for(lambda: repo.counts()["completed"] == JOBS, 120, "every job to complete after the resume")
    finally:
        stop.set()
        outcome = [results.get(timeout=120) for _ in workers]
        for process in workers:
            process.join(timeout=30)

    assert [error for _, _, errors in outcome for error in errors] == []
    claims = [job_id for _, claimed, _ in outcome for job_id, _ in claimed]
    assert sorted(claims) == sorted(ids)  # every job claimed, none twice
    assert {job.attempt for job in repo.list(limit=1000)} == {1}
    assert all(process.exitcode == 0 for process in workers)
    db.close()
