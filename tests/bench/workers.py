"""Our worker processes: drain N no-op jobs with 1, 2, 4 ``--burst`` workers; pick-up latency when idle."""

from __future__ import annotations

import random
import time

from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository

from .measure import Result, Stopwatch, note_peak_rss, rate, reap, repeat, spawn
from .scenarios import NOOP, Context

LOCKED = "database is locked"


def worker_args(url: str, worker_id: str, *extra: str) -> list[str]:
    return [
        "-m",
        "queue_core.worker",
        "--db",
        url,
        "--handlers",
        "tests.bench.noop_handlers",
        "--worker-id",
        worker_id,
        "--log-level",
        "warning",  # errors (e.g. "database is locked") still reach stderr, where we count them
        *extra,
    ]


def worker_drains(ctx: Context, process_counts: list[int]) -> list[Result]:
    """One Result per process count, plus the "database is locked" count over all of them and worker RSS."""
    drains = {p: ctx.result(f"ours.drain_{p}p", f"ours: drain, {p} worker process(es) --burst") for p in process_counts}
    # The same drains without process start-up and exit: first claim to last completion, from the rows.
    steady = {
        p: ctx.result(f"ours.steady_{p}p", f"ours: drain, {p} worker process(es), first claim to last completion")
        for p in process_counts
    }
    locked = ctx.result("ours.locked_errors", "ours: 'database is locked' errors in all drains", unit="errors")
    rss = ctx.result("ours.worker_rss", "ours: worker peak RSS (any drain)", unit="MB")
    locked_total, rss_values = 0, []

    def one_round(processes: int) -> float:
        nonlocal locked_total
        url = ctx.backend.fresh()
        ctx.backend.fill(url, ctx.n)
        with Stopwatch() as watch:
            children = [spawn(worker_args(url, f"bench{i}", "--burst")) for i in range(processes)]
            outcomes = [reap(child, timeout=600) for child in children]
        for code, peak, stderr in outcomes:
            if code != 0:
                raise RuntimeError(f"worker exited with {code}: {stderr.strip()[-500:]}")
            locked_total += stderr.count(LOCKED)
            rss_values.append(peak)
            note_peak_rss(drains[processes], peak)
        db = open_database(url)
        repo = JobRepository(db)
        completed = repo.counts()["completed"]
        steady[processes].values.append(rate(ctx.n, drain_window(repo)))
        db.close()
        assert completed == ctx.n, f"{processes} workers completed {completed} of {ctx.n}"
        return rate(ctx.n, watch.seconds)

    for processes, result in drains.items():
        result.values = repeat(ctx.rounds, lambda p=processes: one_round(p))
    locked.values = [float(locked_total)]
    rss.values = rss_values
    # "database is locked" is SQLite's way to fail a writer; PostgreSQL's row locks have no such error.
    return [*drains.values(), *steady.values(), *([locked] if ctx.backend.name == "sqlite" else []), rss]


def drain_window(repo: JobRepository) -> float:
    """Seconds from the first claim to the last completion, as the rows record them."""
    Job = repo.Job
    first = Job.select(Job.claimed_at).order_by(Job.claimed_at).limit(1).scalar()
    last = Job.select(Job.updated_at).order_by(Job.updated_at.desc()).limit(1).scalar()
    first, last = Job.claimed_at.python_value(first), Job.updated_at.python_value(last)
    return (last - first).total_seconds()


def pickup_latency(ctx: Context, samples: int) -> Result:
    """An idle worker (default poll settings) and a job enqueued at a random moment: ms until it is claimed.

    Measured from the job's ``created_at`` to its ``claimed_at``, both stamped on this machine's clock.
    """
    result = ctx.result("ours.pickup_latency", "ours: pick-up latency of an idle worker (default polling)", unit="ms")
    result.n = samples
    url = ctx.backend.fresh()
    db = open_database(url)
    repo = JobRepository(db)
    worker = spawn(worker_args(url, "idle"))
    rng = random.Random(7)
    try:
        time.sleep(1.0)  # started and idle
        for _ in range(samples):
            time.sleep(rng.uniform(0.2, 3.0))  # anywhere in its back-off
            job, _ = repo.create(NOOP)
            deadline = time.monotonic() + 30
            while (seen := repo.find_by_id(job.id)).claimed_at is None:
                if time.monotonic() > deadline or worker.poll() is not None:
                    raise RuntimeError("the idle worker never claimed the job")
                time.sleep(0.005)
            result.values.append((seen.claimed_at - seen.created_at).total_seconds() * 1000)
    finally:
        worker.terminate()
        reap(worker)
        db.close()
    return result
