"""Our queue and the raw-SQL reference, on whichever backend the run uses: enqueue and in-process drains."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository

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


def rate_scenario(ctx: Context, key: str, label: str, prepare: Callable[[], tuple[Callable, Callable]]) -> Result:
    """Jobs/s over ``ctx.rounds`` rounds; ``prepare()`` sets a round up, untimed, and returns (work, close)."""
    result = ctx.result(key, label)

    def one_round() -> float:
        work, close = prepare()
        with Stopwatch() as watch:
            work()
        close()
        return rate(ctx.n, watch.seconds)

    result.values = repeat(ctx.rounds, one_round)
    return result


def raw_insert(ctx: Context) -> Result:
    def prepare():
        raw = ctx.backend.raw(ctx.backend.fresh())
        return lambda: [raw.insert_one() for _ in range(ctx.n)], raw.connection.close

    return rate_scenario(ctx, "raw.insert", "raw driver: one-row INSERT per transaction", prepare)


def raw_drain(ctx: Context) -> Result:
    def prepare():
        url = ctx.backend.fresh()
        ctx.backend.fill(url, ctx.n)
        raw = ctx.backend.raw(url)

        def work():
            while raw.claim_and_complete_one("raw"):
                pass

        return work, raw.connection.close

    return rate_scenario(ctx, "raw.drain", "raw driver: claim (UPDATE ... RETURNING) + complete per job", prepare)


def ours_create(ctx: Context) -> Result:
    def prepare():
        db = open_database(ctx.backend.fresh())
        repo = JobRepository(db)
        return lambda: [repo.create(NOOP) for _ in range(ctx.n)], db.close

    return rate_scenario(ctx, "ours.create", "ours: JobRepository.create, one by one", prepare)


def ours_create_many(ctx: Context) -> Result:
    def prepare():
        db = open_database(ctx.backend.fresh())
        repo = JobRepository(db)
        specs = [{"type": NOOP}] * ctx.n

        def work():
            assert len(repo.create_many(specs)) == ctx.n

        return work, db.close

    return rate_scenario(ctx, "ours.create_many", "ours: JobRepository.create_many, one batch", prepare)


def ours_drain_in_process(ctx: Context) -> Result:
    def prepare():
        url = ctx.backend.fresh()
        ctx.backend.fill(url, ctx.n)
        db = open_database(url)
        repo = JobRepository(db)

        def work():
            done = 0
            while (job := repo.claim("loop")) is not None:
                repo.complete(job.id, worker_id="loop", attempt=job.attempt)
                done += 1
            assert done == ctx.n, done

        return work, db.close

    return rate_scenario(ctx, "ours.drain_loop", "ours: claim + complete per job in one process, no worker", prepare)


def ours_bulk_retry(ctx: Context) -> Result:
    """Issue 16's bulk retry: plan (the dry run) + apply in transactions of BULK_BATCH jobs, no workers."""

    def prepare():
        url = ctx.backend.fresh()
        ctx.backend.fill(url, ctx.n)
        db = open_database(url)
        repo = JobRepository(db)
        # Setup, untimed: the jobs as a failed first attempt leaves them (one statement, not n fails).
        repo.Job.update(status="failed", attempt=1, error="card 42 declined").execute()

        def work():
            assert repo.bulk("retry", "status:failed").changed == ctx.n

        return work, db.close

    return rate_scenario(ctx, "ours.bulk_retry", "ours: bulk retry (plan + apply, 2,000 per transaction)", prepare)
