"""What a claim costs while a paused queue holds a backlog: ``python -m tests.bench.paused_backlog``.

A fresh SQLite file (``--backend postgresql``: a throwaway database ``queue_core_paused`` on ``$BENCH_PG``)
gets ``-n`` (200,000) pending jobs of type ``t`` in the queue ``reports``, which is then paused; each case is
a claim through the repository's own statements, timed and rolled back, so that every round sees the same
jobs: the median of ``--rounds`` (30) in milliseconds (on PostgreSQL, from the sixth claim of a case on, the
prepared statement's plan, as a worker's connection runs it). Run two checkouts in turns to compare them
(``PYTHONPATH=../before python -m tests.bench.paused_backlog``).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository

from .backends import create_database, drop_database

BATCH = 20_000
PG_DATABASE = "queue_core_paused"


def timed(repo: JobRepository, claim, rounds: int) -> tuple[float, list]:
    """The median milliseconds of ``claim()``, each run rolled back, and what the last one claimed."""
    times, jobs = [], []
    for _ in range(rounds):
        with repo.db.atomic() as transaction:
            start = time.perf_counter()
            jobs = claim()
            times.append((time.perf_counter() - start) * 1000)
            transaction.rollback()
    return statistics.median(times), jobs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=200_000, help="jobs in the paused queue (200,000)")
    parser.add_argument("--rounds", type=int, default=30, help="claims timed per case (30)")
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as directory:
        if args.backend == "postgresql":
            url = create_database(PG_DATABASE)
        else:
            url = f"sqlite:///{Path(directory) / 'paused.db'}"
        try:
            run_cases(JobRepository(open_database(url)), args)
        finally:
            if args.backend == "postgresql":
                drop_database(PG_DATABASE)


def run_cases(repo: JobRepository, args) -> None:
    """Fill, pause ``reports``, and time each case."""
    for start in range(0, args.n, BATCH):
        repo.create_many([{"type": "t", "queue": "reports"}] * min(BATCH, args.n - start))
    repo.pause_queue("reports")
    statements = repo.statements
    statements.refresh_statistics()  # as a worker does after a big insert (PostgreSQL; nothing on SQLite)
    print(f"{args.backend}: {args.n:,} pending jobs of type t in the paused queue 'reports'; median of {args.rounds}")

    def case(name: str, n: int, types, queues, setup=None) -> None:
        if setup:
            setup()
        ms, jobs = timed(repo, lambda: statements.claim("w", n, types, queues), args.rounds)
        took = ", ".join(sorted({job.queue for job in jobs})) or "nothing"
        print(f"  {name:<62} {ms:9.3f} ms  (took {len(jobs)}: {took})")

    case("idle claim of types t, u; no other queue holds jobs", 1, ["t", "u"], None)
    case(
        "the same, 2,000 jobs of type x in 'default'",
        1,
        ["t", "u"],
        None,
        setup=lambda: repo.create_many([{"type": "x", "queue": "default"}] * 2000),
    )
    case("idle claim of t, u from reports and default", 1, ["t", "u"], ["reports", "default"])
    case(
        "idle claim of t, u; 40 jobs of type t in 'mail'",
        1,
        ["t", "u"],
        None,
        setup=lambda: repo.create_many([{"type": "t", "queue": "mail"}] * 40),
    )
    case("the same, four slots", 4, ["t", "u"], None)
    case("a claim of any type", 1, None, None)
    repo.db.close()


if __name__ == "__main__":
    main()
