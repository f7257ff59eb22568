"""Our queue and the raw-SQL reference, on whichever backend the run uses: enqueue and in-process drains."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from queue_core.db import open_database
from queue_core.repository import JobRepository

from .measure import Result, Stopwatch, rate, repeat

NOOP = "bench-noop"


@dataclass
class Context:
    backend: object  # backends.SqliteBackend | backends.PostgresBackend
    n: int
    rounds: int
    workdir: Path
    quick: bool

    def result(self, key: str, label: str, *, n: int | None = None, unit: str = "jobs/s") -> Result:
        return Result(f"{self.backend.name}.{key}", label, self.n if n is None else n, unit)


def raw_insert(ctx: Context) -> Result:
    result = ctx.result("raw.insert", "raw driver: one-row INSERT per transaction")

    def one_round() -> float:
        raw = ctx.backend.raw(ctx.backend.fresh())
        with Stopwatch() as watch:
            for _ in range(ctx.n):
                raw.insert_one()
        raw.connection.close()
        return rate(ctx.n, watch.seconds)

    result.values = repeat(ctx.rounds, one_round)
    return result


def raw_drain(ctx: Context) -> Result:
    result = ctx.result("raw.drain", "raw driver: claim (UPDATE ... RETURNING) + complete per job")

    def one_round() -> float:
        url = ctx.backend.fresh()
        ctx.backend.fill(url, ctx.n)
        raw = ctx.backend.raw(url)
        with Stopwatch() as watch:
            while raw.claim_and_complete_one("raw"):
                pass
        raw.connection.close()
        return rate(ctx.n, watch.seconds)

    result.values = repeat(ctx.rounds, one_round)
    return result


def ours_create(ctx: Context) -> Result:
    result = ctx.result("ours.create", "ours: JobRepository.create, one by one")

    def one_round() -> float:
        db = open_database(ctx.backend.fresh())
        repo = JobRepository(db)
        with Stopwatch() as watch:
            for _ in range(ctx.n):
                repo.create(NOOP)
        db.close()
        return rate(ctx.n, watch.seconds)

    result.values = repeat(ctx.rounds, one_round)
    return result


def ours_create_many(ctx: Context) -> Result:
    result = ctx.result("ours.create_many", "ours: JobRepository.create_many, one batch")

    def one_round() -> float:
        db = open_database(ctx.backend.fresh())
        repo = JobRepository(db)
        specs = [{"type": NOOP}] * ctx.n
        with Stopwatch() as watch:
            jobs = repo.create_many(specs)
        assert len(jobs) == ctx.n
        db.close()
        return rate(ctx.n, watch.seconds)

    result.values = repeat(ctx.rounds, one_round)
    return result


def ours_drain_in_process(ctx: Context) -> Result:
    result = ctx.result("ours.drain_loop", "ours: claim + complete per job in one process, no worker")

    def one_round() -> float:
        url = ctx.backend.fresh()
        ctx.backend.fill(url, ctx.n)
        db = open_database(url)
        repo = JobRepository(db)
        done = 0
        with Stopwatch() as watch:
            while (job := repo.claim("loop")) is not None:
                repo.complete(job.id, worker_id="loop", attempt=job.attempt)
                done += 1
        db.close()
        assert done == ctx.n, done
        return rate(ctx.n, watch.seconds)

    result.values = repeat(ctx.rounds, one_round)
    return result
