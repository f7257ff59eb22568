"""One SQLite worker process with more slots against Huey's consumer: ``python -m tests.bench.slot_counts``.

Idle slots claim together, one statement a round, so a worker with k slots writes up to k jobs and k acks a
transaction; with no-op jobs the slot that claims runs the round (README, "Many short jobs, several
slots"). This drains N no-op jobs with ``--burst --concurrency k`` for each k, beside Huey's consumer as
the main bench runs it, rounds interleaved (Huey, then each k, per round), and prints each median and its
ratio to Huey's: start-up in both (first start to last exit) and in neither (first claim to last
completion, against Huey's first dequeue to queue empty). Options: ``-n`` jobs (10,000), ``--rounds``
(3), ``--slots`` (1,4,8,16).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository

from . import peers
from .backends import SqliteBackend
from .measure import ROOT, Stopwatch, compile_bytecode, rate, reap, spawn
from .scenarios import Context
from .workers import drain_window, worker_args


def drain(backend: SqliteBackend, n: int, slots: int) -> tuple[float, float]:
    """(jobs a second from start to exit, from first claim to last completion) of one ``--burst`` worker."""
    url = backend.fresh()
    backend.fill(url, n)
    with Stopwatch() as watch:
        code, _rss, stderr = reap(spawn(worker_args(url, "slots", "--burst", "--concurrency", str(slots))), 600)
    if code != 0:
        raise RuntimeError(f"worker exited with {code}: {stderr.strip()[-500:]}")
    db = open_database(url)
    try:
        return rate(n, watch.seconds), rate(n, drain_window(JobRepository(db)))
    finally:
        db.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=10_000, help="jobs per drain")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--slots", default="1,4,8,16", help="slot counts, comma-separated")
    args = parser.parse_args(argv)
    counts = [int(part) for part in args.slots.split(",")]
    compile_bytecode(ROOT)
    with tempfile.TemporaryDirectory(prefix="slots-") as folder:
        backend = SqliteBackend(Path(folder))
        ctx = Context(backend, args.n, 1, Path(folder), False)
        huey: list[float] = []
        huey_steady: list[float] = []
        ours: dict[int, list[tuple[float, float]]] = {k: [] for k in counts}
        for _ in range(args.rounds):
            whole, steady = peers.huey_drain(ctx)
            huey += whole.values
            huey_steady += steady.values
            for k in counts:
                ours[k].append(drain(backend, args.n, k))
    base, base_steady = statistics.median(huey), statistics.median(huey_steady)
    print(f"n = {args.n:,}, median of {args.rounds} interleaved rounds")
    print(f"Huey's consumer: {base:,.0f} jobs/s; first dequeue to queue empty {base_steady:,.0f}")
    for k, values in ours.items():
        whole, steady = (statistics.median(v[i] for v in values) for i in (0, 1))
        print(
            f"ours, --concurrency {k:>2}: {whole:,.0f} jobs/s ({whole / base:.2f}x Huey's); "
            f"first claim to last completion {steady:,.0f} ({steady / base_steady:.2f}x)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
