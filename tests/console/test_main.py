"""``queue-console`` as a program: its exit code, and what ``--demo`` agrees to seed."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys

import pytest
from support import as_schema_version_5
from textual.app import App

import console.app
from console.app import QueueConsole, main
from console.options import build_parser, parse_args
from queue_core.errors import DatabaseURLError
from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository
from queue_core.store.schema import SCHEMA_VERSION, schema_version

# --- a crash exits non-zero ---------------------------------------------------------------------


def test_a_crash_exits_non_zero(tmp_path, monkeypatch):
    def crash(self) -> None:
        raise RuntimeError("boom in the console")

    monkeypatch.setattr(QueueConsole, "on_mount", crash)
    monkeypatch.setattr(QueueConsole, "run", lambda self: App.run(self, headless=True))
    with pytest.raises(SystemExit) as info:
        main(["--db", f"sqlite:///{tmp_path / 'q.db'}"])
    assert info.value.code == 1


def test_a_clean_quit_exits_zero(tmp_path, monkeypatch):
    def quit_at_once(self) -> None:
        self.exit()

    monkeypatch.setattr(QueueConsole, "on_mount", quit_at_once)
    monkeypatch.setattr(QueueConsole, "run", lambda self: App.run(self, headless=True))
    with pytest.raises(SystemExit) as info:
        main(["--db", f"sqlite:///{tmp_path / 'q.db'}"])
    assert info.value.code == 0


def test_the_header_never_shows_the_database_password(tmp_path, monkeypatch):
    """The header showed --db as given: postgresql://queue:secret@host/... on screen, in a screen share, in the
    browser with --serve. It names the database with the password as ***, as the error messages do."""
    sqlite_url = f"sqlite:///{tmp_path / 'q.db'}"
    monkeypatch.setattr(console.app, "open_database", lambda url, **options: open_database(sqlite_url, **options))
    labels = []
    monkeypatch.setattr(QueueConsole, "run", lambda self: labels.append(self.db_label))
    assert run_main(["--db", "postgresql://queue:hunter2@db.example:5432/jobs"]) == 0
    assert labels == ["postgresql://queue:***@db.example:5432/jobs"]


# --- --demo never seeds a database that may be production -----------------------------------------


@pytest.fixture
def console_not_run(monkeypatch):
    """main() up to the point where the app would start: the database work is what these tests check."""
    monkeypatch.setattr(QueueConsole, "run", lambda self: None)


def run_main(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as info:
        main(argv)
    return info.value.code


@pytest.mark.backends("sqlite")
def test_demo_seeds_an_empty_database_and_again_one_with_demo_jobs_only(db_url, console_not_run):
    assert run_main(["--db", db_url, "--demo"]) == 0
    repo = JobRepository(open_database(db_url))
    seeded = sum(repo.counts().values())
    assert seeded > 0
    assert run_main(["--db", db_url, "--demo"]) == 0  # a second run of the demo is no accident
    assert sum(repo.counts().values()) == 2 * seeded


@pytest.mark.backends("sqlite")
def test_demo_refuses_a_database_with_real_jobs(db_url, console_not_run, capsys):
    repo = JobRepository(open_database(db_url))
    repo.create("send-invoice", {"invoice": 1})
    before = repo.counts()
    assert run_main(["--db", db_url, "--demo"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "--force-demo" in err and "send-invoice" in err
    assert len(err.splitlines()) == 1
    assert repo.counts() == before  # nothing seeded
    assert run_main(["--db", db_url, "--demo", "--force-demo"]) == 0  # told explicitly: seeds
    assert sum(repo.counts().values()) > sum(before.values())


@pytest.mark.backends("postgresql")
def test_demo_refuses_postgresql_unless_forced(db_url, console_not_run, capsys):
    repo = JobRepository(open_database(db_url))
    assert run_main(["--db", db_url, "--demo"]) == 2  # even empty: a server database may be production
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "PostgreSQL" in err and "--force-demo" in err
    assert sum(repo.counts().values()) == 0
    assert run_main(["--db", db_url, "--demo", "--force-demo"]) == 0
    assert sum(repo.counts().values()) > 0


def test_force_demo_goes_with_demo(capsys):
    assert run_main(["--force-demo"]) == 2
    assert "--force-demo" in capsys.readouterr().err


def test_refresh_help_states_its_default():
    help_text = " ".join(build_parser().format_help().split())
    assert "seconds between refreshes (default 1)" in help_text
    assert "embedded worker threads (default 2)" in help_text


def test_read_only_on_a_missing_sqlite_file_is_an_error_and_makes_no_file(tmp_path, console_not_run, capsys):
    missing = tmp_path / "mistyped.db"
    assert run_main(["--db", f"sqlite:///{missing}", "--read-only"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "no database at" in err
    assert list(tmp_path.iterdir()) == []  # no file, no -wal or -shm beside it


def test_read_only_on_a_database_without_queue_tables_is_an_error_and_makes_none(tmp_path, console_not_run, capsys):
    other = tmp_path / "app.db"
    with contextlib.closing(sqlite3.connect(other)) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY)")
    assert run_main(["--db", f"sqlite:///{other}", "--read-only"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "no queue tables in" in err
    with contextlib.closing(sqlite3.connect(other)) as conn:
        assert [name for (name,) in conn.execute("SELECT name FROM sqlite_master")] == ["users"]


@pytest.mark.backends("sqlite", "postgresql")
def test_read_only_on_tables_of_an_older_schema_is_an_error_and_upgrades_nothing(db_url, console_not_run, capsys):
    # A newer console looking read-only at a database upgraded it: a write, and the workers of the older
    # queue_core could not open the database again ("schema version ... is newer than this queue_core's").
    db = open_database(db_url)
    as_schema_version_5(db)
    db.close()

    assert run_main(["--db", db_url, "--read-only"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
    assert "at schema version 5, older than" in err and "python -m queue_core migrate" in err
    with pytest.raises(DatabaseURLError, match="at schema version 5"):  # still version 5: nothing was upgraded
        open_database(db_url, create=False, upgrade=False)

    assert run_main(["--db", db_url]) == 0  # not read-only: opened and upgraded, as before
    with contextlib.closing(open_database(db_url, create=False, upgrade=False)) as db:
        assert schema_version(db) == SCHEMA_VERSION


# --- --handlers: the database their Queue names, as the worker's --handlers -------------------------------

TASKS = """
from queue_core import Queue

queue = Queue({url!r})


@queue.task({kind!r})
def shout(word: str) -> str:
    return word.upper()
"""

PRINT_THE_HEADER = (
    "import console.app as app; app.QueueConsole.run = lambda self: print('opened', self.db_label); app.main({argv!r})"
)


def console_in(folder, argv: list[str], **env: str) -> subprocess.CompletedProcess:
    """The console program in ``folder`` (its modules importable, as from a shell there), printing the
    database its header names instead of starting the app."""
    environ = {key: value for key, value in os.environ.items() if key != "QUEUE_DB_URL"} | env
    code = PRINT_THE_HEADER.format(argv=argv)
    return subprocess.run([sys.executable, "-c", code], cwd=folder, env=environ, capture_output=True, text=True)


def test_handlers_modules_whose_queue_names_a_database_open_that_one(tmp_path):
    """``--handlers`` opened sqlite:///queue.db, a new empty file beside the module, where the module's Queue
    named another database: an empty console, and ``w`` started a worker on the wrong database."""
    url = f"sqlite:///{tmp_path / 'tasks.db'}"
    (tmp_path / "tasks_a.py").write_text(TASKS.format(url=url, kind="shout"))
    (tmp_path / "tasks_b.py").write_text(TASKS.format(url=f"sqlite:///{tmp_path / 'other.db'}", kind="whisper"))

    done = console_in(tmp_path, ["--handlers", "tasks_a"])
    assert (done.returncode, done.stdout.strip()) == (0, f"opened {url}"), done.stderr
    assert sorted(path.name for path in tmp_path.glob("*.db")) == ["tasks.db"]  # no queue.db made

    chosen = f"sqlite:///{tmp_path / 'chosen.db'}"
    done = console_in(tmp_path, ["--handlers", "tasks_a", "--db", chosen])  # --db still chooses
    assert done.stdout.strip() == f"opened {chosen}", done.stderr
    done = console_in(tmp_path, ["--handlers", "tasks_a"], QUEUE_DB_URL=chosen)  # and so does $QUEUE_DB_URL
    assert done.stdout.strip() == f"opened {chosen}", done.stderr

    done = console_in(tmp_path, ["--handlers", "tasks_a", "--handlers", "tasks_b"])
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: the --handlers modules' Queues name different databases"), done.stderr


def test_concurrency_and_queues_for_the_embedded_worker_are_one_or_the_other(tmp_path, console_not_run, capsys):
    """``--worker --concurrency 3 --queues mail=1`` ran one slot and dropped the 3 without a word; the headless
    worker refuses the pair. Either alone is fine, and the default stays 2 threads."""
    assert (
        run_main(["--db", f"sqlite:///{tmp_path / 'q.db'}", "--worker", "--concurrency", "3", "--queues", "mail=1"])
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("error: give --queues or --concurrency, not both"), err
    parser_defaults = parse_args([], environ={})
    assert parser_defaults.concurrency == 2 and parser_defaults.queues is None
    assert parse_args(["--concurrency", "3"], environ={}).concurrency == 3
    assert parse_args(["--queues", "mail=1"], environ={}).queues == {"mail": 1}
