"""Where a round's jobs live: a fresh SQLite file, or a throwaway PostgreSQL database emptied per round."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

from queue_core.store.database import open_database

from .raw import RawQueue, sqlite_connection

PG_SERVER = os.environ.get("BENCH_PG", "postgresql://postgres@127.0.0.1:5432")
PG_DATABASE_PREFIX = "queue_core_bench"


class Backend:
    name: str

    def raw(self, url: str) -> RawQueue:
        raise NotImplementedError

    def fill(self, url: str, n: int) -> None:
        """n pending no-op jobs, due now, written in one transaction (drain setup, never timed)."""
        raw = self.raw(url)
        raw.fill(n)
        raw.connection.close()


class SqliteBackend(Backend):
    name = "sqlite"

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self._numbers = itertools.count()

    def fresh(self, label: str = "queue") -> str:
        """The URL of a new, empty database with queue_core's schema."""
        path = self.workdir / f"{label}-{next(self._numbers)}.db"
        url = f"sqlite:///{path}"
        open_database(url).close()
        return url

    @staticmethod
    def path(url: str) -> str:
        return url.removeprefix("sqlite:///")

    def raw(self, url: str) -> RawQueue:
        return RawQueue(sqlite_connection(self.path(url)), postgres=False)

    def close(self) -> None:
        pass


class PostgresBackend(Backend):
    """One throwaway database per run (``queue_core_bench_<pid>``), dropped at the end."""

    name = "postgresql"

    def __init__(self, workdir: Path):
        self.database = f"{PG_DATABASE_PREFIX}_{os.getpid()}"
        self.url = create_database(self.database)
        open_database(self.url).close()

    def fresh(self, label: str = "queue") -> str:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as connection:
            connection.execute("TRUNCATE jobs, job_errors RESTART IDENTITY")
        return self.url

    def raw(self, url: str) -> RawQueue:
        import psycopg

        return RawQueue(psycopg.connect(url, autocommit=True), postgres=True)

    def close(self) -> None:
        drop_database(self.database)


def create_database(name: str) -> str:
    """A new empty PostgreSQL database (dropped first if a crashed run left it); its URL."""
    import psycopg

    with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    return f"{PG_SERVER}/{name}"


def drop_database(name: str) -> None:
    import psycopg

    with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
