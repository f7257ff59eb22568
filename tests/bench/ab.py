"""Two checkouts of this project, A and B, measured in turns: ``python -m tests.bench.ab A B``.

A change worth a few per cent is below what one run on a shared machine can show (one scenario's rounds
differ by up to 25 % here). This runs each round of A and B in fresh processes, in ABBA order (A B, then
B A, ...), each side's database synced to disk before the other side starts, and prints each side's
median and B's ratio to A, for the rate and for the CPU a job (what the machine's other load moves less).

    git worktree add ../before HEAD~1
    python -m tests.bench.ab ../before . --scenario create --rounds 10
    python -m tests.bench.ab ../before . --scenario drain --processes 2 --concurrency 1
    python -m tests.bench.ab ../before . --scenario create_many --backend postgresql -n 5000

Scenarios: ``create`` (``JobRepository.create`` one by one, in one process), ``create_many`` (one batch),
``drain`` (``python -m queue_core.worker --burst`` processes on a backlog of no-op jobs, timed from the
first claim to the last completion as the rows record them, CPU of the workers from ``getrusage``).
PostgreSQL rounds use a throwaway database ``queue_core_ab`` on ``$BENCH_PG`` (default
``postgresql://postgres@127.0.0.1:5432``), dropped and made again before each round, and dropped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from .measure import compile_bytecode

PG_SERVER = os.environ.get("BENCH_PG", "postgresql://postgres@127.0.0.1:5432")
PG_DATABASE = "queue_core_ab"
DROP_PG_DATABASE = f"DROP DATABASE IF EXISTS {PG_DATABASE} WITH (FORCE)"

# Run inside a checkout (its own queue_core first on the path): fill or time, print one JSON line.
CHILD = r"""
import json, sys, time
from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository

scenario, url, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
db = open_database(url)
repo = JobRepository(db)
if scenario == "fill":
    repo.create_many([{"type": "bench-noop"}] * n)
elif scenario == "window":
    import peewee as pw
    Job = repo.Job
    first = Job.claimed_at.python_value(Job.select(pw.fn.MIN(Job.claimed_at)).scalar())
    last = Job.updated_at.python_value(Job.select(pw.fn.MAX(Job.updated_at)).scalar())
    print(json.dumps({"seconds": (last - first).total_seconds(), "completed": repo.counts()["completed"]}))
else:
    repo.create("warm-up")
    start, cpu = time.perf_counter(), time.process_time()
    if scenario == "create":
        for _ in range(n):
            repo.create("bench-noop")
    else:
        repo.create_many([{"type": "bench-noop"}] * n)
    print(json.dumps({"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu}))
db.close()
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path, help="checkout A (the reference)")
    parser.add_argument("b", type=Path, help="checkout B (the change)")
    parser.add_argument("--scenario", choices=("create", "create_many", "drain"), default="create")
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--rounds", type=int, default=8, help="rounds per side (default 8)")
    parser.add_argument("-n", type=int, default=10_000, help="jobs per round (default 10,000)")
    parser.add_argument("--processes", type=int, default=1, help="drain: worker processes (default 1)")
    parser.add_argument("--concurrency", type=int, default=1, help="drain: slots per process (default 1)")
    args = parser.parse_args(argv)
    sides = [args.a.resolve(), args.b.resolve()]
    for side in sides:
        if not (side / "queue_core" / "__init__.py").exists():
            parser.error(f"{side} is not a checkout of this project (no queue_core/__init__.py in it)")
        compile_bytecode(side)  # as the bench does for its own checkout: both sides start from bytecode
    rates: dict[Path, list[float]] = {side: [] for side in sides}
    cpus: dict[Path, list[float]] = {side: [] for side in sides}
    try:
        for round_number in range(args.rounds):
            for side in sides if round_number % 2 == 0 else sides[::-1]:
                workdir = tempfile.mkdtemp(prefix="queue_core_ab_")
                try:
                    rate, cpu = one_round(side, args, workdir)
                finally:
                    shutil.rmtree(workdir, ignore_errors=True)
                rates[side].append(rate)
                cpus[side].append(cpu)
    finally:
        if args.backend == "postgresql":
            pg_admin(DROP_PG_DATABASE)  # the last round's
    unit = "jobs/s" if args.scenario != "drain" else "jobs/s (first claim to last completion)"
    for name, side in zip("AB", sides, strict=True):
        print(
            f"{name} {side}: {statistics.median(rates[side]):,.0f} {unit}, "
            f"CPU {statistics.median(cpus[side]):.1f} µs a job; rounds {sorted(round(r) for r in rates[side])}"
        )
    a, b = sides
    print(
        f"B/A: {statistics.median(rates[b]) / statistics.median(rates[a]):.3f}x the rate, "
        f"{statistics.median(cpus[b]) / statistics.median(cpus[a]):.3f}x the CPU a job "
        f"({args.rounds} rounds each, {args.n:,} jobs, {args.scenario} on {args.backend})"
    )
    return 0


def one_round(side: Path, args, workdir: str) -> tuple[float, float]:
    """(jobs a second, µs of CPU a job) of one round on ``side``; a SQLite database goes in ``workdir``."""
    url = fresh_url(args.backend, workdir)
    env = {**os.environ, "PYTHONPATH": str(side), "QUEUE_DB_URL": url}
    if args.scenario != "drain":
        result = child(side, env, args.scenario, url, args.n)
        return args.n / result["seconds"], result["cpu"] / args.n * 1e6
    child(side, env, "fill", url, args.n)
    os.sync()
    command = [sys.executable, "-m", "queue_core.worker", "--burst", "--log-level", "warning"]
    command += ["--handlers", "tests.bench.noop_handlers", "--concurrency", str(args.concurrency)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    workers = [subprocess.Popen([*command, "--worker-id", f"ab{i}"], cwd=side, env=env) for i in range(args.processes)]
    codes = [worker.wait() for worker in workers]
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if any(codes):
        raise SystemExit(f"a worker of {side} exited with {codes}")
    window = child(side, env, "window", url, args.n)
    if window["completed"] != args.n:
        raise SystemExit(f"{side}: {window['completed']} of {args.n} jobs completed")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return args.n / window["seconds"], cpu / args.n * 1e6


def child(side: Path, env: dict, scenario: str, url: str, n: int) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, scenario, url, str(n)], cwd=side, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"{scenario} on {side} failed:\n{done.stderr}")
    lines = done.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else {}


def fresh_url(backend: str, workdir: str) -> str:
    if backend == "sqlite":
        return f"sqlite:///{workdir}/queue.db"
    pg_admin(DROP_PG_DATABASE, f"CREATE DATABASE {PG_DATABASE}")
    return f"{PG_SERVER}/{PG_DATABASE}"


def pg_admin(*statements: str) -> None:
    import psycopg

    with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True) as admin:
        for statement in statements:
            admin.execute(statement)


if __name__ == "__main__":
    sys.exit(main())
