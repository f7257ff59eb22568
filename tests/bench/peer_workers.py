"""The PostgreSQL peers' apps, and their worker processes: ``python -m tests.bench.peer_workers PEER URL``.

Each worker runs the peer's own "drain, then exit" mode with its default settings and a synchronous
no-op task (procrastinate) or an async one (pgqueuer, whose entrypoints are async).
"""

from __future__ import annotations

import asyncio
import sys
import time
from datetime import timedelta


def procrastinate_app(url: str):
    """A procrastinate App on ``url`` and its no-op task."""
    from procrastinate import App, PsycopgConnector

    app = App(connector=PsycopgConnector(conninfo=url))

    @app.task(name="noop")
    def noop():
        """Does nothing: the benchmark measures the queue, not the work."""

    return app, noop


def run_procrastinate_worker(url: str) -> None:
    app, _noop = procrastinate_app(url)
    app.run_worker(wait=False, concurrency=1, install_signal_handlers=False)


async def _pgqueuer_queries(url: str):
    import psycopg
    from pgqueuer.db import PsycopgDriver
    from pgqueuer.queries import Queries

    connection = await psycopg.AsyncConnection.connect(url, autocommit=True)
    return connection, Queries(PsycopgDriver(connection))


def pgqueuer_install(url: str) -> None:
    async def install():
        connection, queries = await _pgqueuer_queries(url)
        await queries.install()
        await connection.close()

    asyncio.run(install())


def pgqueuer_enqueue(url: str, n: int, *, batched: bool) -> float:
    """Enqueue ``n`` no-op jobs, one call each or one batch; the seconds it took (connecting excluded)."""

    async def enqueue() -> float:
        connection, queries = await _pgqueuer_queries(url)
        start = time.perf_counter()
        if batched:
            await queries.enqueue(["noop"] * n, [None] * n, [0] * n)
        else:
            for _ in range(n):
                await queries.enqueue("noop", None)
        seconds = time.perf_counter() - start
        await connection.close()
        return seconds

    return asyncio.run(enqueue())


def run_pgqueuer_worker(url: str) -> None:
    from pgqueuer import QueueManager
    from pgqueuer.types import QueueExecutionMode

    async def drain():
        connection, queries = await _pgqueuer_queries(url)
        manager = QueueManager(queries)

        @manager.entrypoint("noop")
        async def noop(job):
            """Does nothing: the benchmark measures the queue, not the work."""

        await manager.run(mode=QueueExecutionMode.drain, dequeue_timeout=timedelta(seconds=1))
        await connection.close()

    asyncio.run(drain())


if __name__ == "__main__":
    peer, url = sys.argv[1:3]
    {"procrastinate": run_procrastinate_worker, "pgqueuer": run_pgqueuer_worker}[peer](url)
