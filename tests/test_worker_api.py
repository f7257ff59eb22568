"""``python -m queue_core.worker --api URL``: the same worker loop, claiming over HTTP from a real server."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from live_server import LiveServer, child_env, free_port, run_module

from queue_core.client import HttpQueue
from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository

FAST = ["--poll-interval", "0.02", "--max-poll-interval", "0.1"]


def run_worker(cwd, *args: str, **env: str):
    return run_module("queue_core.worker", *args, cwd=cwd, **env)


def test_a_burst_worker_over_the_api_drains_the_queue(db_url, tmp_path):
    workdir = tmp_path / "worker"
    workdir.mkdir()
    with LiveServer(db_url, "--token", "t0k") as server:
        with HttpQueue(server.url, token="t0k") as queue:
            ids = [queue.create("echo", {"i": i})[0].id for i in range(30)]
            doomed, _ = queue.create("fail", {"error": "card declined"}, max_retries=1, retry_backoff=0)
        result = run_worker(
            workdir, "--api", server.url, "--burst", "--worker-id", "remote-1", "--concurrency", "3", *FAST,
            QUEUE_API_TOKEN="t0k",
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
    repo = JobRepository(open_database(db_url))
    assert repo.counts() == {"pending": 0, "running": 0, "completed": 30, "failed": 1, "cancelled": 0}
    assert {repo.find_by_id(job_id).worker_id for job_id in ids} == {"remote-1"}
    assert [e.error for e in repo.errors_for(doomed.id)] == ["card declined", "card declined"]
    assert " ERROR " not in result.stderr, result.stderr
    assert not list(workdir.iterdir()), "an --api worker must not open a database of its own"


def test_a_burst_whose_server_goes_away_gives_up_after_stale_after_with_exit_1(db_url, tmp_path):
    # Regression: a burst worker (cron, CI) whose queue went away mid-run retried its claims for ever.
    repo = JobRepository(open_database(db_url))
    with LiveServer(db_url) as server:
        job, _ = repo.create("sleep", {"seconds": 1})
        command = [sys.executable, "-m", "queue_core.worker", "--api", server.url, "--burst", "--stale-after", "1"]
        worker = subprocess.Popen(
            [*command, *FAST], cwd=tmp_path, env=child_env(), stderr=subprocess.PIPE, text=True
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 30
            while repo.find_by_id(job.id).status != "running" and time.monotonic() < deadline:
                time.sleep(0.02)
            assert repo.find_by_id(job.id).status == "running"
        except BaseException:
            worker.kill()
            raise
    # The server is gone while the job runs: its completion and every claim after it fail.
    _, stderr = worker.communicate(timeout=60)
    assert worker.returncode == 1, stderr
    print(stderr)
    *logged, last = stderr.splitlines()
    assert last.startswith("error: gave up on the burst: every claim failed for 1s (the stale-after time), the last")
    assert "Traceback" not in stderr and any(" stopped worker=" in line for line in logged), stderr
    assert repo.find_by_id(job.id).status == "running"  # its outcome unwritten: the reaper's, to run again


def test_token_flag_is_passed_to_the_server(db_url, tmp_path):
    with LiveServer(db_url, "--token", "flag-token") as server:
        with HttpQueue(server.url, token="flag-token") as queue:
            job, _ = queue.create("echo", {"hello": "api"})
        result = run_worker(tmp_path, "--api", server.url, "--token", "flag-token", "--burst", *FAST)
        assert result.returncode == 0, result.stderr
    assert JobRepository(open_database(db_url)).find_by_id(job.id).status == "completed"


@pytest.mark.parametrize("token", [None, "wrong"])
def test_a_refused_token_is_one_line_and_exit_2(db_url, tmp_path, token):
    with LiveServer(db_url, "--token", "right") as server:
        result = run_worker(tmp_path, "--api", server.url, "--burst", *(["--token", token] if token else []))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    # Regression: with no token at all it said "refused the token", and neither said which token to give.
    if token is None:
        assert result.stderr.startswith("error: the queue API needs a token and none was sent: give the server's")
    else:
        assert result.stderr.startswith("error: the queue API refused the token: it is not the server's --token")
    assert "$QUEUE_API_TOKEN" in result.stderr


def test_a_read_only_token_is_one_line_and_exit_2(db_url, tmp_path):
    # Regression: the start-up check read /stats, which the read token may do; the worker then got a 403
    # on every claim and never exited, even with --burst.
    with LiveServer(db_url, "--token", "s3cret", "--read-token", "r34d") as server:
        result = run_worker(tmp_path, "--api", server.url, "--token", "r34d", "--burst")
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: the token is read-only: a worker needs the write token"), result.stderr


def test_an_unreachable_api_is_one_line_and_exit_2(tmp_path):
    result = run_worker(tmp_path, "--api", f"http://127.0.0.1:{free_port()}", "--burst")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: cannot reach the queue API")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--api", "http://127.0.0.1:9", "--db", "sqlite:///x.db"], "not both"),
        (["--token", "t"], "--token is for --api"),
        (["--api", "http://127.0.0.1:9", "--prune-after", "60"], "--prune-after needs --db"),
        (
            ["--api", "http://127.0.0.1:9", "--poll-interval", "5", "--max-poll-interval", "1"],
            "error: --max-poll-interval: 1s is shorter than --poll-interval (5s)",
        ),
    ],
)
def test_conflicting_options_are_refused(tmp_path, args, message):
    result = run_worker(tmp_path, *args, "--burst")
    assert result.returncode == 2 and message in result.stderr
    assert result.stderr.count("\n") == 1


def test_heartbeats_over_the_api_keep_a_long_job_from_being_reaped(db_url, tmp_path):
    # stale after 1 s, the job runs 2 s: only heartbeats (every 1/3 s, over HTTP) keep its claim alive,
    # while the worker's own reaper, also over HTTP, runs every 0.5 s.
    with LiveServer(db_url) as server:
        with HttpQueue(server.url) as queue:
            job, _ = queue.create("sleep", {"seconds": 2})
        result = run_worker(tmp_path, "--api", server.url, "--burst", "--stale-after", "1", *FAST)
        assert result.returncode == 0, result.stderr
    after = JobRepository(open_database(db_url)).find_by_id(job.id)
    assert (after.status, after.retry_count) == ("completed", 0)
    assert after.heartbeat_at is not None and after.heartbeat_at > after.claimed_at


def test_https_to_the_plain_http_server_says_to_give_an_http_address(db_url, tmp_path):
    # Regression: the one line was OpenSSL's "[SSL: WRONG_VERSION_NUMBER] wrong version number", no hint.
    with LiveServer(db_url) as server:
        https = server.url.replace("http://", "https://", 1)
        result = run_worker(tmp_path, "--api", https, "--burst")
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"error: cannot reach the queue API at {https}: "), result.stderr
    assert result.stderr.rstrip().endswith(
        "the server answered in plain HTTP: give an http:// address, or put TLS in front of it"
    )
