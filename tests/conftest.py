"""Shared fixtures: a fresh database per test (never the user's queue.db) and a clock tests control.

Every test that uses ``db_url`` (directly or through ``db`` / ``repo``) runs on both backends: SQLite in a
temporary file, PostgreSQL in a schema of its own. ``@pytest.mark.backends("sqlite")`` limits a test to
the backends named. The console's tests (``tests/console``) run on SQLite unless marked
``backends("sqlite", "postgresql")``: the console reads and writes only through ``JobRepository``, whose
reads and writes the tests here run on both backends, so its tests on PostgreSQL would go through the same
console code again; the ones marked take each of its reads, writes and workers through PostgreSQL end to
end. PostgreSQL: ``$QUEUE_TEST_POSTGRES_URL`` or ``postgresql://postgres@127.0.0.1:5432/test``;
unreachable, its tests skip and say how to enable them, unless ``$CI`` is set: then they fail.
"""

from __future__ import annotations

import os
import random
import uuid
from pathlib import Path

import pytest
from support import FakeClock, with_search_path
from worker_support import Recorder

from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository
from queue_core.worker import Worker
from queue_core.worker.handlers import HandlerRegistry

BACKENDS = ("sqlite", "postgresql")
CONSOLE_TESTS = Path(__file__).parent / "console"
DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"


def pytest_addoption(parser):
    parser.addoption(
        "--soak", action="store_true", help="reliability tests at soak size (many more jobs, workers and kills)"
    )


@pytest.fixture
def soak(request) -> bool:
    return request.config.getoption("--soak")


def pytest_configure(config):
    config.addinivalue_line("markers", "backends(*names): run only on these database backends (sqlite, postgresql)")


def pytest_generate_tests(metafunc):
    if "db_url" in metafunc.fixturenames:
        marker = metafunc.definition.get_closest_marker("backends")
        if marker:
            names = marker.args
        else:
            names = ("sqlite",) if CONSOLE_TESTS in Path(metafunc.definition.path).parents else BACKENDS
        unknown = set(names) - set(BACKENDS)
        assert not unknown, f"unknown backends {unknown}; use {BACKENDS}"
        if tuple(names) != ("sqlite",):  # SQLite alone is the default: its tests keep their plain names
            metafunc.parametrize("db_url", names, indirect=True)


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """The test server's URL, once it answered; skip (or fail under CI) when it does not."""
    url = os.environ.get("QUEUE_TEST_POSTGRES_URL") or DEFAULT_POSTGRES_URL
    try:
        import psycopg

        psycopg.connect(url, connect_timeout=5).close()
    except Exception as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        message = (
            f"PostgreSQL not reachable at {url} ({reason}); to run the PostgreSQL tests start a server there "
            "(trust auth, database 'test') or set QUEUE_TEST_POSTGRES_URL=postgresql://user@host:port/dbname"
        )
        if os.environ.get("CI"):
            pytest.fail(f"{message}. CI is set, so the PostgreSQL tests must run, not skip.")
        pytest.skip(message)
    return url


@pytest.fixture
def db_url(request, tmp_path):
    if getattr(request, "param", "sqlite") == "sqlite":
        url = f"sqlite:///{tmp_path / 'queue.db'}"
        # Made, tables and all: commands other than enqueue refuse a file that is not there, or has no tables.
        open_database(url).close()
        yield url
        return
    import psycopg

    base = request.getfixturevalue("postgres_url")
    schema = f"queue_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    url = with_search_path(base, schema)
    # Its tables made, as SQLite's file is: commands other than enqueue refuse a database without them.
    open_database(url).close()
    yield url
    with psycopg.connect(base, autocommit=True) as admin:
        # Connections a test left behind (a killed worker's, a subprocess still exiting) would hold the drop.
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = %s AND pid <> pg_backend_pid()",
            (schema,),
        )
        admin.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def db(db_url):
    database = open_database(db_url)
    yield database
    database.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def repo(db, clock) -> JobRepository:
    return JobRepository(db, clock=clock, rng=random.Random(1234))


@pytest.fixture
def worker_env(db_url):
    """The environment of a worker process the test starts: the test's database, and the tests' handlers
    importable."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.pathsep.join([root, os.path.join(root, "tests")])
    return {**os.environ, "QUEUE_DB_URL": db_url, "PYTHONPATH": path}


@pytest.fixture
def live_repo(db) -> JobRepository:
    """A repository on the real clock, for tests where real threads or processes share the database."""
    return JobRepository(db)


# --- an in-process Worker on the test's database: registry, event recorder, and a factory that stops them ---


@pytest.fixture
def handlers():
    return HandlerRegistry(with_builtins=False)


@pytest.fixture
def events():
    return Recorder()


@pytest.fixture
def make_worker(live_repo, handlers, events):
    made = []

    def make(queue=None, **options):
        options = {"worker_id": "w1", "poll_interval": 0.01, "max_poll_interval": 0.05, **options}
        worker = Worker(live_repo if queue is None else queue, registry=handlers, on_event=events, **options)
        made.append(worker)
        return worker

    yield make
    for worker in made:
        worker.stop(timeout=0)
