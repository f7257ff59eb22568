"""Helpers shared by tests (importable as ``support``: tests/ is on sys.path)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

from queue_core.clock import ManualClock
from queue_core.store.database import open_database
from queue_core.store.models import bind_models
from queue_core.store.repository import JobRepository
from queue_core.store.schema import SCHEMA_VERSION, schema_version

START = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def with_search_path(url: str, schema: str) -> str:
    """``url`` confined to ``schema``: self-contained, so a subprocess given it sees the same tables."""
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}options=-csearch_path%3D{schema}&application_name={schema}"


ROOT = Path(__file__).resolve().parents[1]


def run_fresh(code: str, *, path: str | None = None) -> dict:
    """Run ``code`` (dedented) in a fresh interpreter, with ``path`` first on sys.path if given; it prints
    one JSON object, returned here."""
    if path is not None:
        code = f"import sys; sys.path.insert(0, {path!r})\n" + textwrap.dedent(code)
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


class FakeClock(ManualClock):
    """A clock that moves only when told to, at START unless told otherwise."""

    def __init__(self, now: datetime = START):
        super().__init__(now)


def fresh_repository(db_url: str, clock=None, rng=None) -> JobRepository:
    """A repository on ``db_url`` with no jobs in it (for tests that need many clean starts in one test)."""
    db = open_database(db_url)
    models = bind_models(db)
    with db.atomic():
        models.JobError.delete().execute()
        models.Job.delete().execute()
    return JobRepository(db, clock=clock, rng=rng)


def as_schema_version_5(db) -> None:
    """Turn a current database back into schema version 5: no queue, cancel request, result or timeout
    column on jobs, no queues or workers table (the migration tests then open it again)."""
    db.execute_sql("DROP INDEX IF EXISTS jobs_queue_claim")
    db.execute_sql("DROP INDEX IF EXISTS jobs_pending_queue_claim")
    for column in ("queue", "cancel_requested_at", "result", "timeout"):
        db.execute_sql(f"ALTER TABLE jobs DROP COLUMN {column}")
    db.execute_sql("DROP TABLE queues")
    db.execute_sql("DROP TABLE workers")
    db.execute_sql("UPDATE queue_meta SET value = '5' WHERE key = 'schema_version'")


def reopened_at_version(db, db_url: str, version: int, *statements: str):
    """Run ``statements`` (which give a current database the shape of schema ``version``), record ``version``,
    close it and open it again, which migrates it: the reopened database, checked to be current."""
    for sql in statements:
        db.execute_sql(sql)
    db.execute_sql(f"UPDATE queue_meta SET value = '{int(version)}' WHERE key = 'schema_version'")
    db.close()
    db = open_database(db_url)
    assert schema_version(db) == SCHEMA_VERSION
    return db


def every_row(repo: JobRepository) -> list:
    """Every row of every table, to compare before and after a refused write."""
    tables = [repo.Job, repo.JobError, repo.QueueRecord, repo.WorkerRecord]
    return [sorted(map(tuple, table.select().tuples())) for table in tables]


def another_apps_database(db_url, tmp_path) -> str:
    """A database of the test's backend holding another application's table and none of the queue's."""
    if db_url.startswith("sqlite"):
        url = f"sqlite:///{tmp_path / 'app.db'}"
        with contextlib.closing(sqlite3.connect(tmp_path / "app.db")) as conn:
            conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY)")
        return url
    import psycopg

    with psycopg.connect(db_url, autocommit=True) as conn:  # the test's own schema, its queue tables dropped
        for (table,) in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"):
            conn.execute(f"DROP TABLE {table} CASCADE")
        conn.execute("CREATE TABLE users (id integer PRIMARY KEY)")
    return db_url


def table_names(url: str) -> list[str]:
    if url.startswith("sqlite"):
        with contextlib.closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as conn:
            return sorted(name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()").fetchall()
    return sorted(name for (name,) in rows)


@contextlib.contextmanager
def statements_run(repo: JobRepository, keep):
    """The (sql, params) of each statement ``repo`` runs inside the block for which ``keep(sql)`` is true."""
    kept = []
    execute_sql = repo.db.execute_sql

    def recording(sql, params=None, *args, **kwargs):
        if keep(sql):
            kept.append((sql, params))
        return execute_sql(sql, params, *args, **kwargs)

    repo.db.execute_sql = recording
    try:
        yield kept
    finally:
        del repo.db.execute_sql


def sqlite_plan(repo: JobRepository, sql: str, params) -> str:
    """SQLite's EXPLAIN QUERY PLAN of a statement, its steps joined by " / "."""
    return " / ".join(row[-1] for row in repo.db.execute_sql(f"EXPLAIN QUERY PLAN {sql}", params).fetchall())
