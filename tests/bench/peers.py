"""The peers, measured like ours: Huey (SqliteHuey) on SQLite; procrastinate and pgqueuer on PostgreSQL.

Enqueue runs in this process, one job per call. A drain starts the peer's own worker(s) in child
processes on N waiting no-op jobs and times from the start of the first child until the queue is empty
(Huey, which has no "exit when empty" mode) or until every child has exited (the others' drain modes).
"""

from __future__ import annotations

import itertools
import os
import signal
import time

from .backends import create_database, drop_database
from .measure import Result, Stopwatch, note_peak_rss, rate, reap, repeat, spawn
from .scenarios import Context, rate_scenario

POLL = 0.002  # seconds between "is the queue empty yet" checks while a Huey consumer drains
# Huey's database files, numbered across calls: a run calls each scenario once per round.
_HUEY_FILES = itertools.count()


def _noted(result: Result, exc: Exception) -> Result:
    result.error = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
    return result


# --- Huey -------------------------------------------------------------------------------------------


def huey_enqueue(ctx: Context) -> Result:
    from .huey_app import make_huey

    def prepare():
        huey, noop = make_huey(str(ctx.workdir / f"huey-enqueue-{next(_HUEY_FILES)}.db"))

        def close():
            assert huey.pending_count() == ctx.n
            huey.storage.close()

        return lambda: [noop() for _ in range(ctx.n)], close

    return rate_scenario(ctx, "huey.enqueue", "Huey (SqliteHuey): enqueue, one by one", prepare)


def huey_drain(ctx: Context) -> list[Result]:
    from .huey_app import make_huey

    result = ctx.result("huey.drain", "Huey: drain with its consumer (1 process, 1 worker thread)")
    # Start-up left out, as ours are from their rows: from the first poll that finds a task taken to the one
    # that finds none left (Huey records no times; each end is off by at most one poll, 2 ms).
    steady = ctx.result("huey.steady", "Huey: drain with its consumer, first dequeue to queue empty")

    def one_round() -> float:
        path = str(ctx.workdir / f"huey-drain-{next(_HUEY_FILES)}.db")
        huey, noop = make_huey(path)
        for _ in range(ctx.n):
            noop()
        args = ["-m", "huey.bin.huey_consumer", "tests.bench.huey_app.huey", "-w", "1", "-k", "thread", "-n", "-q"]
        first_taken = None
        with Stopwatch() as watch:
            consumer = spawn(args, BENCH_HUEY_DB=path)
            while pending := huey.pending_count():
                if first_taken is None and pending < ctx.n:
                    first_taken = time.perf_counter()
                if consumer.poll() is not None:
                    raise RuntimeError(f"huey consumer exited early: {consumer.stderr.read()[-500:]}")
                time.sleep(POLL)
        if first_taken is not None:  # None: the whole drain fell between two polls
            steady.values.append(rate(ctx.n, watch.start + watch.seconds - first_taken))
        consumer.send_signal(signal.SIGINT)  # graceful stop; the queue is already empty
        _code, rss, _err = reap(consumer)
        note_peak_rss(result, rss, "consumer peak RSS")
        huey.storage.close()
        return rate(ctx.n, watch.seconds)

    result.values = repeat(ctx.rounds, one_round)
    return [result, steady]


# --- PostgreSQL peers: one throwaway database each ----------------------------------------------------


class PeerDatabase:
    """A database for one peer for the whole run, emptied before each round."""

    def __init__(self, peer: str, tables: str):
        self.name = f"queue_core_bench_{peer}_{os.getpid()}"
        self.url = create_database(self.name)
        self.tables = tables

    def empty(self) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as connection:
            connection.execute(f"TRUNCATE {self.tables} RESTART IDENTITY CASCADE")

    def scalar(self, sql: str):
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as connection:
            return connection.execute(sql).fetchone()[0]

    def drop(self) -> None:
        drop_database(self.name)


def drain_with_children(processes: int, args: list[str]) -> tuple[float, float]:
    """Start ``processes`` children that each exit once the queue is empty: (seconds, peak RSS MB)."""
    with Stopwatch() as watch:
        children = [spawn(args) for _ in range(processes)]
        outcomes = [reap(child, timeout=600) for child in children]
    for code, _rss, stderr in outcomes:
        if code != 0:
            raise RuntimeError(f"worker exited with {code}: {stderr.strip()[-500:]}")
    return watch.seconds, max(rss for _code, rss, _err in outcomes)


def procrastinate_scenarios(ctx: Context, drain_processes: list[int]) -> list[Result]:
    enqueue = ctx.result("procrastinate.enqueue", "procrastinate: defer, one by one")
    drains = {
        p: ctx.result(f"procrastinate.drain_{p}p", f"procrastinate: drain, {p} worker process(es)")
        for p in drain_processes
    }
    try:
        from .peer_workers import procrastinate_app

        database = PeerDatabase("procrastinate", "procrastinate_jobs")
        app, noop = procrastinate_app(database.url)
        with app.open():
            app.schema_manager.apply_schema()
    except Exception as exc:
        return [_noted(r, exc) for r in (enqueue, *drains.values())]
    try:

        def enqueue_round() -> float:
            database.empty()
            with app.open(), Stopwatch() as watch:
                for _ in range(ctx.n):
                    noop.defer()
            return rate(ctx.n, watch.seconds)

        def drain_round(processes: int) -> float:
            database.empty()
            with app.open():
                noop.batch_defer(*[{}] * ctx.n)
            seconds, rss = drain_with_children(
                processes, ["-m", "tests.bench.peer_workers", "procrastinate", database.url]
            )
            done = database.scalar("SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'")
            assert done == ctx.n, f"procrastinate finished {done} of {ctx.n}"
            note_peak_rss(drains[processes], rss)
            return rate(ctx.n, seconds)

        enqueue.values = repeat(ctx.rounds, enqueue_round)
        for processes, result in drains.items():
            result.values = repeat(ctx.rounds, lambda p=processes: drain_round(p))
    finally:
        database.drop()
    return [enqueue, *drains.values()]


# pgqueuer logs each job's pick and its completion, stamped with the time its transaction began (``now()``),
# and writes completions in batches (up to 10, or after ~0.1 s): the last of them is stamped up to ~0.1 s
# after the job ended, which counts against pgqueuer, never for it. Its drain mode takes ~4 s to exit once
# the queue is empty (measured on an empty queue: four checks of the queue a second apart), so its drains
# with start-up and exit are mostly that wait.
PGQUEUER_WINDOW = """
SELECT EXTRACT(EPOCH FROM (SELECT max(created) FROM pgqueuer_log WHERE status = 'successful')
                        - (SELECT min(created) FROM pgqueuer_log WHERE status = 'picked'))
"""


def logged_window(database: PeerDatabase) -> float | None:
    """Seconds from pgqueuer's first pick to its last completion, from its log; None if it logs otherwise."""
    import psycopg

    try:
        window = database.scalar(PGQUEUER_WINDOW)
    except psycopg.Error:  # another pgqueuer release, whose log table or statuses differ
        return None
    return float(window) if window is not None and window > 0 else None


def pgqueuer_scenarios(ctx: Context, drain_processes: list[int]) -> list[Result]:
    enqueue = ctx.result("pgqueuer.enqueue", "pgqueuer: enqueue, one by one")
    batch = ctx.result("pgqueuer.enqueue_batch", "pgqueuer: enqueue, one batch")
    drains = {
        p: ctx.result(f"pgqueuer.drain_{p}p", f"pgqueuer: drain mode, {p} worker process(es)") for p in drain_processes
    }
    # The same drains from pgqueuer's own log, as ours are from their rows: start-up and exit left out.
    steady = {
        p: ctx.result(
            f"pgqueuer.steady_{p}p", f"pgqueuer: drain mode, {p} worker process(es), first pick to last completion"
        )
        for p in drain_processes
    }
    try:
        from .peer_workers import pgqueuer_enqueue, pgqueuer_install

        database = PeerDatabase("pgqueuer", "pgqueuer, pgqueuer_log, pgqueuer_statistics")
        pgqueuer_install(database.url)
    except Exception as exc:
        return [_noted(r, exc) for r in (enqueue, batch, *drains.values(), *steady.values())]
    try:

        def enqueue_round(batched: bool) -> float:
            database.empty()
            return rate(ctx.n, pgqueuer_enqueue(database.url, ctx.n, batched=batched))

        def drain_round(processes: int) -> float:
            database.empty()
            pgqueuer_enqueue(database.url, ctx.n, batched=True)
            seconds, rss = drain_with_children(processes, ["-m", "tests.bench.peer_workers", "pgqueuer", database.url])
            left = database.scalar("SELECT count(*) FROM pgqueuer")
            assert left == 0, f"pgqueuer left {left} of {ctx.n} jobs"
            note_peak_rss(drains[processes], rss)
            window = logged_window(database)
            if window is None:  # a pgqueuer whose log reads otherwise: its drain with start-up still counts
                steady[processes].error = steady[processes].error or "pgqueuer_log has no picks and completions"
            else:
                steady[processes].values.append(rate(ctx.n, window))
            return rate(ctx.n, seconds)

        enqueue.values = repeat(ctx.rounds, lambda: enqueue_round(False))
        batch.values = repeat(ctx.rounds, lambda: enqueue_round(True))
        for processes, result in drains.items():
            result.values = repeat(ctx.rounds, lambda p=processes: drain_round(p))
    finally:
        database.drop()
    return [enqueue, batch, *drains.values(), *steady.values()]
