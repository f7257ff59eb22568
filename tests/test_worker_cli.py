"""``python -m queue_core.worker`` as operators run it: real processes, real signals, real crashes."""

from __future__ import annotations

import json
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import peewee as pw
import pytest
import worker_handlers

from queue_core.validation import MAX_TYPES

WAIT = 60  # seconds to wait for something that should happen far sooner; only a guard against hangs


class WorkerProcess:
    def __init__(self, args, env, cwd, log_path, **popen):
        self.log_path = log_path
        with open(log_path, "w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "queue_core.worker", *args], cwd=cwd, env=env, stdout=log, stderr=log, **popen
            )

    def log(self) -> str:
        return self.log_path.read_text()

    def signal(self, sig) -> None:
        self.proc.send_signal(sig)

    def wait(self, timeout=WAIT) -> int:
        return self.proc.wait(timeout)


def wait_until(predicate, what: str, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


@pytest.fixture
def start_worker(worker_env, tmp_path):
    """Start ``python -m queue_core.worker`` with the test handlers and fast polling; killed at teardown."""
    started = []

    def start(*args, worker_id="w1", handlers=("worker_handlers",), **popen):
        options = ["--worker-id", worker_id, "--poll-interval", "0.02", "--max-poll-interval", "0.1"]
        for module in handlers:
            options += ["--handlers", module]
        process = WorkerProcess([*options, *args], worker_env, tmp_path, tmp_path / f"{worker_id}.log", **popen)
        started.append(process)
        return process

    yield start
    for process in started:
        if process.proc.poll() is None:
            process.proc.kill()
            process.proc.wait()


def run_worker(worker_env, tmp_path, *args):
    return subprocess.run(
        [sys.executable, "-m", "queue_core.worker", *args],
        cwd=tmp_path,
        env=worker_env,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )


def running_on(repo, job_id, worker_id):
    def check():
        job = repo.find_by_id(job_id)
        return job.status == "running" and job.worker_id == worker_id

    return check


# --- must hold --------------------------------------------------------------------------------------


def test_burst_workers_run_each_job_exactly_once(db, db_url, live_repo, start_worker):
    # PostgreSQL is where many hosts share one queue: 8 processes over 5,000 jobs there, 4 over 2,000 on SQLite.
    processes, count = (8, 5000) if db_url.startswith("postgresql") else (4, 2000)
    worker_handlers.create_table(db_url)
    with db.atomic():
        ids = [live_repo.create("record", {"i": i})[0].id for i in range(count)]

    # Two slots each: claims for several free slots and batched completions are what the race exercises.
    workers = [start_worker("--burst", "--concurrency", "2", worker_id=f"w{i}") for i in range(processes)]

    for process in workers:
        assert process.wait(300) == 0, process.log()
    assert live_repo.counts() == {"pending": 0, "running": 0, "completed": count, "failed": 0, "cancelled": 0}
    runs = db.execute_sql("SELECT job_id, COUNT(*), MIN(worker_id) FROM test_executions GROUP BY job_id").fetchall()
    assert sorted(job_id for job_id, _, _ in runs) == ids
    assert {count for _, count, _ in runs} == {1}
    # The worker that ran each job is the one that completed it.
    finished_by = dict(db.execute_sql("SELECT id, worker_id FROM jobs").fetchall())
    assert all(finished_by[job_id] == worker for job_id, _, worker in runs)
    for process in workers:
        assert " ERROR " not in process.log() and "lost job=" not in process.log()


def test_a_job_of_a_killed_worker_is_reaped_and_completed_by_another(live_repo, start_worker):
    job, _ = live_repo.create("sleep", {"seconds": 1.5})
    doomed = start_worker(worker_id="doomed")
    wait_until(running_on(live_repo, job.id, "doomed"), "the first worker to claim the job")
    doomed.proc.kill()  # SIGKILL: no release, no goodbye
    doomed.wait()
    assert live_repo.find_by_id(job.id).status == "running"

    rescuer = start_worker("--stale-after", "1", worker_id="rescuer")
    wait_until(lambda: live_repo.find_by_id(job.id).status == "completed", "the job to complete")
    rescuer.signal(signal.SIGTERM)
    assert rescuer.wait() == 0

    after = live_repo.find_by_id(job.id)
    assert (after.retry_count, after.worker_id) == (1, "rescuer")
    [lost] = live_repo.errors_for(job.id)
    assert lost.attempt == 1 and lost.worker_id == "doomed" and "doomed lost its claim" in lost.error
    assert live_repo.counts() == {"pending": 0, "running": 0, "completed": 1, "failed": 0, "cancelled": 0}
    assert "reaped 1 stale job(s)" in rescuer.log()
    assert f"completed job={job.id} type=sleep attempt=2 worker=rescuer" in rescuer.log()


def test_sigterm_during_a_job_lets_it_complete_and_exits_0(live_repo, start_worker, tmp_path):
    started = tmp_path / "started"
    job, _ = live_repo.create("marked_sleep", {"seconds": 1.5, "started": str(started)}, priority="high")
    later, _ = live_repo.create("echo")
    worker = start_worker()
    wait_until(started.exists, "the job's handler to start")

    worker.signal(signal.SIGTERM)

    assert worker.wait() == 0
    assert live_repo.find_by_id(job.id).status == "completed"
    assert live_repo.find_by_id(later.id).status == "pending"  # no claims after the signal
    log = worker.log()
    assert "SIGTERM received: stopping" in log
    assert log.index("SIGTERM received") < log.index(f"completed job={job.id}") < log.index("stopped worker=w1")


@pytest.mark.parametrize("how", ["second signal", "shutdown timeout"])
def test_jobs_still_running_at_shutdown_are_released_without_a_retry(live_repo, start_worker, how, tmp_path):
    started = tmp_path / "started"
    job, _ = live_repo.create("marked_sleep", {"seconds": 120, "started": str(started)})
    worker = start_worker("--shutdown-timeout", "120" if how == "second signal" else "0.2")
    # Not the row's "running": a signal between the claim's commit and the worker taking the job in hand
    # gives the job back unstarted ("claimed while the worker was stopping"), which is right but not this test.
    wait_until(started.exists, "the job's handler to start")

    worker.signal(signal.SIGINT)
    if how == "second signal":
        wait_until(lambda: "SIGINT received: stopping" in worker.log(), "the first signal to be handled")
        worker.signal(signal.SIGTERM)

    assert worker.wait() == 0
    after = live_repo.find_by_id(job.id)
    assert (after.status, after.retry_count, after.worker_id) == ("pending", 0, None)
    assert f"released job={job.id} type=marked_sleep attempt=1 worker=w1" in worker.log()
    if how == "second signal":
        assert "released by a second stop request" in worker.log() and "(120s)" not in worker.log()
    else:
        assert "still running after the shutdown timeout (0.2s)" in worker.log()


def test_sighup_from_a_closed_terminal_stops_gracefully_as_sigterm_does(live_repo, start_worker, tmp_path):
    # The terminal that started the worker closed (an SSH connection dropped, a tmux session killed): SIGHUP's
    # default killed the worker at once, its running job held until the reaper took it back after
    # --stale-after and counted a retry for it.
    started = tmp_path / "started"
    job, _ = live_repo.create("marked_sleep", {"seconds": 1.5, "started": str(started)}, priority="high")
    later, _ = live_repo.create("echo")
    worker = start_worker()
    wait_until(started.exists, "the job's handler to start")

    worker.signal(signal.SIGHUP)

    assert worker.wait() == 0, worker.log()
    after = live_repo.find_by_id(job.id)
    assert (after.status, after.retry_count) == ("completed", 0)
    assert live_repo.find_by_id(later.id).status == "pending"  # no claims after the signal
    log = worker.log()
    assert log.index("SIGHUP received: stopping") < log.index(f"completed job={job.id}") < log.index("stopped worker")
    assert registered(live_repo, "w1").state == "stopped"


def test_a_worker_started_under_nohup_ignores_sighup(live_repo, start_worker, tmp_path):
    # nohup's user asked for the worker to outlive the terminal: its SIGHUP stays ignored.
    started = tmp_path / "started"
    job, _ = live_repo.create("marked_sleep", {"seconds": 0.5, "started": str(started)})
    worker = start_worker(preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    wait_until(started.exists, "the job's handler to start")

    worker.signal(signal.SIGHUP)
    worker.signal(signal.SIGTERM)  # had the SIGHUP stopped it, this second signal would release the job

    assert worker.wait() == 0, worker.log()
    assert live_repo.find_by_id(job.id).status == "completed"
    assert "SIGHUP" not in worker.log() and "SIGTERM received: stopping" in worker.log()


SIGNAL_DURING_CLEAN_UP = """
import signal, sys
from queue_core.worker import cli

SIG = signal.{name}


class Metrics:  # the worker's metrics server, closed in the clean-up that follows the worker's stop
    def close(self):
        print("the clean-up begins", file=sys.stderr, flush=True)
        signal.raise_signal(SIG)  # a second signal (an impatient operator's), its handler run now, here
        print("the clean-up goes on", file=sys.stderr, flush=True)


def start_metrics(worker, port):
    worker.subscribe(lambda _event: signal.raise_signal(SIG), ["started"])  # the first signal
    return Metrics()


cli.start_metrics = start_metrics
cli.run()
"""


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_a_second_signal_during_the_clean_up_after_the_stop_lets_it_finish(worker_env, tmp_path, sig):
    # The default handlers were put back as soon as the worker had stopped, before its clean-up: a second
    # signal then killed the process (SIGTERM: exit 143, the log lines still waiting lost with it) or raised
    # KeyboardInterrupt out of the clean-up (SIGINT: exit 130, the connections left to the exit).
    script = tmp_path / "clean_up_signal.py"
    script.write_text(SIGNAL_DURING_CLEAN_UP.format(name=sig))
    done = subprocess.run(
        [sys.executable, str(script), "--worker-id", "w1"],
        cwd=tmp_path,
        env=worker_env,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.index(f"{sig} received: stopping") < done.stderr.index("stopped worker=w1")
    assert "the clean-up goes on" in done.stderr and "Traceback" not in done.stderr
    assert f"{sig} received: the worker has stopped already and runs no job" in done.stderr


def holds_a_write(repo) -> bool:
    """Whether another connection is in the middle of a write: SQLite's write lock, or a PostgreSQL session of
    this test's schema idle inside a transaction (its row locks)."""
    db = repo.db
    if isinstance(db, pw.PostgresqlDatabase):
        query = (
            "SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%%' "
            "AND application_name = current_setting('application_name') AND pid <> pg_backend_pid()"
        )
        return db.execute_sql(query).fetchone()[0] > 0
    probe = sqlite3.connect(db.database, timeout=0)
    try:
        probe.execute("BEGIN IMMEDIATE")
        probe.rollback()
        return False
    except sqlite3.OperationalError:
        return True
    finally:
        probe.close()


def stopped(pid: int) -> bool:
    """Whether every thread of ``pid`` is stopped (state T in /proc): SIGSTOP is delivered asynchronously."""
    states = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            states.append((task / "stat").read_text().rsplit(")", 1)[1].split()[0])
        except FileNotFoundError:  # a thread that ended meanwhile
            continue
    return all(state in ("T", "t") for state in states)


def freeze_between_writes(process, repo) -> None:
    """SIGSTOP ``process`` at a moment it holds no write: frozen inside one (a heartbeat, its registry row) it
    would block every other worker too, and the test would measure a lock, not a zombie.

    The check waits until the process has stopped: probed while SIGSTOP was still on its way, a worker that
    took the write lock a moment later stayed frozen inside it (once in CI, under the full suite's load)."""
    for _ in range(200):
        process.signal(signal.SIGSTOP)
        wait_until(lambda: stopped(process.proc.pid), "the worker to stop on SIGSTOP", timeout=5)
        if not holds_a_write(repo):
            return
        process.signal(signal.SIGCONT)
        time.sleep(0.02)
    raise AssertionError("the worker never paused between writes")


@pytest.mark.parametrize("zombie_outcome", ["complete", "fail"])
def test_a_zombie_cannot_complete_or_fail_the_new_claim(live_repo, start_worker, zombie_outcome):
    fail_attempts = [1] if zombie_outcome == "fail" else []
    job, _ = live_repo.create("zombie", {"seconds": 1.5, "fail_attempts": fail_attempts})
    zombie = start_worker(worker_id="zombie")  # stale after 300 s: it would never reap anything here
    wait_until(running_on(live_repo, job.id, "zombie"), "the zombie to claim the job")
    freeze_between_writes(zombie, live_repo)  # hung: no heartbeat, no progress

    healthy = start_worker("--stale-after", "1.5", worker_id="healthy")
    try:
        wait_until(running_on(live_repo, job.id, "healthy"), "the job to be reaped and claimed again")
    except AssertionError as timed_out:  # say what the healthy worker saw, and whether a write is held
        raise AssertionError(
            f"{timed_out}; a write held now: {holds_a_write(live_repo)}; the healthy worker's log:\n"
            f"{healthy.log()[-4000:]}"
        ) from None
    zombie.signal(signal.SIGCONT)  # its handler finishes (attempt 1) while the new claim runs
    wait_until(lambda: f"lost job={job.id}" in zombie.log(), "the zombie to try to finish the job")
    wait_until(lambda: live_repo.find_by_id(job.id).status == "completed", "the healthy worker to finish")
    for process in (zombie, healthy):
        process.signal(signal.SIGTERM)
        assert process.wait() == 0

    after = live_repo.find_by_id(job.id)
    assert (after.status, after.retry_count, after.worker_id) == ("completed", 1, "healthy")
    # The only failed attempt on record is the reap; the zombie's outcome was refused.
    assert [(e.attempt, e.worker_id) for e in live_repo.errors_for(job.id)] == [(1, "zombie")]
    assert "lost its claim" in live_repo.errors_for(job.id)[0].error
    assert f"completed job={job.id}" not in zombie.log() and f"failed job={job.id}" not in zombie.log()
    assert f"completed job={job.id} type=zombie attempt=2 worker=healthy" in healthy.log()
    assert "lost job=" not in healthy.log()


def test_an_always_failing_job_fails_after_max_retries_plus_one_attempts_with_backoff(live_repo, start_worker):
    base = 0.2
    job, _ = live_repo.create("fail", {"error": "always"}, max_retries=2, retry_backoff=base)
    worker = start_worker()
    wait_until(lambda: live_repo.find_by_id(job.id).status == "failed", "the job to fail for good")
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0

    after = live_repo.find_by_id(job.id)
    assert (after.retry_count, after.error) == (2, "always")
    attempts = live_repo.errors_for(job.id)
    assert [(e.attempt, e.error, e.worker_id) for e in attempts] == [
        (1, "always", "w1"),
        (2, "always", "w1"),
        (3, "always", "w1"),
    ]
    for k in range(2):
        # Retry k + 1 may not start before its back-off: at least half of base * 2**k (equal jitter).
        assert attempts[k + 1].created_at - attempts[k].created_at >= timedelta(seconds=base * 2**k / 2)
    log = worker.log()
    assert log.count(f"failed job={job.id}") == 3
    assert 'error="always": no retries left after 3 attempts' in log


# --- the command line -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--concurrency", "0"], "--concurrency: '0' must be from 1 to 256"),
        (["--concurrency", "two"], "not a whole number"),
        (["--poll-interval", "0"], "--poll-interval: '0' must be a number of seconds > 0, at most 3153600000"),
        (["--poll-interval", "-1"], "--poll-interval: '-1' must be a number of seconds > 0, at most 3153600000"),
        (["--max-poll-interval", "nan"], "--max-poll-interval: 'nan' is not a number of seconds"),
        (["--poll-interval", "soon"], "--poll-interval: 'soon' is not a number of seconds"),
        (["--stale-after", "-3"], "--stale-after"),
        (["--shutdown-timeout", "soon"], "--shutdown-timeout: 'soon' is not a number of seconds"),
        (["--log-format", "xml"], "invalid choice: 'xml'"),
        (["--log-level", "loud"], "invalid choice: 'loud'"),
        (["--worker-id", ""], "--worker-id: must be a non-empty string"),
        (["--burst", "extra"], "unrecognized arguments: extra"),
        (
            ["--handlers", "no_such_module_xyz"],
            "cannot import handler module 'no_such_module_xyz': ModuleNotFoundError",
        ),
        (["--handlers", "broken_handlers"], "cannot import handler module 'broken_handlers': RuntimeError: broken"),
        (["--db", "mysql://x/y"], "unsupported database URL"),
        (["--queues", "mail=2,,default"], "--queues"),
        (["--queues", "mail=two"], "not a whole number"),
        (["--queues", "mail=0"], "must be from 1 to 256"),
        (["--queues", "mail=257"], "must be from 1 to 256"),
        (["--queues", "mail,mail=2"], "named twice"),
        (["--queues", "=3"], "--queues"),
        (["--queues", "mail=2", "--concurrency", "4"], "give --queues or --concurrency, not both"),
        # The default's own value given beside --queues was silently ignored (the README: "not together").
        (["--queues", "mail=2", "--concurrency", "1"], "give --queues or --concurrency, not both"),
        (
            ["--poll-interval", "5", "--max-poll-interval", "1"],
            "--max-poll-interval: 1s is shorter than --poll-interval (5s), the first idle wait it caps; give "
            "--max-poll-interval at least 5s (or leave it out), or a --poll-interval of at most 1s",
        ),
        (
            ["--stale-after", "1", "--ack-delay", "0.6"],
            "--ack-delay: 0.6s is more than half of --stale-after (1s): a finished job whose completion waits "
            "that long to be written could be reaped as stale and run again; give --ack-delay at most 0.5s, or a "
            "longer --stale-after",
        ),
    ],
)
def test_bad_input_is_one_clear_line_exit_2_and_no_job_touched(live_repo, worker_env, tmp_path, args, message):
    (tmp_path / "broken_handlers.py").write_text("raise RuntimeError('broken on purpose')\n")
    job, _ = live_repo.create("echo")

    out = run_worker(worker_env, tmp_path, "--burst", *args)

    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], out.stderr
    assert "Traceback" not in out.stderr
    after = live_repo.find_by_id(job.id)
    assert (after.status, after.worker_id, after.updated_at) == ("pending", None, job.updated_at)


def test_json_log_has_one_object_per_line_with_the_job_fields(live_repo, worker_env, tmp_path):
    done, _ = live_repo.create("echo", {"hi": 1}, priority="high")
    failed, _ = live_repo.create("fail", {"error": "nope"}, max_retries=0)

    out = run_worker(worker_env, tmp_path, "--burst", "--worker-id", "w9", "--log-format", "json")

    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in out.stderr.splitlines()]
    events = [r for r in records if "event" in r]
    assert [r["event"] for r in events] == ["started", "claimed", "completed", "claimed", "failed", "stopped"]
    completed, failure = events[2], events[4]
    assert {k: completed[k] for k in ("job_id", "job_type", "attempt", "worker_id", "error")} == {
        "job_id": done.id,
        "job_type": "echo",
        "attempt": 1,
        "worker_id": "w9",
        "error": None,
    }
    assert isinstance(completed["duration"], float) and completed["level"] == "info"
    assert (failure["job_id"], failure["error"], failure["level"]) == (failed.id, "nope", "warning")
    assert any(r["logger"] == "queue_core.handlers" and '{"hi": 1}' in r["message"] for r in records)


def test_text_log_line_per_event_and_default_worker_id(live_repo, worker_env, tmp_path):
    job, _ = live_repo.create("echo")
    worker = subprocess.Popen(
        [sys.executable, "-m", "queue_core.worker", "--burst"],
        cwd=tmp_path,
        env=worker_env,
        stderr=subprocess.PIPE,
        text=True,
    )
    _, log = worker.communicate(timeout=WAIT)
    assert worker.returncode == 0, log

    worker_id = f"{socket.gethostname()}-{worker.pid}"
    assert live_repo.find_by_id(job.id).worker_id == worker_id
    assert f" INFO claimed job={job.id} type=echo attempt=1 worker={worker_id}\n" in log
    assert f" INFO completed job={job.id} type=echo attempt=1 worker={worker_id} duration=" in log


def test_log_level_warning_hides_routine_events(live_repo, worker_env, tmp_path):
    live_repo.create("echo")
    live_repo.create("fail", max_retries=0)
    out = run_worker(worker_env, tmp_path, "--burst", "--log-level", "WARNING")
    assert out.returncode == 0
    lines = out.stderr.strip().splitlines()
    # One record: the failed line, then its handler's traceback under it (indented frames, the exception).
    assert " WARNING failed job=" in lines[0]
    assert lines[1] == "Traceback (most recent call last):" and lines[-1].startswith(
        "queue_core.worker.handlers.DemoFailure"
    )
    assert not any(" INFO " in line or " WARNING " in line for line in lines[1:]), lines


def test_handler_module_from_the_current_directory_and_unknown_types_stay_pending(live_repo, worker_env, tmp_path):
    (tmp_path / "myapp_jobs.py").write_text(
        "from queue_core.handlers import handler\n"
        "@handler('greet')\n"
        "def greet(payload):\n"
        "    open('greeted.txt', 'a').write(payload['name'] + '\\n')\n"
    )
    greet, _ = live_repo.create("greet", {"name": "ann"})
    unknown, _ = live_repo.create("nobody-handles-this")

    out = run_worker(worker_env, tmp_path, "--burst", "--handlers", "myapp_jobs", "--concurrency", "2")

    assert out.returncode == 0, out.stderr
    assert (tmp_path / "greeted.txt").read_text() == "ann\n"
    assert live_repo.find_by_id(greet.id).status == "completed"
    assert (live_repo.find_by_id(unknown.id).status, live_repo.find_by_id(unknown.id).worker_id) == ("pending", None)


def write_many_types_module(path: Path, count: int) -> None:
    """A handler module registering ``count`` job types m0, m1, ... (each handler returns its number)."""
    path.write_text(
        "from queue_core.handlers import handler\n"
        f"for i in range({count}):\n"
        "    handler(f'm{i}')(lambda payload, i=i: i)\n"
    )


def test_a_worker_with_more_than_a_hundred_handler_types_runs_their_jobs(live_repo, worker_env, tmp_path):
    # Regression: every claim names every registered type, and a claim took at most 100 types: a worker with
    # 120 handlers (124 types with the built-in ones) logged a refused claim at every poll and ran nothing.
    write_many_types_module(tmp_path / "many.py", 120)
    jobs = [live_repo.create(name)[0] for name in ("m5", "m119", "echo")]

    out = run_worker(worker_env, tmp_path, "--burst", "--handlers", "many")

    assert out.returncode == 0, out.stderr
    assert " ERROR " not in out.stderr, out.stderr
    assert [live_repo.find_by_id(job.id).status for job in jobs] == ["completed"] * 3
    assert [live_repo.find_by_id(job.id).result for job in jobs[:2]] == [5, 119]


@pytest.mark.parametrize("processes", ["1", "2"])
def test_a_worker_with_more_types_than_a_claim_takes_is_refused_at_start(live_repo, worker_env, tmp_path, processes):
    # One more type than a claim may name (the 4 built-in ones count): it could never claim, so it says so
    # once and exits 2, before any process forks, rather than log a refused claim at every poll.
    write_many_types_module(tmp_path / "too_many.py", MAX_TYPES - 3)
    job, _ = live_repo.create("m0")

    out = run_worker(worker_env, tmp_path, "--burst", "--handlers", "too_many", "--processes", processes)

    assert out.returncode == 2, out.stderr
    assert out.stderr.splitlines() == [
        f"error: the handler modules register {MAX_TYPES + 1} job types (4 of them built in) and a claim names at "
        f"most {MAX_TYPES}: split the --handlers modules across workers, each registering at most "
        f"{MAX_TYPES - 4} types"
    ]
    after = live_repo.find_by_id(job.id)
    assert (after.status, after.worker_id, after.updated_at) == ("pending", None, job.updated_at)


def test_the_entry_point_function_is_the_cli(live_repo, worker_env, tmp_path):
    # pyproject's script `queue-worker = "queue_core.worker.cli:main"` calls this function.
    job, _ = live_repo.create("echo")
    code = "import sys; from queue_core.worker.cli import main; sys.exit(main(['--burst', '--worker-id', 'script']))"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=worker_env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert live_repo.find_by_id(job.id).worker_id == "script"


# --- operator controls (issue 13) ------------------------------------------------------------------


def test_with_per_queue_slots_a_flood_on_one_queue_does_not_delay_another(live_repo, start_worker):
    # The criterion: with --queues slow=1,fast=2 and 20 long slow jobs queued first, fast jobs still
    # start within a second (claimed_at - created_at: how long each waited once enqueued).
    worker = start_worker("--queues", "slow=1,fast=2")
    wait_until(lambda: " INFO started " in worker.log(), "the worker to start")
    for _ in range(20):
        live_repo.create("sleep", {"seconds": 30}, queue="slow")
    fast = [live_repo.create("sleep", {"seconds": 0.2}, queue="fast")[0].id for _ in range(4)]

    wait_until(lambda: all(live_repo.find_by_id(i).status == "completed" for i in fast), "the fast jobs to finish")
    for job_id in fast:
        job = live_repo.find_by_id(job_id)
        assert (job.claimed_at - job.created_at).total_seconds() < 1.0, job.to_dict()
    assert live_repo.counts()["running"] == 1  # the one slow slot; 19 slow jobs still wait their turn


def registered(repo, worker_id):
    rows = [w for w in repo.workers() if w.id == worker_id]
    return rows[0] if rows else None


def test_a_killed_worker_shows_as_lost_after_its_threshold_and_a_stopped_one_as_stopped(live_repo, start_worker):
    doomed = start_worker("--stale-after", "2", worker_id="doomed")
    tidy = start_worker("--stale-after", "2", worker_id="tidy")
    for worker_id in ("doomed", "tidy"):
        wait_until(lambda w=worker_id: registered(live_repo, w) is not None, f"{worker_id} to register")
    row = registered(live_repo, "doomed")
    assert (row.state, row.pid, row.stale_after) == ("running", doomed.proc.pid, 2)

    doomed.proc.kill()  # SIGKILL: no chance to say goodbye
    tidy.signal(signal.SIGTERM)
    assert tidy.wait() == 0, tidy.log()

    wait_until(lambda: registered(live_repo, "doomed").state == "lost", "the killed worker to show as lost")
    lost = registered(live_repo, "doomed")
    assert lost.silent_for > 2 and lost.stopped_at is None
    stopped = registered(live_repo, "tidy")
    assert stopped.state == "stopped" and stopped.stopped_at is not None


def test_a_handler_module_that_fails_on_import_is_said_with_the_line_that_raised(tmp_path, monkeypatch):
    # A decorator's ValidationError or any error at import named the error only: in a module of fifty tasks,
    # "retries: unknown task option" did not say which of them, and the traceback is not shown.
    from queue_core.worker.cli import import_handler_modules

    (tmp_path / "tasks_with_a_typo.py").write_text(
        "from queue_core import Queue\n"
        "from queue_core.handlers import HandlerRegistry\n\n"
        "queue = Queue(registry=HandlerRegistry())\n\n"
        '@queue.task("send", retries=3)\n'
        "def send(to):\n"
        "    pass\n"
    )
    (tmp_path / "broken_dependency.py").write_text("x = 1\nraise RuntimeError('broken on purpose')\n")
    (tmp_path / "imports_broken.py").write_text("import broken_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)

    typo = import_handler_modules(["tasks_with_a_typo"])
    assert typo == (
        "cannot import handler module 'tasks_with_a_typo': ValidationError: retries: unknown task option; the "
        "options are priority, max_retries, queue, timeout, retry_backoff, cron (at tasks_with_a_typo.py, line 6)"
    )
    assert import_handler_modules(["imports_broken"]).endswith(
        "RuntimeError: broken on purpose (at broken_dependency.py, line 2)"
    )
    # Python's own message says where a syntax error is: nothing is added to it.
    (tmp_path / "bad_syntax.py").write_text("def f(:\n")
    assert import_handler_modules(["bad_syntax"]).endswith("SyntaxError: invalid syntax (bad_syntax.py, line 1)")


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("tasks_demo.py", "--handlers tasks_demo"),
        ("./tasks_demo.py", "--handlers tasks_demo"),
        ("myapp/jobs.py", "--handlers myapp.jobs"),
        ("myapp/jobs", "--handlers myapp.jobs"),
    ],
)
def test_a_handler_module_given_as_a_file_path_is_told_its_module_name(tmp_path, monkeypatch, given, says):
    # `--handlers tasks_demo.py` said "No module named 'tasks_demo.py'; 'tasks_demo' is not a package", and
    # ./tasks_demo.py "the 'package' argument is required to perform a relative import": neither says to drop .py.
    from queue_core.worker.cli import import_handler_modules

    monkeypatch.chdir(tmp_path)
    problem = import_handler_modules([given])
    assert problem == (
        f"cannot import handler module {given!r}: --handlers takes the module's name as an import statement "
        f"writes it, not a file: {says}, from the folder that holds it"
    )
