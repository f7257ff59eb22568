"""Our worker processes: drain N no-op jobs with 1, 2, 4 ``--burst`` workers; pick-up latency when idle."""

from __future__ import annotations

import os
import random
import time

from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository

from .measure import Result, Stopwatch, first_cpu, note_peak_rss, rate, reap, repeat, spawn
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


def worker_drains(
    ctx: Context,
    process_counts: list[int],
    concurrent: list[int] = (),
    *,
    backlog: bool = False,
    one_cpu: bool = False,
    pooled: list[tuple[int, int]] = (),
) -> list[Result]:
    """One Result per process count (default settings), and per count in ``concurrent`` with
    ``--concurrency 4``, plus the "database is locked" count over all of them and worker RSS. ``backlog``:
    the drains only, labelled as the drain of a backlog of ctx.n jobs (a claim's cost as the backlog grows).
    ``one_cpu``: also one process ``--concurrency 4`` kept on one CPU (``taskset -c``), which shows what
    handing the GIL between slot threads on different CPUs costs (README, Performance). ``pooled``: also
    these (processes, slots) as one command, ``--processes N --concurrency C``, whose processes fork from
    one that has started (the others are N commands, each starting on its own)."""
    cpu = first_cpu() if one_cpu else None
    runs = [(p, 1, None, False) for p in process_counts] + [(p, 4, None, False) for p in concurrent]
    runs += [(1, 4, cpu, False)] if one_cpu else []
    runs += [(p, c, None, True) for p, c in pooled]
    key, what = ("backlog_", f"drain of a {ctx.n:,}-job backlog") if backlog else ("", "drain")

    def named(p: int, c: int, on: int | None, pool: bool) -> tuple[str, str]:
        """(key suffix, label suffix) of a run's settings."""
        suffix, label = ("" if c == 1 else f"_c{c}"), ("" if c == 1 else f" --concurrency {c}")
        if on is not None:
            suffix, label = f"{suffix}_one_cpu", f"{label}, on one CPU (taskset -c {on})"
        if pool:
            suffix, label = f"{suffix}_pool", f"{label}, one command (--processes {p})"
        return suffix, label

    drains, steady = {}, {}
    for run in runs:
        p = run[0]
        suffix, label = named(*run)
        drains[run] = ctx.result(
            f"ours.{key}drain_{p}p{suffix}", f"ours: {what}, {p} worker process(es) --burst{label}"
        )
        # The same drain without process start-up and exit: first claim to last completion, from the rows.
        steady[run] = ctx.result(
            f"ours.{key}steady_{p}p{suffix}",
            f"ours: {what}, {p} worker process(es){label}, first claim to last completion",
        )
    locked = ctx.result("ours.locked_errors", "ours: 'database is locked' errors in all drains", unit="errors")
    rss = ctx.result("ours.worker_rss", "ours: worker peak RSS (any drain)", unit="MB")
    locked_total, rss_values = 0, []

    def one_round(run: tuple[int, int, int | None, bool]) -> float:
        nonlocal locked_total
        processes, concurrency, on, pool = run
        url = ctx.backend.fresh()
        ctx.backend.fill(url, ctx.n)
        extra = ["--burst", "--concurrency", str(concurrency)]
        commands = [worker_args(url, f"bench{i}", *extra) for i in range(processes)]
        if pool:
            commands = [worker_args(url, "bench", *extra, "--processes", str(processes))]
        with Stopwatch() as watch:
            children = [spawn(command, cpu=on) for command in commands]
            outcomes = [reap(child, timeout=600) for child in children]
        for code, peak, stderr in outcomes:
            if code != 0:
                raise RuntimeError(f"worker exited with {code}: {stderr.strip()[-500:]}")
            locked_total += stderr.count(LOCKED)
            rss_values.append(peak)
            note_peak_rss(drains[run], peak)
        db = open_database(url)
        repo = JobRepository(db)
        completed = repo.counts()["completed"]
        steady[run].values.append(rate(ctx.n, drain_window(repo)))
        db.close()
        assert completed == ctx.n, f"{processes} workers completed {completed} of {ctx.n}"
        return rate(ctx.n, watch.seconds)

    for run, result in drains.items():
        result.values = repeat(ctx.rounds, lambda run=run: one_round(run))
    locked.values = [float(locked_total)]
    rss.values = rss_values
    if backlog:
        return [*drains.values(), *steady.values()]
    # "database is locked" is SQLite's way to fail a writer; PostgreSQL's row locks have no such error.
    return [*drains.values(), *steady.values(), *([locked] if ctx.backend.name == "sqlite" else []), rss]


def drain_window(repo: JobRepository) -> float:
    """Seconds from the first claim to the last completion, as the rows record them."""
    Job = repo.Job
    first = Job.select(Job.claimed_at).order_by(Job.claimed_at).limit(1).scalar()
    last = Job.select(Job.updated_at).order_by(Job.updated_at.desc()).limit(1).scalar()
    first, last = Job.claimed_at.python_value(first), Job.updated_at.python_value(last)
    return (last - first).total_seconds()


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) the process has used so far, from /proc."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pickup_latency(ctx: Context, samples: int, idle_seconds: float = 10.0) -> list[Result]:
    """An idle worker (default settings) and a job enqueued at a random moment: ms until it is claimed; and
    the share of a core the idle worker uses (CPU time over ``idle_seconds`` with nothing to do).

    Latency is measured from the job's ``created_at`` to its ``claimed_at``, both stamped on this machine's
    clock.
    """
    result = ctx.result("ours.pickup_latency", "ours: pick-up latency of an idle worker (default settings)", unit="ms")
    result.n = samples
    idle_cpu = ctx.result("ours.idle_cpu", f"ours: idle worker CPU over {idle_seconds:g} s", unit="% of a core")
    idle_cpu.n = 1
    url = ctx.backend.fresh()
    db = open_database(url)
    repo = JobRepository(db)
    worker = spawn(worker_args(url, "idle"))
    rng = random.Random(7)
    try:
        deadline = time.monotonic() + 60
        while not any(w.id == "idle" for w in repo.workers()):  # registered: start-up is over
            if time.monotonic() > deadline or worker.poll() is not None:
                raise RuntimeError("the idle worker never started")
            time.sleep(0.05)
        time.sleep(1.0)  # and idle
        before = cpu_seconds(worker.pid)
        time.sleep(idle_seconds)
        idle_cpu.values.append(100 * (cpu_seconds(worker.pid) - before) / idle_seconds)
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
    return [result, idle_cpu]
