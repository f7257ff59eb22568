"""The admin CLI's bulk actions (issue 16), run as a user runs them (a real process), on both backends."""

from __future__ import annotations

import json

import pytest
from test_cli import cli  # noqa: F401 (the fixture: a real `python -m queue_core` process)

from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository


@pytest.fixture
def repo_on(db_url):
    db = open_database(db_url)
    yield JobRepository(db)
    db.close()


def fail_jobs(repo, type, n, error="card 42 declined"):
    ids = []
    for _ in range(n):
        job, _ = repo.create(type, max_retries=0)
        claimed = repo.claim("w", types=[type])
        repo.fail(job.id, error, worker_id="w", attempt=claimed.attempt)
        ids.append(job.id)
    return ids


def test_retry_query_dry_run_then_retry(cli, repo_on):  # noqa: F811
    invoices = fail_jobs(repo_on, "send-invoice", 3)
    other = fail_jobs(repo_on, "other", 1)
    out = cli("retry", "--query", "status:failed type:send-invoice", "--dry-run")
    assert out.stdout == "would retry 3 failed jobs matching status:failed type:send-invoice\n"
    assert repo_on.counts()["failed"] == 4
    out = cli("retry", "--query", "status:failed type:send-invoice")
    assert out.stdout == (
        "retried 3 of 3 failed jobs matching status:failed type:send-invoice (0 skipped: changed meanwhile)\n"
    )
    assert [repo_on.find_by_id(i).status for i in invoices] == ["pending"] * 3
    assert repo_on.find_by_id(other[0]).status == "failed"


def test_cancel_query_and_delete_query(cli, repo_on):  # noqa: F811
    for _ in range(2):
        repo_on.create("mail", queue="emails")
    kept, _ = repo_on.create("mail")
    out = cli("cancel", "--query", "queue:emails", "--dry-run")
    assert out.stdout == "would cancel 2 pending/running jobs matching queue:emails\n"
    out = cli("cancel", "--query", "queue:emails")
    assert out.stdout.startswith("cancelled 2 of 2 pending/running jobs matching queue:emails")
    assert repo_on.counts()["cancelled"] == 2
    out = cli("delete", "--query", "status:cancelled")
    assert out.stdout.startswith("deleted 2 of 2 cancelled jobs")
    assert [job.id for job in repo_on.list()] == [kept.id]


def test_a_delete_query_says_the_running_jobs_it_leaves_alone(cli, repo_on):  # noqa: F811
    """``delete --query "type:sleep" --dry-run`` with one of them running said "would delete 2 ... jobs", and
    ``--query status:running`` "would delete 0 running jobs": nothing said why the running one stays."""
    for _ in range(3):
        repo_on.create("sleep")
    repo_on.create("echo")
    running = repo_on.claim("w", types=["sleep"])
    out = cli("delete", "--query", "status:running", "--dry-run")
    assert (
        out.stdout == "would delete 0 running jobs matching status:running; delete takes no running jobs; "
        "1 running job left alone (cancel first)\n"
    )
    out = cli("delete", "--query", "type:sleep", "--dry-run")
    assert out.stdout.endswith("jobs matching type:sleep; 1 running job left alone (cancel first)\n"), out.stdout
    out = cli("delete", "--query", "type:echo", "--dry-run")  # nothing running among them: nothing said
    assert out.stdout == "would delete 1 pending/failed/completed/cancelled job matching type:echo\n"
    out = cli("delete", "--query", "type:sleep")
    assert out.stdout == (
        "deleted 2 of 2 pending/failed/completed/cancelled jobs matching type:sleep (0 skipped: changed meanwhile); "
        "1 running job left alone (cancel first)\n"
    )
    assert [job.id for job in repo_on.list(type="sleep")] == [running.id]


def test_delete_by_id_refuses_running_and_unknown_jobs(cli, repo_on):  # noqa: F811
    failed = fail_jobs(repo_on, "t", 1)[0]
    running, _ = repo_on.create("t")
    repo_on.claim("w")
    out = cli("delete", str(failed))
    assert (out.stdout, out.stderr) == (f"deleted job {failed}\n", "")  # the result on stdout, as --query's
    assert repo_on.find_by_id(failed) is None and repo_on.errors_for(failed) == []
    out = cli("delete", str(running.id), expect=2)
    assert out.stderr == f"error: cannot delete job {running.id}: it is running; cancel it first\n"
    assert cli("delete", "424242", expect=2).stderr == "error: no job with id 424242\n"
    assert repo_on.find_by_id(running.id).status == "running"


def test_every_command_writes_its_result_on_stdout_and_nothing_on_stderr(cli, repo_on):  # noqa: F811
    """Results on stdout (what a script reads or pipes on), diagnostics and errors alone on stderr: ``delete ID``
    wrote its confirmation on stderr while ``delete --query`` wrote it on stdout."""
    failed = fail_jobs(repo_on, "t", 2)
    pending, _ = repo_on.create("t")
    for args in (
        ("enqueue", "t"),
        ("list",),
        ("list", "--json"),
        ("show", str(failed[0])),
        ("stats",),
        ("retry", str(failed[0])),
        ("cancel", str(pending.id)),
        ("delete", str(pending.id)),
        ("delete", "--query", "status:failed", "--dry-run"),
        ("delete", "--query", "status:failed"),
        ("pause", "mail"),
        ("resume", "mail"),
        ("queues",),
        ("workers",),
        ("reap", "--older-than", "60"),
        ("prune", "--older-than", "86400"),
    ):
        out = cli(*args)
        assert out.stdout and out.stderr == "", (args, out.stdout, out.stderr)


def test_existing_retry_and_cancel_by_id_keep_working(cli, repo_on):  # noqa: F811
    failed = fail_jobs(repo_on, "t", 1)[0]
    assert json.loads(cli("retry", str(failed)).stdout)["status"] == "pending"
    assert json.loads(cli("cancel", str(failed)).stdout)["status"] == "cancelled"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("retry", "--query", "colour:red"), "error: query: unknown qualifier colour:"),
        (("cancel", "--query", 'error:"unclosed'), "error: query: "),
        (("delete", "--query", "status:lost", "--dry-run"), "error: query: status: is one of"),
        (("delete", "--query", "  "), "error: --query is empty: it would delete every job"),
        (("retry",), "error: retry needs a job ID or --query"),
        (("cancel", "7", "--query", "type:t"), "error: cancel takes a job ID or --query, not both"),
        (("retry", "7", "--dry-run"), "error: --dry-run goes with --query"),
        (("delete", "x"), "error: argument id: 'x' is not a job id"),
    ],
)
def test_bad_bulk_input_is_one_error_line_and_writes_nothing(cli, repo_on, args, message):  # noqa: F811
    fail_jobs(repo_on, "t", 2)
    repo_on.create("t")
    out = cli(*args, expect=2)
    assert out.stdout == "" and len(out.stderr.splitlines()) == 1 and out.stderr.startswith(message), out.stderr
    assert repo_on.counts() == {"pending": 1, "running": 0, "completed": 0, "failed": 2, "cancelled": 0}


def test_retry_and_delete_by_cause_take_that_causes_failed_jobs_only(cli, repo_on):  # noqa: F811
    declined = fail_jobs(repo_on, "charge", 2, error="card 42 declined") + fail_jobs(
        repo_on, "refund", 1, error="card 977 declined"
    )
    timeouts = fail_jobs(repo_on, "charge", 1, error="gateway timeout after 30s")
    cause = "card <n> declined"
    out = cli("retry", "--cause", cause, "--query", "type:charge", "--dry-run")
    assert out.stdout == f'would retry 2 failed jobs matching type:charge of cause "{cause}"\n'
    assert repo_on.counts()["failed"] == 4
    out = cli("retry", "--cause", cause)
    assert out.stdout == f'retried 3 of 3 failed jobs of cause "{cause}" (0 skipped: changed meanwhile)\n'
    assert [repo_on.find_by_id(i).status for i in declined] == ["pending"] * 3
    assert repo_on.find_by_id(timeouts[0]).status == "failed"
    out = cli("delete", "--cause", "gateway timeout after <n>s")
    assert out.stdout.startswith("deleted 1 of 1 failed job")
    assert repo_on.find_by_id(timeouts[0]) is None


def test_the_consoles_line_for_a_cause_does_what_the_console_did(cli, repo_on):  # noqa: F811
    import shlex

    from console.commands import bulk_lines

    ids = fail_jobs(repo_on, "charge", 2, error='no such customer "cus_81"')
    kept = fail_jobs(repo_on, "refund", 1, error='no such customer "cus_82"')
    (line,) = bulk_lines("retry", query=None, ids=ids, cause='no such customer "…"', cause_query="type:charge")
    words = shlex.split(line)
    assert words[:4] == ["python", "-m", "queue_core", "retry"]
    out = cli(*words[3:])
    assert out.stdout.startswith("retried 2 of 2 failed jobs matching type:charge of cause")
    assert [repo_on.find_by_id(i).status for i in ids] == ["pending", "pending"]
    assert repo_on.find_by_id(kept[0]).status == "failed"


def test_cancel_has_no_cause_and_says_so(db_url, capsys):
    """--cause is for retry and delete (a cause groups failed jobs); given to cancel, argparse took its value
    for the job ID and said "'x' is not a job id"."""
    from queue_core.cli.admin import main

    assert main(["--db", db_url, "cancel", "--query", "status:pending", "--cause", "card <n> declined"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cancel has no --cause: a cause groups failed jobs")
