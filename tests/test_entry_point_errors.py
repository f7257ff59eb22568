"""Every entry point (CLI, worker, server) turns bad input and an unopenable database into one line (issue 19).

The line starts with ``error:`` on stderr, the exit code is non-zero (2 for bad usage), no traceback reaches
the operator, and nothing is written.
"""

from __future__ import annotations

import contextlib
import io
import json
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from live_server import ROOT, child_env
from support import another_apps_database, table_names

from queue_core.cli import admin as cli
from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository

INT64_MAX = 2**63 - 1
MODULES = ("queue_core", "queue_core.worker", "queue_core.server")


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(list(argv))
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def run_module(module: str, *args: str, cwd=ROOT, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=cwd, env=child_env(**env), capture_output=True, text=True, timeout=60
    )


def assert_one_error_line(stderr: str, *fragments: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    for fragment in fragments:
        assert fragment in lines[0], stderr
    return lines[0]


def module_args(module: str, db_url: str) -> list[str]:
    """Arguments that make each entry point open ``db_url`` and then stop (or fail) at once."""
    return {
        "queue_core": ["--db", db_url, "list"],
        "queue_core.worker": ["--db", db_url, "--burst"],
        "queue_core.server": ["--db", db_url, "--port", "1"],  # port 1 is never reached: the open fails first
    }[module]


# --- a database that cannot be opened -------------------------------------------------------------


@pytest.fixture
def garbage_file(tmp_path):
    path = tmp_path / "notes.db"
    path.write_text("These are my notes, not a database. " * 40)
    return path


@pytest.mark.parametrize("module", MODULES)
def test_a_file_that_is_not_sqlite_is_one_error_line_and_left_untouched(garbage_file, module):
    before = garbage_file.read_bytes()
    result = run_module(module, *module_args(module, f"sqlite:///{garbage_file}"))
    assert result.returncode == 2, result.stderr
    assert_one_error_line(result.stderr, "cannot open", "notes.db", "not a database")
    assert garbage_file.read_bytes() == before
    assert sorted(p.name for p in garbage_file.parent.iterdir()) == ["notes.db"]


@pytest.fixture
def corrupt_schema_version(tmp_path):
    url = f"sqlite:///{tmp_path / 'queue.db'}"
    open_database(url).close()
    with sqlite3.connect(tmp_path / "queue.db") as conn:
        conn.execute("UPDATE queue_meta SET value = 'four' WHERE key = 'schema_version'")
    conn.close()
    return url


@pytest.mark.parametrize("module", MODULES)
def test_a_corrupt_schema_version_is_one_error_line(corrupt_schema_version, module):
    result = run_module(module, *module_args(module, corrupt_schema_version))
    assert result.returncode == 2, result.stderr
    assert_one_error_line(result.stderr, "corrupt schema_version")


# --- the admin CLI ---------------------------------------------------------------------------------


@pytest.mark.backends("sqlite")  # refused by argparse: no database is reached
@pytest.mark.parametrize(
    "args",
    [
        ["show", str(2**63)],
        ["show", str(2**64 + 7)],
        ["show", "0"],
        ["retry", str(2**63)],
        ["retry", "-1"],
        ["list", "--after", str(2**63)],
        ["list", "--after", "-1"],
        ["list", "--limit", str(2**70)],
    ],
)
def test_ids_outside_the_64_bit_range_are_usage_errors(db_url, args):
    code, out, err = run_cli(*args, "--db", db_url)
    assert code == 2 and out == ""
    assert_one_error_line(err, "argument")


def test_the_largest_id_is_accepted(db_url):
    code, _, err = run_cli("show", str(INT64_MAX), "--db", db_url)
    assert code == 2  # no such job: our own error, past argparse and through the database
    assert_one_error_line(err, f"no job with id {INT64_MAX}")
    assert run_cli("list", "--after", str(INT64_MAX), "--db", db_url)[0] == 0


def nested(depth: int) -> str:
    """A payload object holding ``depth`` containers in all, the object itself included."""
    return '{"a": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


@pytest.mark.parametrize("depth", [65, 980, 100_000])
def test_a_payload_nested_too_deep_is_refused_before_anything_is_written(db_url, depth):
    code, out, err = run_cli("enqueue", "echo", "--payload", nested(depth), "--db", db_url)
    assert code == 2 and out == ""
    assert_one_error_line(err, "nests", "64")
    assert sum(JobRepository(open_database(db_url)).counts().values()) == 0


def test_a_payload_nested_64_deep_is_accepted(db_url):
    code, out, err = run_cli("enqueue", "echo", "--payload", nested(64), "--db", db_url)
    assert code == 0, err
    assert json.loads(out)["payload"] == json.loads(nested(64))


@pytest.mark.parametrize("command", [["list"], ["list", "--json"], ["show", "1"]])
def test_a_stored_poison_payload_is_one_error_line_not_a_traceback(db_url, command):
    # A row written before payload depth was limited (or by hand): reading it back overflows the JSON decoder.
    from queue_core.store.models import bind_models

    db = open_database(db_url)
    JobRepository(db).create("echo")
    bind_models(db).Job.update(payload='{"a": ' + "[" * 5000 + "]" * 5000 + "}").execute()
    db.close()
    code, _, err = run_cli(*command, "--db", db_url)
    assert code == 1
    assert_one_error_line(err, "nested too deeply")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["show", "abc"], "not a job id"),
        (["frobnicate"], "invalid choice"),
        ([], "required"),
        (["enqueue"], "required"),
        (["list", "--status", "lost"], "invalid choice"),
    ],
)
def test_argparse_errors_start_with_error_too(args, fragment):
    code, out, err = run_cli(*args)
    assert code == 2 and out == ""
    assert_one_error_line(err, fragment)


# --- the worker ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "env", "fragments"),
    [
        (["--api", "http://127.0.0.1:9", "--token", "sécret"], {}, ("--token", "ASCII")),
        (["--api", "http://127.0.0.1:9", "--token", "a\nb"], {}, ("--token",)),
        (["--api", "http://127.0.0.1:9"], {"QUEUE_API_TOKEN": "sécret"}, ("QUEUE_API_TOKEN", "ASCII")),
        (["--api", "http://[::1"], {}, ("--api", "http://[::1")),
        (["--api", "http://127.0.0.1:99999"], {}, ("--api",)),
        (["--api", "ftp://127.0.0.1/"], {}, ("--api", "http")),
        (["--api", "127.0.0.1:8000"], {}, ("--api", "http")),
        (["--concurrency", "many"], {}, ("--concurrency",)),
        (["--bogus"], {}, ("unrecognized",)),
    ],
)
def test_worker_usage_errors_are_one_line_before_anything_connects(tmp_path, args, env, fragments):
    result = run_module("queue_core.worker", *args, "--burst", cwd=tmp_path, **env)
    assert result.returncode == 2, result.stderr
    assert_one_error_line(result.stderr, *fragments)
    assert not list(tmp_path.iterdir())  # no database opened, no file made


def test_a_usage_error_names_the_program_as_it_was_run(tmp_path):
    """``queue-worker --concurrency 0`` pointed at ``python -m queue_core.worker --help``, a command the user
    did not type; the installed script names itself, ``python -m`` names the module."""
    script = Path(sys.executable).with_name("queue-worker")
    assert script.exists(), "pip install -e . installs the queue-worker script beside this Python"
    as_script = subprocess.run([script, "--concurrency", "0"], cwd=tmp_path, capture_output=True, text=True)
    assert as_script.returncode == 2
    assert_one_error_line(as_script.stderr, "(see queue-worker --help)")
    as_module = run_module("queue_core.worker", "--concurrency", "0", cwd=tmp_path)
    assert_one_error_line(as_module.stderr, "(see python -m queue_core.worker --help)")


def test_worker_help_shows_its_defaults():
    from queue_core.worker.cli import build_parser

    text = " ".join(build_parser().format_help().split())
    assert "jobs run at once, one thread each (default 1)" in text
    assert "delete finished jobs older than S seconds" in text


# --- the server ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--port", "99999"], ("--port", "65535")),
        (["--port", "0"], ("--port", "65535")),
        (["--port", "-1"], ("--port",)),
        (["--token", "sécret"], ("--token", "ASCII")),
        (["--bogus"], ("unrecognized",)),
    ],
)
def test_server_usage_errors_are_one_line(tmp_path, args, fragments):
    # The database is a directory, which cannot be opened: were the argument accepted, the server would stop
    # there (a different error line) instead of listening.
    result = run_module("queue_core.server", "--db", f"sqlite:///{tmp_path}", *args)
    assert result.returncode == 2, result.stderr
    assert_one_error_line(result.stderr, *fragments)
    assert not list(tmp_path.iterdir())


def test_server_refuses_a_non_ascii_token_from_the_environment(tmp_path):
    result = run_module("queue_core.server", "--db", f"sqlite:///{tmp_path}", QUEUE_API_TOKEN="sécret")
    assert result.returncode == 2, result.stderr
    assert_one_error_line(result.stderr, "QUEUE_API_TOKEN", "ASCII")


@pytest.mark.parametrize("command", [["show", "1"], ["list", "--json"]])
def test_a_payload_holding_a_lone_surrogate_is_shown_escaped_not_a_traceback(db_url, command):
    # JSON allows "\ud800" and the payload keeps it, but no UTF-8 output can write it as it is.
    db = open_database(db_url)
    JobRepository(db).create("echo", {"a": "\ud800"})
    db.close()
    done = run_module("queue_core", "--db", db_url, *command)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "\\ud800" in done.stdout
    if command[-1] == "--json":
        assert json.loads(done.stdout)["payload"] == {"a": "\ud800"}  # the escape is JSON's own


def test_a_server_port_in_use_is_one_error_line(db_url):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_module("queue_core.server", "--db", db_url, "--port", str(port))
    assert done.returncode == 2  # uvicorn's own: its log lines, then exit 3
    assert_one_error_line(done.stderr, f"cannot listen on 127.0.0.1:{port}", "choose another --port")


def test_a_server_host_that_is_no_address_is_one_error_line(db_url):
    done = run_module("queue_core.server", "--db", db_url, "--host", "no-such-host.invalid", "--insecure")
    assert done.returncode == 2
    assert_one_error_line(done.stderr, "cannot listen on no-such-host.invalid")


@pytest.mark.parametrize("command", [["list"], ["show", "1"], ["stats"], ["workers"], ["retry", "1"]])
def test_a_command_other_than_enqueue_refuses_a_sqlite_file_that_is_not_there(tmp_path, command):
    # A mistyped path showed an empty queue, exited 0 and left a new file behind.
    missing = tmp_path / "mistyped.db"
    code, out, err = run_cli("--db", f"sqlite:///{missing}", *command)
    assert code == 2 and out == ""
    assert_one_error_line(err, f"no database at {missing}", "--db")
    assert not missing.exists()


@pytest.mark.parametrize("command", [["list"], ["stats"], ["retry", "1"]])
def test_a_command_other_than_enqueue_refuses_a_database_without_queue_tables(db_url, tmp_path, command):
    # Pointed at another application's database (a wrong --db), a read made the queue's tables in it.
    url = another_apps_database(db_url, tmp_path)

    code, out, err = run_cli("--db", url, *command)

    assert code == 2 and out == ""
    assert_one_error_line(err, "no queue tables in", "--db", "migrate, enqueue or a worker makes them")
    assert table_names(url) == ["users"]
    if url.startswith("sqlite"):  # not even its journal mode changed (WAL would persist in the file)
        with contextlib.closing(sqlite3.connect(tmp_path / "app.db")) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert run_cli("--db", url, "enqueue", "echo")[0] == 0  # enqueue makes them, beside the other tables
    assert "jobs" in table_names(url) and run_cli("--db", url, "stats")[0] == 0


def test_enqueue_makes_a_new_sqlite_file(tmp_path):
    new = tmp_path / "new.db"
    code, _, err = run_cli("--db", f"sqlite:///{new}", "enqueue", "echo")
    assert code == 0, err
    assert new.exists() and run_cli("--db", f"sqlite:///{new}", "list")[0] == 0
