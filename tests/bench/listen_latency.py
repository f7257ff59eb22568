"""How soon an idle listener hears of a new job on PostgreSQL (the target: well under 50 ms).

    python tests/bench/listen_latency.py [--db URL] [--jobs 200]

Measures, for each job, the time from just before ``create`` is called (insert, NOTIFY, commit) to the
listener's callback: the delay a LISTENing worker adds on top of the insert, instead of a poll interval.
Runs in a scratch schema it drops afterwards; a benchmark, not a test (timings depend on the machine).
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

from queue_core.db import open_database
from queue_core.notify import listen_for_jobs
from queue_core.repository import JobRepository

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


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=DEFAULT_URL, help=f"a PostgreSQL URL (default {DEFAULT_URL})")
    parser.add_argument("--jobs", type=int, default=200)
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

        listener = listen_for_jobs(db, on_job)
        assert listener.wait_listening(10), "the listener never started listening"
        latencies = []
        for i in range(args.jobs):
            heard.clear()
            sent = time.perf_counter()
            repo.create("bench", {"i": i})
            if not heard.wait(5):
                print(f"job {i}: no notification within 5 s", file=sys.stderr)
                return 1
            latencies.append((heard_at[0] - sent) * 1000)
            time.sleep(0.005)  # the listener goes back to waiting, as an idle worker would
        listener.stop(5)
        db.close()
    finally:
        drop()
    print(
        f"LISTEN wake-up over {len(latencies)} jobs: median {statistics.median(latencies):.2f} ms, "
        f"p95 {percentile(latencies, 0.95):.2f} ms, p99 {percentile(latencies, 0.99):.2f} ms, "
        f"max {max(latencies):.2f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
