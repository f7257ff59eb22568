"""Throughput of real worker processes draining a queue: ``python tests/bench/worker_burst.py``.

Enqueues N no-op jobs (the built-in ``sleep`` with 0 seconds), starts W ``--burst`` worker processes and
prints jobs per second from the first start to the last exit (process start-up included).
Options: --jobs N (2000), --workers W (4), --concurrency C (1), --db URL (a fresh SQLite file in a temp dir).
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

from queue_core.store.database import open_database  # noqa: E402
from queue_core.store.repository import JobRepository  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--db", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.db or f"sqlite:///{tmp}/bench.db"
        db = open_database(url)
        repo = JobRepository(db)
        with db.atomic():
            for _ in range(args.jobs):
                repo.create("sleep", {"seconds": 0})
        env = {**os.environ, "QUEUE_DB_URL": url, "PYTHONPATH": str(ROOT)}
        command = [sys.executable, "-m", "queue_core.worker", "--burst", "--log-level", "warning"]
        command += ["--concurrency", str(args.concurrency), "--poll-interval", "0.05"]
        started = time.perf_counter()
        workers = [subprocess.Popen([*command, "--worker-id", f"bench{i}"], env=env) for i in range(args.workers)]
        codes = [worker.wait() for worker in workers]
        elapsed = time.perf_counter() - started
        counts = repo.counts()
        db.close()
    print(
        f"{args.jobs} jobs, {args.workers} workers x {args.concurrency} threads: {elapsed:.2f} s, "
        f"{args.jobs / elapsed:.0f} jobs/s; exit codes {codes}; {counts}"
    )


if __name__ == "__main__":
    main()
