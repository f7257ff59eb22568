"""``python -m queue_core migrate``: the queue's tables made, upgraded or found current, and which one said in a
line (both backends); the step a deploy runs before its workers, as every other read command refuses a
database without the tables."""

from __future__ import annotations

import contextlib
import re
import sqlite3
import threading
import uuid
from urllib.parse import urlsplit, urlunsplit

import pytest
from live_server import LiveServer
from support import another_apps_database, as_schema_version_5, table_names
from test_entry_point_errors import assert_one_error_line, run_cli, run_module

from queue_core.errors import DatabaseURLError
from queue_core.store.database import open_database, without_password
from queue_core.store.repository import JobRepository
from queue_core.store.schema import SCHEMA_VERSION, schema_version


def made(url: str) -> str:
    return f"made the queue's tables in {without_password(url)} (schema version {SCHEMA_VERSION})\n"


def current(url: str) -> str:
    return (
        f"the queue's tables in {without_password(url)} are at schema version {SCHEMA_VERSION}, this queue_core's:"
        " nothing to do\n"
    )


def test_migrate_makes_the_tables_beside_another_apps_then_finds_them_current(db_url, tmp_path):
    url = another_apps_database(db_url, tmp_path)
    assert run_cli("--db", url, "stats")[0] == 2  # a read refuses the database: no queue tables yet

    assert run_cli("--db", url, "migrate") == (0, made(url), "")
    assert {"jobs", "job_errors", "queue_meta", "queues", "workers", "users"} <= set(table_names(url))
    assert run_cli("--db", url, "stats")[0] == 0
    assert run_cli("migrate", "--db", url) == (0, current(url), "")  # --db after the command too


def test_migrate_makes_a_new_sqlite_file(tmp_path):
    new = tmp_path / "new.db"
    url = f"sqlite:///{new}"
    assert run_cli("--db", url, "migrate") == (0, made(url), "")
    code, out, _ = run_cli("--db", url, "list")
    assert new.exists() and code == 0 and len(out.splitlines()) == 1  # the table's header: no jobs


def test_migrate_upgrades_an_older_schema_keeping_every_job(db_url):
    db = open_database(db_url)
    repo = JobRepository(db)
    kept = [repo.create("echo", {"n": n})[0].id for n in range(3)]
    as_schema_version_5(db)
    db.close()

    code, out, err = run_cli("--db", db_url, "migrate")

    assert (code, err) == (0, "")
    assert out == (
        f"upgraded the queue's tables in {without_password(db_url)} from schema version 5 to {SCHEMA_VERSION}\n"
    )
    db = open_database(db_url)
    assert schema_version(db) == SCHEMA_VERSION
    assert sorted(job.id for job in JobRepository(db).list()) == kept
    db.close()


# The admin commands that change nothing, and a bulk action's --dry-run.
READS = (
    ["list"],
    ["show", "1"],
    ["stats"],
    ["queues"],
    ["workers"],
    ["schedules"],
    ["retry", "--cause", "x", "--dry-run"],
)


def test_a_read_refuses_an_older_schema_and_upgrades_nothing_while_an_action_upgrades_it(db_url):
    # A newer admin CLI's stats against an older deployment upgraded its tables: a write from a read, after
    # which the workers of the older queue_core could not open the database again.
    db = open_database(db_url)
    job = JobRepository(db).create("echo", {})[0]
    as_schema_version_5(db)
    db.close()

    for read in READS:
        code, out, err = run_cli("--db", db_url, *read)
        assert code == 2 and out == "", (read, out)
        assert_one_error_line(err, "at schema version 5, older than", "python -m queue_core migrate")
        assert found_version(db_url) == 5, read  # nothing upgraded

    code, out, err = run_cli("--db", db_url, "pause", "default")  # an action writes: it upgrades, as before
    assert (code, err) == (0, ""), err
    assert found_version(db_url) == SCHEMA_VERSION
    code, out, _ = run_cli("--db", db_url, "show", str(job.id))
    assert code == 0 and "echo" in out


def found_version(url: str) -> int:
    """The schema version of the tables at ``url``, upgrading nothing."""
    try:
        with contextlib.closing(open_database(url, create=False, upgrade=False)) as db:
            return schema_version(db)
    except DatabaseURLError as exc:
        return int(re.search(r"at schema version (\d+), older", str(exc)).group(1))


def test_migrate_refuses_a_schema_newer_than_this_queue_core(db_url):
    db = open_database(db_url)
    db.execute_sql(f"UPDATE queue_meta SET value = '{SCHEMA_VERSION + 1}' WHERE key = 'schema_version'")
    db.close()

    code, out, err = run_cli("--db", db_url, "migrate")

    assert code == 2 and out == ""
    assert_one_error_line(err, f"schema version {SCHEMA_VERSION + 1} is newer", "upgrade queue_core")


def test_of_several_opens_at_once_only_one_says_it_made_the_tables(db_url, tmp_path):
    url = another_apps_database(db_url, tmp_path)
    found, start = [], threading.Barrier(4)

    def open_it() -> None:
        start.wait()
        db = open_database(url)
        found.append(db.schema_found)
        db.close()

    threads = [threading.Thread(target=open_it) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert sorted(found) == [0, SCHEMA_VERSION, SCHEMA_VERSION, SCHEMA_VERSION]


def test_connections_opening_a_new_sqlite_file_at_once_all_open_it(tmp_path):
    # Regression: SQLite answers a journal_mode=WAL that meets another connection's switch of the same new
    # file "database is locked" at once, without its busy wait; of four opening it together, one in seven
    # rounds failed (workers started together on a new file: one exited 2, "cannot open ...: database is locked").
    errors: list[str] = []

    def open_it(url: str, start: threading.Barrier) -> None:
        start.wait()
        try:
            open_database(url).close()
        except DatabaseURLError as exc:
            errors.append(str(exc))

    for round_ in range(40):
        url, start = f"sqlite:///{tmp_path / f'new-{round_}.db'}", threading.Barrier(4)
        threads = [threading.Thread(target=open_it, args=(url, start)) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)

    assert errors == []


def test_a_worker_says_once_that_it_made_the_tables_of_a_new_database(tmp_path):
    url = f"sqlite:///{tmp_path / 'new.db'}"
    args = ["--db", url, "--burst", "--processes", "2"]

    first = run_module("queue_core.worker", *args)
    again = run_module("queue_core.worker", *args)

    assert first.returncode == 0 and again.returncode == 0, first.stderr + again.stderr
    # Said by the pool's parent, which opened the database before it forked; its processes found it current.
    assert first.stderr.count("INFO made the queue's tables in") == 1, first.stderr
    assert made(url).strip() in first.stderr
    assert "the queue's tables" not in again.stderr, again.stderr


def test_the_server_says_it_made_the_tables_of_a_new_database(tmp_path):
    url = f"sqlite:///{tmp_path / 'new.db'}"

    def server_log() -> str:
        server = LiveServer(url, "--log-level", "info").__enter__()  # up once /healthz answers
        return server.stop()  # its whole output

    first, again = server_log(), server_log()

    assert made(url).strip() in first, first
    assert "Serving on" in again and "the queue's tables" not in again, again


def as_newer_schema(url: str) -> None:
    """Record a schema version one past this queue_core's at ``url``: tables a newer queue_core upgraded."""
    with contextlib.closing(open_database(url)) as db:  # made current first
        db.execute_sql(f"UPDATE queue_meta SET value = '{SCHEMA_VERSION + 1}' WHERE key = 'schema_version'")


@pytest.mark.backends("sqlite")
def test_a_look_at_a_newer_schema_says_so_without_the_write_lock(tmp_path):
    # A downgrade after a bad deploy: the older queue_core's read-only look took the write lock before it found
    # the schema newer (migrate's check), so a worker of the newer one writing meanwhile made it fail with
    # "database is locked" instead of what to do.
    url = f"sqlite:///{tmp_path / 'q.db'}"
    as_newer_schema(url)
    writer = sqlite3.connect(tmp_path / "q.db", isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # a worker of the newer queue_core, mid-transaction
    try:
        with pytest.raises(DatabaseURLError, match=rf"schema version {SCHEMA_VERSION + 1} is newer") as raised:
            open_database(f"{url}?busy_timeout=0", create=False, upgrade=False)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert "upgrade queue_core" in str(raised.value) and str(tmp_path / "q.db") in str(raised.value)


@pytest.mark.backends("postgresql")
def test_a_role_without_create_hears_that_the_schema_is_newer_not_that_it_lacks_a_privilege(db_url):
    # The workers' role may read and write the tables but not CREATE (README, "Roles and server settings").
    # Against tables a newer queue_core upgraded, every program of this one said "permission denied for
    # schema ...: ... needs a role that may CREATE": migrate's CREATE TABLE IF NOT EXISTS ran before its
    # version check. The operator granted CREATE, to hear the real reason next.
    role = f"queue_nocreate_{uuid.uuid4().hex[:8]}"
    with contextlib.closing(open_database(db_url)) as owner:
        schema = owner.execute_sql("SELECT current_schema()").fetchone()[0]
        owner.execute_sql(f"CREATE ROLE {role} LOGIN")
        owner.execute_sql(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
        owner.execute_sql(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {role}")
    as_newer_schema(db_url)
    parts = urlsplit(db_url)
    as_role = urlunsplit(parts._replace(netloc=f"{role}@{parts.netloc.rsplit('@', 1)[-1]}"))
    try:
        for command in (["stats"], ["migrate"], ["enqueue", "echo"]):
            code, out, err = run_cli("--db", as_role, *command)
            assert code == 2 and out == "", (command, out)
            assert_one_error_line(err, f"schema version {SCHEMA_VERSION + 1} is newer", "upgrade queue_core")
            assert "permission denied" not in err, (command, err)
    finally:
        import psycopg

        with psycopg.connect(db_url, autocommit=True) as owner:  # open_database refuses the newer tables
            owner.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA {schema} FROM {role}")
            owner.execute(f"REVOKE ALL ON SCHEMA {schema} FROM {role}")
            owner.execute(f"DROP ROLE {role}")


@pytest.mark.backends("sqlite")
def test_a_worker_that_waited_past_the_busy_timeout_for_another_upgrade_says_so_and_what_to_do(tmp_path):
    # A deploy restarts its workers together on tables an older queue_core made: one upgrades them, holding
    # the write lock (seconds for a large file), and the rest wait for it up to the busy timeout. Those said
    # only "error: cannot open URL: database is locked": neither why a worker's open writes, nor what to do.
    url = f"sqlite:///{tmp_path / 'q.db'}"
    with contextlib.closing(open_database(url)) as db:
        as_schema_version_5(db)
    upgrading = sqlite3.connect(tmp_path / "q.db", isolation_level=None)
    upgrading.execute("BEGIN IMMEDIATE")  # another process, upgrading them
    try:
        done = run_module("queue_core.worker", "--db", f"{url}?busy_timeout=0", "--burst")
    finally:
        upgrading.execute("ROLLBACK")
        upgrading.close()

    assert done.returncode == 2 and done.stdout == ""
    assert_one_error_line(
        done.stderr,
        "database is locked",
        f"upgrade the queue's tables from schema version 5 to {SCHEMA_VERSION}",
        "busy timeout (0 s); nothing was changed",
        "?busy_timeout=60000",
    )
    assert found_version(url) == 5  # nothing upgraded, nothing lost: the next start upgrades them
    assert run_module("queue_core.worker", "--db", url, "--burst").returncode == 0
    assert found_version(url) == SCHEMA_VERSION


@pytest.mark.backends("postgresql")
def test_an_upgrade_that_finds_a_table_locked_gives_up_and_names_the_holder(db_url, monkeypatch):
    # A long transaction on a queue table (a report, pg_dump, a session left idle in one) made migrate's
    # ALTER TABLE wait for its lock for as long, silently, and every worker's claim and ack queued behind it.
    import psycopg

    from queue_core.store import schema

    # raising=False: set on a queue_core without them too, where the test must fail, not error.
    monkeypatch.setattr(schema, "MIGRATION_LOCK_TIMEOUT_MS", 100, raising=False)
    monkeypatch.setattr(schema, "MIGRATION_TRIES", 2, raising=False)
    monkeypatch.setattr(schema, "MIGRATION_PAUSE", 0, raising=False)
    with contextlib.closing(open_database(db_url)) as db:
        job = JobRepository(db).create("echo", {"n": 1})[0]
        db.execute_sql("ALTER TABLE job_errors DROP COLUMN traceback")  # version 15's shape
        db.execute_sql("UPDATE queue_meta SET value = '15' WHERE key = 'schema_version'")
    with psycopg.connect(db_url) as holder:
        # Ended by the server after 30 s, so that without the give-up the upgrade goes through and this fails.
        holder.execute("SET idle_in_transaction_session_timeout = '30s'")
        holder.execute("SELECT count(*) FROM job_errors")  # its transaction holds the table until it ends
        pid = holder.info.backend_pid
        with pytest.raises(DatabaseURLError) as raised:
            open_database(db_url)
        holder.rollback()

    said = str(raised.value)
    assert f"from schema version 15 to {SCHEMA_VERSION}" in said and "nothing was changed" in said, said
    assert f"Held by pid {pid} (idle in transaction" in said and "SELECT count(*) FROM job_errors" in said, said
    assert f"pg_terminate_backend({pid})" in said and "python -m queue_core migrate again" in said, said
    assert found_version(db_url) == 15
    with contextlib.closing(open_database(db_url)) as db:  # the holder gone: the upgrade goes through
        assert db.schema_found == 15 and JobRepository(db).find_by_id(job.id).payload == {"n": 1}
