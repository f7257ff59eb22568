"""Ids and counts on a command line are ASCII digits: Python's int() also takes ``１`` (full-width), ``٣``
(Arabic-Indic), ``1_000``, ``+1`` and `` 1``, so ``cancel １`` cancelled job 1. Each is now one ``error:``
line saying what to pass, exit 2 as argparse's errors, and nothing written."""

from __future__ import annotations

import pytest

from queue_core.cli import admin
from queue_core.server import cli as server_cli
from queue_core.worker import cli as worker_cli

NOT_ASCII_DIGITS = ["１", "٣", "1_000", "+1", " 1", "1 "]


def one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert captured.out == "" and len(lines) == 1 and lines[0].startswith("error: "), captured
    assert "Traceback" not in captured.err
    return lines[0]


def exit_status(main, argv) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's usage errors exit; the command's own return
        return exc.code


def everything(repo) -> list:
    return [job.to_dict() for job in repo.list(limit=1000)]


@pytest.mark.parametrize("text", NOT_ASCII_DIGITS)
@pytest.mark.parametrize("command", ["show", "retry", "cancel", "delete", "list --after"])
def test_a_job_id_not_in_ascii_digits_is_a_usage_error_and_touches_nothing(repo, db_url, capsys, command, text):
    job, _ = repo.create("t", max_retries=0)
    claimed = repo.claim("w")
    repo.fail(job.id, "boom", worker_id="w", attempt=claimed.attempt)  # failed: retry and delete would act
    other, _ = repo.create("t")  # pending: cancel would act
    assert (job.id, other.id) == (1, 2)
    before = everything(repo)
    argv = ["--db", db_url, *command.split(), text]
    assert exit_status(admin.main, argv) == 2
    line = one_error_line(capsys)
    assert f"{text!r} is not a job id: pass its number in ASCII digits 0-9, e.g. 42" in line
    assert everything(repo) == before


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["list", "--limit", "1_0"], "argument --limit: '1_0' is not a whole number (ASCII digits 0-9)"),
        (["list", "--limit", "５"], "argument --limit: '５' is not a whole number (ASCII digits 0-9)"),
        (["enqueue", "t", "--max-retries", "１"], "argument --max-retries: '１' is not a whole number (ASCII digits"),
        (["enqueue", "t", "--max-retries", "1_0"], "argument --max-retries: '1_0' is not a whole number (ASCII"),
        (["enqueue", "t", "--priority", "１"], "priority: unknown priority '１'"),
        (["enqueue", "t", "--priority", "1_0"], "priority: unknown priority '1_0'"),
    ],
)
def test_counts_and_priorities_not_in_ascii_digits_are_refused_and_nothing_is_enqueued(
    repo, db_url, capsys, argv, message
):
    assert exit_status(admin.main, ["--db", db_url, *argv]) == 2
    assert message in one_error_line(capsys)
    assert everything(repo) == []


def test_ascii_digits_still_work(repo, db_url, capsys):
    argv = ["--db", db_url, "enqueue", "t", "--max-retries", "007", "--priority", " -5 "]
    assert exit_status(admin.main, argv) == 0
    (job,) = repo.list()
    assert (job.max_retries, job.priority) == (7, -5)
    assert exit_status(admin.main, ["--db", db_url, "show", "01"]) == 0
    assert '"id": 1' in capsys.readouterr().out
    assert exit_status(admin.main, ["--db", db_url, "show", "-1"]) == 2
    assert "'-1' must be a job id from 1 to" in one_error_line(capsys)  # refused by its range, not its form


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--port", "8_000"], "argument --port: '8_000' is not a port number (ASCII digits 0-9)"),
        (["--port", "８０００"], "argument --port: '８０００' is not a port number"),
        (["--max-body-bytes", "1_048_576"], "argument --max-body-bytes: '1_048_576' is not a whole number (ASCII"),
    ],
)
def test_the_servers_numbers_are_ascii_digits(capsys, argv, message):
    with pytest.raises(SystemExit) as exited:
        server_cli.build_parser().parse_args(argv)
    assert exited.value.code == 2 and message in one_error_line(capsys)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--concurrency", "４"], "argument --concurrency: '４' is not a whole number (ASCII digits 0-9)"),
        (["--processes", "1_0"], "argument --processes: '1_0' is not a whole number (ASCII digits 0-9)"),
        (["--queues", "mail=２"], "'２' is not a whole number (ASCII digits 0-9)"),
        (["--metrics-port", "9_100"], "argument --metrics-port: '9_100' is not a TCP port number (ASCII digits"),
    ],
)
def test_the_workers_numbers_are_ascii_digits(capsys, argv, message):
    with pytest.raises(SystemExit) as exited:
        worker_cli.build_parser().parse_args(argv)
    assert exited.value.code == 2 and message in one_error_line(capsys)


@pytest.mark.parametrize("text", ["１", "1_0", "inf", "nan", " 1", "0x10"])
@pytest.mark.parametrize("option", ["--poll-interval", "--stale-after", "--shutdown-timeout", "--prune-after"])
def test_the_workers_seconds_are_ascii_digits(capsys, option, text):
    with pytest.raises(SystemExit) as exited:
        worker_cli.build_parser().parse_args([option, text])
    assert exited.value.code == 2 and f"argument {option}: {text!r} " in one_error_line(capsys)


@pytest.mark.parametrize("argv", [["enqueue", "t", "--delay", "１"], ["enqueue", "t", "--timeout", "1_0"]])
def test_seconds_not_in_ascii_digits_enqueue_nothing(repo, db_url, capsys, argv):
    assert exit_status(admin.main, ["--db", db_url, *argv]) == 2
    assert "is not a number of seconds" in one_error_line(capsys)
    assert everything(repo) == []


def test_seconds_in_ascii_still_work(repo, db_url, capsys):
    argv = ["--db", db_url, "enqueue", "t", "--delay", "1.5e2", "--timeout", ".5"]
    assert exit_status(admin.main, argv) == 0
    (job,) = repo.list()
    assert job.timeout == 0.5 and (job.run_at - job.created_at).total_seconds() == pytest.approx(150, abs=1)
    assert worker_cli.build_parser().parse_args(["--stale-after", "30", "--shutdown-timeout", "0"]).stale_after == 30
