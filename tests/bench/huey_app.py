"""The Huey peer: a SqliteHuey with one no-op task, importable by ``huey_consumer`` in a child process.

Huey leaves SQLite at ``synchronous=FULL`` (an fsync per commit) unless told otherwise; queue_core runs at
NORMAL in WAL mode. The storage below sets NORMAL too, so both pay for the same durability.
"""

from __future__ import annotations

import os

from huey import SqliteHuey
from huey.storage import SqliteStorage


class NormalSyncSqliteStorage(SqliteStorage):
    def _create_connection(self):
        connection = super()._create_connection()
        connection.execute("PRAGMA synchronous = NORMAL")
        return connection


def noop():
    """Does nothing: the benchmark measures the queue, not the work."""


def make_huey(path: str) -> tuple[SqliteHuey, object]:
    """A SqliteHuey on ``path`` and its registered no-op task (call it to enqueue)."""
    huey = SqliteHuey("bench", filename=path, storage_class=NormalSyncSqliteStorage)
    return huey, huey.task(name="noop")(noop)


# What the consumer child imports (``huey_consumer tests.bench.huey_app.huey``); the parent passes the file.
huey = make_huey(os.environ["BENCH_HUEY_DB"])[0] if "BENCH_HUEY_DB" in os.environ else None
