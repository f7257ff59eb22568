"""The admin CLI, run as a user runs it: a real process, JSON out, one-line errors and exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def cli(db_url, tmp_path):
    def run(*args, expect=0):
        env = {**os.environ, "QUEUE_DB_URL": db_url, "PYTHONPATH": str(ROOT)}
        out = subprocess.run(
            [sys.executable, "-m", "queue_core", *args], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert out.returncode == expect, (out.stdout, out.stderr)
        return out

    return run


def test_enqueue_show_list_stats(cli):
    job = json.loads(cli("enqueue", "echo", "--payload", '{"msg": "hi"}', "--priority", "high").stdout)
    assert job["type"] == "echo" and job["payload"] == {"msg": "hi"} and job["priority"] == 20
    assert job["priority_label"] == "high" and job["status"] == "pending"

    shown = json.loads(cli("show", str(job["id"])).stdout)
    assert shown["id"] == job["id"] and shown["errors"] == []

    table = cli("list", "--status", "pending").stdout.splitlines()
    assert table[0].split()[:4] == ["ID", "TYPE", "PRIORITY", "STATUS"]
    assert table[1].split()[:4] == [str(job["id"]), "echo", "high", "pending"]

    stats = json.loads(cli("stats").stdout)
    assert stats["counts"]["pending"] == 1


def test_idempotent_enqueue_says_nothing_new(cli):
    first = json.loads(cli("enqueue", "echo", "--idempotency-key", "k").stdout)
    out = cli("enqueue", "echo", "--idempotency-key", "k")
    assert json.loads(out.stdout)["id"] == first["id"]
    assert "already exists" in out.stderr
    assert len(cli("list", "--json").stdout.splitlines()) == 1


def test_retry_and_reap(cli, db_url):
    from queue_core.store.database import open_database
    from queue_core.store.repository import JobRepository

    repo = JobRepository(open_database(db_url))
    job, _ = repo.create("t", max_retries=0)
    repo.claim("w")
    repo.fail(job.id, "boom")
    assert json.loads(cli("retry", str(job.id)).stdout)["status"] == "pending"
    err = cli("retry", str(job.id), expect=2).stderr
    assert "only failed or cancelled jobs" in err
    repo.claim("w")
    assert json.loads(cli("reap", "--older-than", "0").stdout) == {"reaped": 1}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["enqueue", "echo", "--payload", "{not json"], "not valid JSON"),
        (["enqueue", "echo", "--payload", "[1]"], "JSON object"),
        (["enqueue", "echo", "--priority", "urgent"], "priority"),
        (["enqueue", "echo", "--max-retries", "-1"], "max_retries"),
        (["enqueue", ""], "type"),
        (["show", "999"], "no job with id 999"),
        (["retry", "999"], "no job with id 999"),  # as show, cancel and delete say it (was "no such job")
        (["cancel", "999"], "no job with id 999"),
        (["delete", "999"], "no job with id 999"),
        (["show", "abc"], "not a job id"),
        (["reap", "--older-than", "-5"], "seconds"),
        (["enqueue", "echo", "--delay", "1e300"], "seconds"),
        (["reap", "--older-than", "1e12"], "seconds"),
        (["list", "--limit", "0"], "limit"),
        (["frobnicate"], "invalid choice"),
        (["--db", "mysql://x/y", "stats"], "unsupported database URL"),
        (["stats", "--db", "mysql://x/y"], "unsupported database URL"),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_2(cli, args, message):
    out = cli(*args, expect=2)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], out.stderr
    assert "Traceback" not in out.stderr
    assert cli("list", "--json").stdout == ""  # nothing written


@pytest.mark.backends("sqlite")  # argparse's, before any database is opened
@pytest.mark.parametrize(
    ("args", "command"),
    [(["show", "1", "2"], "show"), (["workers", "--json", "x"], "workers"), (["stats", "--json"], "stats")],
)
def test_a_stray_argument_points_at_its_commands_help(cli, args, command):
    # It pointed at `python -m queue_core --help`, which lists the commands but none of their options.
    out = cli(*args, expect=2)
    [line] = out.stderr.splitlines()
    assert line.startswith("error: unrecognized arguments: ") and line.endswith(
        f"(see python -m queue_core {command} --help)"
    )


def test_every_option_of_every_command_says_what_it_is_in_help():
    """``--help`` is how an operator learns a command: an option listed with no words (``--max-retries``,
    ``--status``, ``prune --older-than``, ``show``'s id) said neither what it does nor its default."""
    import argparse

    from queue_core.cli.admin import COMMANDS, build_parser

    [commands] = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(commands.choices) == set(COMMANDS)
    silent = [
        f"{name} {action.dest}"
        for name, command in commands.choices.items()
        for action in command._actions
        if action.help is None and not isinstance(action, argparse._HelpAction)
    ]
    assert silent == []
    enqueue = " ".join(commands.choices["enqueue"].format_help().split())
    assert "else 3)" in enqueue and "else low)" in enqueue and "(default 0)" in enqueue


def test_a_database_error_mid_command_is_one_line_and_exit_1(db_url, monkeypatch, capsys):
    import peewee as pw

    from queue_core.cli import admin as cli

    def broken(*args, **kwargs):
        raise pw.OperationalError("disk I/O error")

    monkeypatch.setattr(cli.JobRepository, "counts", broken)
    assert cli.main(["--db", db_url, "stats"]) == 1
    err = capsys.readouterr().err
    assert err == "error: database error: disk I/O error\n"


@pytest.mark.backends("sqlite")
@pytest.mark.parametrize("args", [["pause", "mail"], ["enqueue", "t"], ["prune", "--older-than", "0"]])
def test_a_locked_sqlite_database_says_what_holds_it_and_what_to_do(cli, db_url, args):
    """Another process holding the write lock past the busy timeout: "database is locked" alone said neither
    why nor what to do. One line, exit 1 (the input was fine; running again may work), no traceback."""
    import sqlite3

    holder = sqlite3.connect(db_url.removeprefix("sqlite:///"), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # what a long write transaction of a worker or the console holds
    try:
        out = cli("--db", f"{db_url}?busy_timeout=10", *args, expect=1)
    finally:
        holder.rollback()
        holder.close()
    [line] = out.stderr.splitlines()
    assert line.startswith(f"error: {db_url}?busy_timeout=10 is locked: another process") and "0.01 s" in line
    assert "nothing was changed" in line and f"--db '{db_url}?busy_timeout=60000'" in line
    assert out.stdout == "" and "Traceback" not in out.stderr
    assert cli("list", "--json").stdout == "" and cli("queues", "--json").stdout == ""  # nothing written


@pytest.mark.backends("sqlite")
def test_a_database_locked_while_it_opens_says_what_to_do_too(db_url, monkeypatch, capsys):
    # A migration on open waits for the write lock as a command does: the same advice, exit 1.
    import peewee as pw

    from queue_core.cli import admin as cli
    from queue_core.errors import DatabaseURLError

    def locked(url, **options):
        raise DatabaseURLError(f"cannot open {url}: database is locked") from pw.OperationalError("database is locked")

    monkeypatch.setattr(cli, "open_for_command", locked)
    assert cli.main(["--db", db_url, "stats"]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: {db_url} is locked: another process") and "busy_timeout=60000" in line


@pytest.mark.backends("sqlite")
def test_a_read_only_sqlite_file_says_which_file_and_what_to_do(db_url, monkeypatch, capsys):
    """SQLite's "attempt to write a readonly database" (a file, or its folder, the user cannot write) named
    neither the file nor the fix. One line naming both, exit 1, at the open (a migration writes) and after it."""
    import peewee as pw

    from queue_core.cli import admin as cli
    from queue_core.errors import DatabaseURLError

    path = db_url.removeprefix("sqlite:///")
    readonly = pw.OperationalError("attempt to write a readonly database")

    def refuse(*args, **kwargs):
        raise readonly

    monkeypatch.setattr(cli.JobRepository, "create", refuse)
    assert cli.main(["--db", db_url, "enqueue", "echo"]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: cannot write {db_url}: the file {path}, or the folder it is in"), line
    assert f"{path}-wal" in line and "nothing was changed" in line and "write access" in line

    def refuse_open(url, **options):
        raise DatabaseURLError(f"cannot open {url}: attempt to write a readonly database") from readonly

    monkeypatch.setattr(cli, "open_for_command", refuse_open)
    assert cli.main(["--db", db_url, "stats"]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: cannot write {db_url}: the file {path}"), line


@pytest.mark.backends("postgresql")
@pytest.mark.parametrize("where", ["user:password@", "?password="])
def test_stats_and_migrate_never_print_the_password(cli, db_url, where):
    assert "@" in db_url and "?" in db_url
    if where == "?password=":
        with_password = db_url.replace("?", "?password=s3cret&", 1)
    else:
        with_password = db_url.replace("@", ":s3cret@", 1)  # trust auth on the test server ignores it
    out = cli("--db", with_password, "stats")
    assert "s3cret" not in out.stdout and json.loads(out.stdout)["db"]
    out = cli("--db", with_password, "migrate")
    assert "s3cret" not in out.stdout + out.stderr and out.stdout


def test_a_reader_that_closes_the_pipe_early_ends_the_listing_quietly(db_url, worker_env):
    """``list --json | head -c 10``: exit 141 as any Unix tool, and no BrokenPipeError traceback."""
    from queue_core.store.database import open_database
    from queue_core.store.repository import JobRepository

    JobRepository(open_database(db_url)).create_many([{"type": "t", "payload": {"x": "y" * 200}}] * 2000)
    command = [sys.executable, "-m", "queue_core", "--db", db_url, "list", "--limit", "1000", "--json"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=worker_env)
    assert process.stdout.read(10).startswith(b"{")
    process.stdout.close()  # the reader goes away with most of the listing unread
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=60) == 141 and stderr == ""


def test_ctrl_c_before_the_program_handles_it_is_exit_130_without_a_traceback(capsys):
    from queue_core.cli.args import exit_with

    def interrupted() -> int:
        raise KeyboardInterrupt  # e.g. while --handlers modules import

    with pytest.raises(SystemExit) as info:
        exit_with(interrupted)
    assert info.value.code == 130 and "Traceback" not in capsys.readouterr().err


def test_reap_lost_takes_back_a_lost_workers_jobs_and_reap_needs_one_of_its_options(cli, db_url):
    from queue_core.store.database import open_database
    from queue_core.store.repository import JobRepository

    repo = JobRepository(open_database(db_url))
    job, _ = repo.create("t")
    repo.register_worker("gone", host="h", pid=1, queues=None, concurrency=1, stale_after=0.001)
    repo.claim("gone")
    out = cli("reap", "--lost")
    assert json.loads(out.stdout) == {"reaped": 1, "lost_workers": {"gone": 1}}
    assert repo.find_by_id(job.id).status == "pending"
    assert json.loads(cli("reap", "--older-than", "60").stdout) == {"reaped": 0}
    refused = cli("reap", expect=2)
    assert refused.stderr.startswith("error: reap needs --older-than SECONDS, --lost")


def test_enqueue_with_handlers_applies_the_tasks_defaults_and_checks_its_arguments(cli, tmp_path):
    (tmp_path / "cli_tasks.py").write_text(
        "from queue_core import Queue\n"
        "queue = Queue()\n"
        "@queue.task('send-invoice', queue='mail', priority='high', max_retries=5, timeout=30, retry_backoff=2)\n"
        "def send_invoice(invoice_id: int, copies: int = 1) -> None:\n"
        "    pass\n"
    )
    task = ("enqueue", "send-invoice", "--handlers", "cli_tasks", "--payload")
    job = json.loads(cli(*task, '{"invoice_id": 7}').stdout)
    shown = ("queue", "priority", "max_retries", "timeout", "retry_backoff")
    assert [job[name] for name in shown] == ["mail", 20, 5, 30, 2]
    overridden = json.loads(cli(*task, '{"invoice_id": 8}', "--queue", "urgent", "--priority", "low").stdout)
    assert [overridden[name] for name in shown] == ["urgent", 0, 5, 30, 2]
    unknown = cli(*task, '{"invoice": 7}', expect=2)
    assert "invoice: unknown argument for task 'send-invoice'" in unknown.stderr
    typo = cli("enqueue", "send-invoices", "--handlers", "cli_tasks", expect=2)
    assert "no task or handler of type 'send-invoices' in cli_tasks" in typo.stderr
    # Without --handlers the CLI cannot know the task: its own defaults, as enqueue --help says.
    plain = json.loads(cli("enqueue", "send-invoice", "--payload", '{"invoice_id": 9}').stdout)
    assert [plain[name] for name in shown[:3]] == ["default", 0, 3]
    assert "apply only when its module is given with --handlers" in " ".join(cli("enqueue", "--help").stdout.split())
    listed = [json.loads(line)["id"] for line in cli("list", "--json").stdout.splitlines()]
    assert len(listed) == 3  # the refused ones wrote nothing


def test_list_escapes_control_characters_in_a_jobs_error_text(cli, db_url):
    """An error text sent by a handler or an API client reached the terminal raw in ``list``: an escape
    sequence coloured (or hid) the rows after it, a bidi override reordered them. Cells are escaped as error
    lines are; ``--json`` keeps the text as it is (JSON escapes what it must)."""
    from queue_core.store.database import open_database
    from queue_core.store.repository import JobRepository

    repo = JobRepository(open_database(db_url))
    job, _ = repo.create("t", max_retries=0)
    repo.claim("w")
    hostile = "\u202e\x1b[31mred\x07 text"
    repo.fail(job.id, hostile)

    table = cli("list").stdout
    assert "\x1b" not in table and "\u202e" not in table and "\x07" not in table
    assert "\\u202e\\x1b[31mred\\x07 text" in table.splitlines()[1]
    assert json.loads(cli("list", "--json").stdout.splitlines()[0])["error"] == hostile


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_json_output_stays_json_on_a_stdout_that_cannot_write_every_character(db_url, tmp_path, encoding):
    # The stream's backslashreplace wrote "ë" as \xeb on such a stdout: not JSON, and a reader refused it.
    payload = {"name": "Zoë ✓ 😀"}
    env = {**os.environ, "QUEUE_DB_URL": db_url, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": encoding}

    def run(*args) -> bytes:
        done = subprocess.run([sys.executable, "-m", "queue_core", *args], cwd=tmp_path, env=env, capture_output=True)
        assert done.returncode == 0, done.stderr
        return done.stdout

    created = run("enqueue", "echo", "--payload", json.dumps(payload))
    job_id = json.loads(created)["id"]
    listed = run("list", "--json").decode("ascii").splitlines()
    for text in (created.decode("ascii"), run("show", str(job_id)).decode("ascii"), *listed):
        assert json.loads(text)["payload"] == payload
