"""Whether a one-slot SQLite worker would gain by holding its acknowledgements back:
``python -m tests.bench.deferred_acks``.

A one-slot worker completes the job it ran and claims the next in one statement a job (``complete_and_claim``).
The alternative measured here keeps the slot's completions in a batch and claims alone, writing the batch with
the claim once it holds ``k`` jobs: one transaction a job still, but each claims one row instead of completing
one and claiming one, and the completions share a transaction ``k`` at a time. The loops call the repository
(the claim alone through ``Statements.claim`` without the look-ahead that an idle worker's claim makes first,
as a busy slot's claim would run), on a fresh queue of no-op jobs per round; rounds interleave the variants.
Figures: µs of CPU a job (the process's CPU time) and of wall time. Options: ``-n`` jobs per round (5000),
``--rounds`` (3), ``--batches`` (16,64,256).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository

TYPES = ["bench-noop", "a", "b", "c", "d"]  # a worker of five handler types, as the bench's
WORKER = "bench-deferred"


def fresh(folder: Path, index: int, n: int) -> JobRepository:
    repo = JobRepository(open_database(f"sqlite:///{folder}/deferred-{index}.db"))
    for start in range(0, n + 1, 5000):
        repo.create_many([{"type": TYPES[0]}] * min(5000, n + 1 - start))
    return repo


def one_statement(repo: JobRepository, n: int) -> None:
    """The worker's way: each job's completion rides on the next claim."""
    job = repo.claim(WORKER, types=TYPES)
    for _ in range(n):
        _done, jobs = repo.complete_and_claim_many([(job.id, job.attempt, None)], 1, TYPES, worker_id=WORKER)
        job = jobs[0] if jobs else job


def deferred(k: int) -> Callable[[JobRepository, int], None]:
    def loop(repo: JobRepository, n: int) -> None:
        job = repo.claim(WORKER, types=TYPES)
        acks = []
        for _ in range(n):
            acks.append((job.id, job.attempt, None))
            if len(acks) >= k:
                _done, jobs = repo.complete_and_claim_many(acks, 1, TYPES, worker_id=WORKER)
                acks = []
            else:
                jobs = repo.statements.claim(WORKER, 1, TYPES, None, gated=False)
            job = jobs[0] if jobs else job
        repo.complete_many(acks, worker_id=WORKER)

    return loop


def one_round(repo: JobRepository, loop: Callable[[JobRepository, int], None], n: int) -> tuple[float, float]:
    """(µs of CPU, µs of wall time) a job for ``n`` jobs of ``loop``; every job checked completed."""
    wall, cpu = time.perf_counter(), time.process_time()
    loop(repo, n)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    completed = repo.db.execute_sql("SELECT count(*) FROM jobs WHERE status = 'completed'").fetchone()[0]
    if completed != n:
        raise SystemExit(f"a variant completed {completed} of {n} jobs")
    return cpu / n * 1e6, wall / n * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=5000, help="jobs per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batches", default="16,64,256", help="batch sizes k, comma-separated")
    args = parser.parse_args(argv)
    variants = {"one statement a job (the worker's)": one_statement}
    for k in (int(part) for part in args.batches.split(",")):
        variants[f"claim alone, completions {k} a transaction"] = deferred(k)
    results: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="deferred-") as folder:
        index = 0
        for _ in range(args.rounds):
            for name, loop in variants.items():
                index += 1
                repo = fresh(Path(folder), index, args.n)
                results.setdefault(name, []).append(one_round(repo, loop, args.n))
                repo.db.close()
    base = statistics.median(cpu for cpu, _wall in next(iter(results.values())))
    print(f"n = {args.n}, median of {args.rounds} rounds, µs a job (CPU × the worker's way)")
    for name, values in results.items():
        cpu = statistics.median(value[0] for value in values)
        wall = statistics.median(value[1] for value in values)
        rounds = [round(value[0]) for value in values]
        print(f"{name:<44} CPU {cpu:>6.1f} µs {cpu / base:>5.2f}  wall {wall:>6.1f} µs  CPU rounds {rounds}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
