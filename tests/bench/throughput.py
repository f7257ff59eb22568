"""Jobs per second with 1, 2, 4 and 8 worker processes, on SQLite and on PostgreSQL.

    python tests/bench/throughput.py [--jobs 4000] [--processes 1 2 4 8] [--backends sqlite postgresql]
                                     [--postgres-url URL] [--concurrency 1]

Each run: a fresh database (a temporary SQLite file, or a scratch PostgreSQL schema dropped afterwards),
``--jobs`` no-op ``echo`` jobs, then N ``python -m queue_core.worker --burst`` processes. Throughput is
jobs / (last completion - first claim), from the jobs' own timestamps, so process start-up is not counted.
A benchmark, not a test: figures depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import peewee as pw  # noqa: E402
from listen_latency import DEFAULT_URL, scratch_schema  # noqa: E402

from queue_core.store.database import open_database  # noqa: E402
from queue_core.store.repository import JobRepository  # noqa: E402


def run_once(url: str, jobs: int, processes: int, concurrency: int) -> tuple[float, float]:
    """(jobs/s between the first claim and the last completion, wall seconds including start-up)."""
    db = open_database(url)
    repo = JobRepository(db)
    with db.atomic():
        for i in range(jobs):
            repo.create("echo", {"i": i})
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QUEUE_DB_URL": url}
    command = [sys.executable, "-m", "queue_core.worker", "--burst", "--log-level", "warning"]
    command += ["--concurrency", str(concurrency), "--poll-interval", "0.05", "--max-poll-interval", "0.2"]
    started = time.perf_counter()
    workers = [subprocess.Popen([*command, "--worker-id", f"bench-{i}"], env=env) for i in range(processes)]
    for worker in workers:
        if worker.wait() != 0:
            raise SystemExit(f"a worker exited with {worker.returncode}")
    wall = time.perf_counter() - started
    counts = repo.counts()
    if counts["completed"] != jobs:
        raise SystemExit(f"expected {jobs} completed jobs, got {counts}")
    Job = repo.Job
    first, last = Job.select(pw.fn.MIN(Job.claimed_at), pw.fn.MAX(Job.updated_at)).tuples().get()
    db.close()
    return jobs / (last - first).total_seconds(), wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=4000)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--backends", nargs="+", choices=["sqlite", "postgresql"], default=["sqlite", "postgresql"])
    parser.add_argument("--postgres-url", default=os.environ.get("QUEUE_TEST_POSTGRES_URL") or DEFAULT_URL)
    parser.add_argument("--concurrency", type=int, default=1, help="threads per worker process")
    args = parser.parse_args()

    print(f"{args.jobs} echo jobs, --concurrency {args.concurrency}, {os.cpu_count()} CPUs")
    print(f"{'backend':<12}{'processes':>10}{'jobs/s':>10}{'wall s':>9}")
    for backend in args.backends:
        for n in args.processes:
            if backend == "sqlite":
                with tempfile.TemporaryDirectory() as folder:
                    rate, wall = run_once(f"sqlite:///{folder}/bench.db", args.jobs, n, args.concurrency)
            else:
                url, drop = scratch_schema(args.postgres_url)
                try:
                    rate, wall = run_once(url, args.jobs, n, args.concurrency)
                finally:
                    drop()
            print(f"{backend:<12}{n:>10}{rate:>10.0f}{wall:>9.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
