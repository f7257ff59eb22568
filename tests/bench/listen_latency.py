"""How soon an idle worker on PostgreSQL hears of a new job (the target: well under 50 ms).

    python tests/bench/listen_latency.py [--db URL] [--jobs 200] [--worker]

For each job, the time from just before ``create`` is called (insert, NOTIFY, commit) to the listener's
callback; with ``--worker``, to an idle ``Worker`` (polling only every 5 s, woken by the listener through
``Worker.wakeup``) having claimed the job. Runs in a scratch schema it drops afterwards. A benchmark,
not a test: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import psycopg

from queue_core.store.database import open_database
from queue_core.store.notify import listen_for_jobs
from queue_core.store.repository import JobRepository

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"


def scratch_schema(url: str):
    """A throw-away schema on ``url``: returns (the URL confined to it, a function that drops it)."""
    schema = f"queue_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    separator = "&" if "?" in url else "?"

    def drop():
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")

    return f"{url}{separator}options=-csearch_path%3D{schema}", drop


class IdleWorker:
    """A Worker that polls every 5 s, woken by the listener; ``wait_for_claim`` returns the claim's time."""

    def __init__(self, repo: JobRepository):
        from queue_core.handlers import HandlerRegistry
        from queue_core.worker import Worker

        handlers = HandlerRegistry(with_builtins=False)
        handlers.register("bench", lambda payload: None)
        self.claimed = threading.Event()
        self.claimed_at = 0.0
        # listen=False: this bench starts the listener itself, to time it alone or up to the claim.
        self.worker = Worker(
            repo, registry=handlers, poll_interval=5, max_poll_interval=5, on_event=self.on_event, listen=False
        )

    def on_event(self, event) -> None:
        if event.kind == "claimed":
            self.claimed_at = time.perf_counter()
            self.claimed.set()


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=DEFAULT_URL, help=f"a PostgreSQL URL (default {DEFAULT_URL})")
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--worker", action="store_true", help="measure up to an idle Worker's claim")
    args = parser.parse_args()

    url, drop = scratch_schema(args.db)
    try:
        db = open_database(url)
        repo = JobRepository(db)
        heard = threading.Event()
        heard_at = [0.0]

        def on_job():
            heard_at[0] = time.perf_counter()
            heard.set()

        idle = IdleWorker(repo) if args.worker else None
        listener = listen_for_jobs(db, idle.worker.wakeup if idle else on_job)
        assert listener.wait_listening(10), "the listener never started listening"
        if idle:
            idle.worker.start()
        done, done_at = (idle.claimed, lambda: idle.claimed_at) if idle else (heard, lambda: heard_at[0])
        latencies = []
        for i in range(args.jobs):
            time.sleep(0.02)  # let the worker finish and go back to sleep (its claim finds nothing)
            done.clear()
            sent = time.perf_counter()
            repo.create("bench", {"i": i})
            if not done.wait(10):
                print(f"job {i}: not picked up within 10 s", file=sys.stderr)
                return 1
            latencies.append((done_at() - sent) * 1000)
        if idle:
            idle.worker.stop(5)
        listener.stop(5)
        db.close()
    finally:
        drop()
    what = "create -> idle Worker claimed" if args.worker else "create -> listener called"
    print(
        f"{what} over {len(latencies)} jobs: median {statistics.median(latencies):.2f} ms, "
        f"p95 {percentile(latencies, 0.95):.2f} ms, p99 {percentile(latencies, 0.99):.2f} ms, "
        f"max {max(latencies):.2f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
