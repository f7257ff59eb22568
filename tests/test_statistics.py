"""PostgreSQL's planner statistics, kept fresh by workers (store/statistics.py), and the worker program's
generic plans. The claim plans themselves are looked at in test_postgres.py."""

from __future__ import annotations

import threading
import time
import uuid
from urllib.parse import urlsplit, urlunsplit

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from queue_core.client import HttpQueue
from queue_core.server.app import create_app
from queue_core.store.database import open_database
from queue_core.store.models import is_postgres
from queue_core.store.repository import JobRepository
from queue_core.store.statistics import statistics_stale
from queue_core.worker import Worker
from queue_core.worker.cli import build_parser, open_queue

postgres_only = pytest.mark.backends("postgresql")
BACKLOG = 3000


def backlog(repo: JobRepository) -> None:
    repo.create_many([{"type": "t", "payload": {}} for _ in range(BACKLOG)])
    if is_postgres(repo.db):
        # A backend reports its row counts to pg_stat at most once a second: counts still unreported when
        # an ANALYZE resets the table's would arrive after it and make the fresh statistics look stale.
        deadline = time.monotonic() + 30
        while modified_since_analyze(repo) < BACKLOG and time.monotonic() < deadline:
            time.sleep(0.05)


def modified_since_analyze(repo: JobRepository) -> int:
    row = repo.db.execute_sql(
        "SELECT n_mod_since_analyze FROM pg_stat_user_tables WHERE relid = %s::regclass",
        (repo.Job._meta.table_name,),
    ).fetchone()
    return row[0] if row else 0


@postgres_only
def test_a_table_never_analyzed_is_analyzed_once_then_left_alone(db):
    repo = JobRepository(db)
    backlog(repo)
    table = repo.Job._meta.table_name
    assert statistics_stale(db, table)
    assert repo.refresh_statistics() is True
    assert not statistics_stale(db, table)
    assert repo.refresh_statistics() is False  # nothing changed since: no second ANALYZE


@postgres_only
def test_a_worker_analyzes_a_table_without_statistics_before_it_claims(db, live_repo, handlers):
    backlog(live_repo)
    handlers.register("t", lambda payload: None)
    Worker(live_repo, worker_id="w", registry=handlers, concurrency=4).run(burst=True)
    analyzed = db.execute_sql(
        "SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relid = %s::regclass",
        (live_repo.Job._meta.table_name,),
    ).fetchone()[0]
    assert analyzed
    assert live_repo.counts()["completed"] == BACKLOG


@postgres_only
def test_the_worker_program_plans_its_statements_once_other_programs_keep_the_default(db_url):
    def setting(database) -> str:
        seen = []
        # A connection opened after the switch, on a thread of its own, as a claim thread's is.
        thread = threading.Thread(target=lambda: seen.append(database.execute_sql("SHOW plan_cache_mode").fetchone()))
        thread.start()
        thread.join()
        database.close()
        return seen[0][0]

    _queue, database, close = open_queue(build_parser().parse_args(["--db", db_url]))
    try:
        assert database.execute_sql("SHOW plan_cache_mode").fetchone()[0] == "force_generic_plan"
        assert setting(database) == "force_generic_plan"
    finally:
        close()
    other = open_database(db_url)
    try:
        assert setting(other) == "auto"
    finally:
        other.close()


def test_sqlite_has_nothing_to_refresh(tmp_path):
    assert JobRepository(open_database(f"sqlite:///{tmp_path / 'q.db'}")).refresh_statistics() is False


@postgres_only
def test_a_role_that_may_not_analyze_the_table_does_not_try(db, db_url):
    repo = JobRepository(db)
    backlog(repo)  # never analyzed: stale for the owner
    role = f"queue_nonowner_{uuid.uuid4().hex[:8]}"
    schema = db.execute_sql("SELECT current_schema()").fetchone()[0]
    db.execute_sql(f"CREATE ROLE {role} LOGIN")
    try:
        db.execute_sql(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
        db.execute_sql(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}")
        parts = urlsplit(db_url)
        other = open_database(urlunsplit(parts._replace(netloc=f"{role}@{parts.netloc.rsplit('@', 1)[-1]}")))
        try:
            assert statistics_stale(db, repo.Job._meta.table_name)
            assert not statistics_stale(other, repo.Job._meta.table_name)
        finally:
            other.close()
    finally:
        db.execute_sql(f"REVOKE ALL ON ALL TABLES IN SCHEMA {schema} FROM {role}")
        db.execute_sql(f"REVOKE ALL ON SCHEMA {schema} FROM {role}")
        db.execute_sql(f"DROP ROLE {role}")


def test_a_worker_over_the_api_has_the_server_refresh_its_statistics(db):
    repo = JobRepository(db)
    backlog(repo)
    client = TestClient(create_app(repo), raise_server_exceptions=False)
    with HttpQueue("http://testserver", client=client) as queue:
        postgres = is_postgres(db)
        assert queue.refresh_statistics() is postgres  # never analyzed: PostgreSQL analyzes, SQLite has nothing
        assert queue.refresh_statistics() is False  # fresh now
    if postgres:
        assert not statistics_stale(db, repo.Job._meta.table_name)


def test_a_server_without_the_route_is_no_error():
    older = FastAPI()  # an older server: no /jobs/refresh-statistics, so 404
    with HttpQueue("http://testserver", client=TestClient(older)) as queue:
        assert queue.refresh_statistics() is False
