"""``python -m queue_core.worker --processes N``: one command, N forked worker processes, and their parent.

Real processes and real signals, as in test_worker_cli; the pool's own bookkeeping (exit codes) with forked
functions at the end.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys

import pytest
import worker_handlers
from test_worker_cli import WAIT, registered, run_worker, wait_until

from queue_core.worker import pool as pool_module
from queue_core.worker.pool import EXIT_CRASH, EXIT_OK, EXIT_USAGE, WorkerPool, describe_exit

FAST = ["--poll-interval", "0.02", "--max-poll-interval", "0.1", "--handlers", "worker_handlers"]


class Pool:
    """A ``--processes`` command in a session of its own, so that a test can signal its whole process group
    as a terminal's Ctrl-C or a service manager does."""

    def __init__(self, env, tmp_path, *args):
        self.log_path = tmp_path / "pool.log"
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "queue_core.worker", *FAST, *args],
                cwd=tmp_path,
                env=env,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )

    def log(self) -> str:
        return self.log_path.read_text()

    def wait(self, timeout=WAIT) -> int:
        return self.proc.wait(timeout)


@pytest.fixture
def start_pool(worker_env, tmp_path):
    started = []

    def start(*args) -> Pool:
        pool = Pool(worker_env, tmp_path, *args)
        started.append(pool)
        return pool

    yield start
    for pool in started:  # the parent and whatever it left behind (a failed test may leave orphans)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pool.proc.pid, signal.SIGKILL)
        pool.proc.wait()


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, exited but not yet reaped by whoever adopted it, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def members(repo, prefix: str) -> dict[str, int]:
    """Worker id -> pid of the running workers whose id starts with ``prefix``."""
    return {w.id: w.pid for w in repo.workers() if w.id.startswith(prefix) and w.state == "running"}


def test_a_pool_runs_each_job_exactly_once_on_processes_of_its_own(db, db_url, live_repo, worker_env, tmp_path):
    count = 2000 if db_url.startswith("postgresql") else 1000
    worker_handlers.create_table(db_url)
    with db.atomic():
        ids = [live_repo.create("record", {"i": i})[0].id for i in range(count)]

    args = ["--processes", "3", "--concurrency", "2", "--burst", "--worker-id", "p"]
    out = run_worker(worker_env, tmp_path, *FAST, *args)

    assert out.returncode == 0, out.stderr
    assert live_repo.counts() == {"pending": 0, "running": 0, "completed": count, "failed": 0, "cancelled": 0}
    runs = db.execute_sql("SELECT job_id, COUNT(*) FROM test_executions GROUP BY job_id").fetchall()
    assert sorted(job_id for job_id, _ in runs) == ids and {n for _, n in runs} == {1}
    # Three processes, each its own worker: the rows name the one that ran them, from its own pid.
    rows = db.execute_sql("SELECT DISTINCT worker_id, pid FROM test_executions").fetchall()
    assert {worker for worker, _ in rows} <= {"p-1", "p-2", "p-3"}
    pids = {registered(live_repo, f"p-{k}").pid for k in (1, 2, 3)}
    assert len(pids) == 3 and {pid for _, pid in rows} <= pids
    assert all(registered(live_repo, f"p-{k}").state == "stopped" for k in (1, 2, 3))
    assert "started 3 worker processes" in out.stderr and "stopped 3 worker processes" in out.stderr
    assert " ERROR " not in out.stderr


def gated_job(repo, tmp_path):
    """A job that runs until the test creates the file it returns."""
    started, release = tmp_path / "started", tmp_path / "release"
    job, _ = repo.create("gated", {"started": str(started), "release": str(release)}, priority="high")
    return job, started, release


def test_ctrl_c_to_the_whole_group_stops_the_pool_once_and_lets_jobs_finish(live_repo, start_pool, tmp_path):
    job, started, release = gated_job(live_repo, tmp_path)
    pool = start_pool("--processes", "2", "--worker-id", "g")
    wait_until(started.exists, "the job's handler to start")
    wait_until(lambda: len(members(live_repo, "g-")) == 2, "both processes to register")

    os.killpg(pool.proc.pid, signal.SIGINT)  # the parent and both processes get it, as from a terminal
    wait_until(lambda: "SIGINT received" in pool.log(), "the parent to take the signal")
    release.touch()

    assert pool.wait() == 0, pool.log()
    log = pool.log()
    assert live_repo.find_by_id(job.id).status == "completed"  # not released: the signal counted once
    assert log.count("SIGINT received") == 1 and "released" not in log, log
    assert log.index("SIGINT received") < log.index(f"completed job={job.id}") < log.index("stopped 2 worker")
    assert {registered(live_repo, f"g-{k}").state for k in (1, 2)} == {"stopped"}


def test_a_terminal_hang_up_to_the_whole_group_stops_the_pool_once_and_lets_jobs_finish(
    live_repo, start_pool, tmp_path
):
    # SIGHUP's default killed the parent and every process at once (the terminal closed: an SSH connection
    # dropped, a tmux session killed), their running jobs held until the reaper took them back.
    job, started, release = gated_job(live_repo, tmp_path)
    pool = start_pool("--processes", "2", "--worker-id", "h")
    wait_until(started.exists, "the job's handler to start")
    wait_until(lambda: len(members(live_repo, "h-")) == 2, "both processes to register")

    os.killpg(pool.proc.pid, signal.SIGHUP)  # the parent and both processes get it, as from a hang-up
    # ... or died of it: the assertion below says so at once
    wait_until(lambda: "SIGHUP received" in pool.log() or pool.proc.poll() is not None, "the parent to take it")
    release.touch()

    assert pool.wait() == 0, pool.log()
    log = pool.log()
    after = live_repo.find_by_id(job.id)
    assert (after.status, after.retry_count) == ("completed", 0)  # not released: the signal counted once
    assert log.count("SIGHUP received") == 1 and "released" not in log, log
    assert log.index("SIGHUP received") < log.index(f"completed job={job.id}") < log.index("stopped 2 worker")
    assert {registered(live_repo, f"h-{k}").state for k in (1, 2)} == {"stopped"}


def test_a_second_signal_to_the_parent_releases_running_jobs(live_repo, start_pool, tmp_path):
    started = tmp_path / "started"
    job, _ = live_repo.create("marked_sleep", {"seconds": 120, "started": str(started)})
    pool = start_pool("--processes", "2", "--worker-id", "r", "--shutdown-timeout", "120")
    wait_until(started.exists, "the job's handler to start")

    pool.proc.send_signal(signal.SIGTERM)
    wait_until(lambda: "SIGTERM received: stopping 2 worker processes" in pool.log(), "the first signal")
    pool.proc.send_signal(signal.SIGTERM)

    assert pool.wait() == 0, pool.log()
    after = live_repo.find_by_id(job.id)
    assert (after.status, after.retry_count, after.worker_id) == ("pending", 0, None)
    assert "released by a second stop request" in pool.log()


def test_a_killed_process_is_replaced_and_the_pool_goes_on(live_repo, start_pool):
    pool = start_pool("--processes", "2", "--worker-id", "k")
    wait_until(lambda: len(members(live_repo, "k-")) == 2, "both processes to register")
    victim = registered(live_repo, "k-2").pid

    os.kill(victim, signal.SIGKILL)

    wait_until(lambda: f"worker process 2 (pid {victim}) was killed by SIGKILL" in pool.log(), "the parent to see it")
    wait_until(lambda: registered(live_repo, "k-2").pid not in (victim, None), "a replacement to register")
    replacement = registered(live_repo, "k-2")
    assert replacement.state == "running" and alive(replacement.pid)
    job, _ = live_repo.create("echo", {"hello": "again"})
    wait_until(lambda: live_repo.find_by_id(job.id).status == "completed", "the pool to run a new job")

    pool.proc.send_signal(signal.SIGTERM)
    assert pool.wait() == 0, pool.log()
    assert "starting another in 1s" in pool.log()


def test_a_replacement_takes_back_the_jobs_of_the_process_it_replaces_at_once(live_repo, start_pool):
    # --stale-after 300 (the default): without the takeover the killed process's job would stay running for
    # five minutes, and this test would time out waiting.
    job, _ = live_repo.create("sleep", {"seconds": 1.0})
    pool = start_pool("--processes", "2", "--worker-id", "t")
    wait_until(lambda: live_repo.find_by_id(job.id).status == "running", "a process to claim the job")
    holder = live_repo.find_by_id(job.id).worker_id
    victim = registered(live_repo, holder).pid

    os.kill(victim, signal.SIGKILL)

    wait_until(lambda: live_repo.find_by_id(job.id).status == "completed", "the job to be taken back and run")
    after = live_repo.find_by_id(job.id)
    assert after.retry_count == 1 and after.attempt == 2
    [lost] = live_repo.errors_for(job.id)
    assert (lost.attempt, lost.worker_id) == (1, holder)
    assert lost.error == f"worker {holder} lost its claim: its process (pid {victim}) died"
    assert f"took back 1 job(s) of worker {holder}, whose process (pid {victim}) died" in pool.log()
    pool.proc.send_signal(signal.SIGTERM)
    assert pool.wait() == 0, pool.log()


def test_a_process_a_handler_ends_with_exit_0_is_replaced_and_its_job_taken_back(live_repo, start_pool):
    # Regression: a handler that called os._exit(0) (or a library that exits cleanly under it) ended its
    # process with code 0, which the pool took for a clean end: no line in its log, no replacement, so the
    # pool ran one process short for good, and the job stayed running and its worker "running" in `workers`
    # until --stale-after (300 s here: this test would time out waiting).
    job, _ = live_repo.create("die_on_first_attempt", {"code": 0})
    pool = start_pool("--processes", "2", "--worker-id", "z")
    wait_until(lambda: live_repo.find_by_id(job.id).status == "completed", "the job to be taken back and run")
    [lost] = live_repo.errors_for(job.id)
    holder = lost.worker_id
    assert "exited with code 0: starting another in 1s" in pool.log(), pool.log()
    assert f"took back 1 job(s) of worker {holder}" in pool.log()
    wait_until(lambda: len(members(live_repo, "z-")) == 2, "the pool to be two processes again")
    pool.proc.send_signal(signal.SIGTERM)
    assert pool.wait() == 0, pool.log()


def test_in_a_burst_the_parent_takes_back_the_jobs_of_a_process_that_died(live_repo, worker_env, tmp_path):
    # Regression: with --burst a dead process is not replaced, and nothing took back what it held: its job
    # stayed running, and `workers` showed it running, until --stale-after (300 s here) had passed.
    live_repo.create_many([{"type": "echo"}] * 2000)
    doomed, _ = live_repo.create("die_on_first_attempt", {"code": 7}, priority="high")

    out = run_worker(worker_env, tmp_path, *FAST, "--processes", "2", "--burst", "--worker-id", "b")

    assert out.returncode == EXIT_CRASH, out.stderr  # as documented: the others finish, the pool exits 1
    assert live_repo.counts()["running"] == 0
    [lost] = live_repo.errors_for(doomed.id)
    holder = lost.worker_id
    dead = registered(live_repo, holder).pid
    assert f"worker process {holder[-1]} (pid {dead}) exited with code 7" in out.stderr
    assert lost.error == f"worker {holder} lost its claim: its process (pid {dead}) died"
    assert f"whose process (pid {dead}) died" in out.stderr  # "took back N job(s) of worker ..."
    assert registered(live_repo, holder).state == "stopped"
    # Taken back with a retry counted, as a reap does; the other process ran it again if it was still draining.
    after = live_repo.find_by_id(doomed.id)
    assert (after.status, after.retry_count) in {("pending", 1), ("completed", 1)}


def test_the_processes_of_a_pool_started_from_a_program_write_every_log_line_before_they_exit(live_repo, worker_env):
    """``main([...])`` called by another program: its processes end with ``os._exit`` and without the
    interpreter's exit hooks, so the job lines still waiting to be written (worker.logs) are written first."""
    jobs = live_repo.create_many([{"type": "echo", "payload": {"n": n}} for n in range(6)])
    program = "from queue_core.worker.cli import main; raise SystemExit(main(['--processes', '2', '--burst']))"
    out = subprocess.run([sys.executable, "-c", program], env=worker_env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    for job in jobs:
        assert f"completed job={job.id} " in out.stderr, out.stderr
    assert out.stderr.count("INFO stopped worker=") == 2 and out.stderr.count("INFO started worker=") == 2


def test_processes_whose_parent_dies_finish_their_jobs_and_stop(live_repo, start_pool, tmp_path):
    job, started, release = gated_job(live_repo, tmp_path)
    pool = start_pool("--processes", "2", "--worker-id", "o")
    wait_until(started.exists, "the job's handler to start")
    wait_until(lambda: len(members(live_repo, "o-")) == 2, "both processes to register")
    busy = live_repo.find_by_id(job.id).worker_id
    pids = members(live_repo, "o-")
    idle = next(worker for worker in pids if worker != busy)

    pool.proc.kill()  # SIGKILL to the parent alone: its pipes close, which the processes read as a stop
    pool.wait()
    wait_until(lambda: not alive(pids[idle]), "the idle process to stop")
    later, _ = live_repo.create("echo")  # no process claims any more
    release.touch()

    wait_until(lambda: not alive(pids[busy]), "the busy process to finish its job and stop")
    assert live_repo.find_by_id(job.id).status == "completed"  # finished after its parent was gone
    assert live_repo.find_by_id(later.id).status == "pending"
    assert {registered(live_repo, f"o-{k}").state for k in (1, 2)} == {"stopped"}


def adjacent_ports() -> tuple[int, socket.socket]:
    """A free port P and a socket listening on P + 1."""
    for _ in range(100):
        taken = socket.socket()
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1] - 1
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                taken.close()
                continue
        taken.listen()
        return port, taken
    raise AssertionError("no two adjacent ports were free")


def test_a_process_that_cannot_start_stops_the_pool_with_its_error(live_repo, worker_env, tmp_path):
    first, taken = adjacent_ports()  # the second process's metrics port is in use
    second = first + 1
    with taken:
        args = [*FAST, "--processes", "2", "--metrics-port", str(first), "--worker-id", "m"]
        out = run_worker(worker_env, tmp_path, *args)

    assert out.returncode == 2, out.stderr
    assert f"cannot serve metrics on 127.0.0.1:{second}" in out.stderr
    assert "worker process 2 (pid" in out.stderr and "exited with code 2: stopping the others" in out.stderr
    assert "Traceback" not in out.stderr
    assert registered(live_repo, "m-1").state == "stopped"  # stopped by the pool, gracefully


@pytest.mark.backends("sqlite")
def test_a_pool_whose_sqlite_file_is_deleted_stops_rather_than_replace_its_processes_on_a_new_file(
    db_url, live_repo, start_pool
):
    """Regression: each process stopped on its own (exit 1, "the database file ... was moved or deleted"), and
    the parent replaced it a second later; the replacement made a new, empty database at the path ("made the
    queue's tables") and the pool ran on it for ever, while the queue's jobs sat in the deleted file and an
    operator putting the file back found a stranger's -wal and -shm beside it. The pool stops, exit 1."""
    from pathlib import Path

    path = Path(db_url.removeprefix("sqlite:///"))
    pool = start_pool("--processes", "2", "--worker-id", "g", "--stale-after", "0.6")  # a beat every 0.2 s
    wait_until(lambda: len(members(live_repo, "g-")) == 2, "both processes to register")
    live_repo.db.close()  # this test's own connection: none left on the file but the pool's
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)

    assert pool.wait() == EXIT_CRASH, pool.log()
    log = pool.log()
    assert f"the database file {path} was moved or deleted" in log
    assert "stopping the pool, none replaced. Put the file back" in log
    assert "starting another" not in log and "made the queue's tables" not in log, log
    assert not path.exists()  # no new, empty file at the path
    assert "Traceback" not in log


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--processes", "0"], "--processes: '0' must be from 1 to 256"),
        (["--processes", "two"], "--processes: 'two' is not a whole number"),
        (
            ["--processes", "4", "--metrics-port", "65534"],
            "--metrics-port 65534 with --processes 4: process k serves on the port + k, up to 65537",
        ),
        (["--processes", "12", "--worker-id", "w" * 253], "--worker-id with --processes 12"),
    ],
)
def test_bad_pool_settings_are_one_line_and_exit_2(live_repo, worker_env, tmp_path, args, message):
    job, _ = live_repo.create("echo")
    out = run_worker(worker_env, tmp_path, "--burst", *args)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], out.stderr
    assert live_repo.find_by_id(job.id).status == "pending"


# --- the parent's bookkeeping, with functions in place of workers ------------------------------------------


def pool_exit(serve, processes=3, burst=True) -> int:
    return WorkerPool(processes, serve, burst=burst, shutdown_timeout=1).run()


@pytest.mark.parametrize(
    ("codes", "expected"),
    [((0, 0, 0), EXIT_OK), ((0, 1, 0), EXIT_CRASH), ((0, 0, 2), EXIT_USAGE)],
)
def test_the_pools_exit_code_is_its_worst_process(codes, expected):
    assert pool_exit(lambda member: codes[member.index]) == expected


def test_a_process_that_raises_counts_as_crashed():
    def serve(member):
        if member.index == 1:
            raise RuntimeError("boom")
        return 0

    assert pool_exit(serve) == EXIT_CRASH


def runs_in_turn(tmp_path, codes):
    """A serve function that returns ``codes`` one per call, across processes (a file counts the calls); a
    code that is a function is called with the member, and what it returns is the code."""
    calls = tmp_path / "calls"

    def serve(member):
        with open(calls, "a") as out:
            out.write("x")
        code = codes[len(calls.read_text()) - 1]
        return code(member) if callable(code) else code

    return serve, calls


def stops_the_pool(member) -> int:
    """A process that stops its pool, as a SIGTERM to the parent does, and exits 0 once told to stop."""
    os.kill(os.getppid(), signal.SIGTERM)
    return until_told_to_stop(member)


def test_a_process_that_dies_is_replaced_and_a_replacements_exit_2_is_a_crash(tmp_path, monkeypatch):
    monkeypatch.setattr(pool_module, "FIRST_RESTART_DELAY", 0.01)
    # Crashed, then a replacement that could not reach the database (exit 2), then one that ran until the stop.
    serve, calls = runs_in_turn(tmp_path, [EXIT_CRASH, EXIT_USAGE, stops_the_pool])
    assert pool_exit(serve, processes=1, burst=False) == EXIT_OK
    assert calls.read_text() == "xxx"


def test_a_process_that_exits_0_while_the_pool_runs_on_is_replaced(tmp_path, monkeypatch):
    # Regression: exit 0 counted as a clean end whatever the pool was doing, so a process that a handler ended
    # with os._exit(0) left the pool one process short for good, with no line in its log.
    monkeypatch.setattr(pool_module, "FIRST_RESTART_DELAY", 0.01)
    serve, calls = runs_in_turn(tmp_path, [EXIT_OK, stops_the_pool])
    assert pool_exit(serve, processes=1, burst=False) == EXIT_OK
    assert calls.read_text() == "xx"


def test_a_first_process_that_exits_2_is_not_replaced(tmp_path, monkeypatch):
    monkeypatch.setattr(pool_module, "FIRST_RESTART_DELAY", 0.01)
    serve, calls = runs_in_turn(tmp_path, [EXIT_USAGE, EXIT_OK])
    assert pool_exit(serve, processes=1, burst=False) == EXIT_USAGE
    assert calls.read_text() == "x"


def test_a_process_that_dies_after_the_database_file_went_is_not_replaced(tmp_path, monkeypatch):
    monkeypatch.setattr(pool_module, "FIRST_RESTART_DELAY", 0.01)
    serve, calls = runs_in_turn(tmp_path, [EXIT_CRASH, EXIT_OK])
    taken_back: list[int] = []
    pool = WorkerPool(
        1,
        serve,
        burst=False,
        shutdown_timeout=1,
        on_unreplaced=lambda index, pid: taken_back.append(pid),
        gone=lambda: "the database file /q.db was moved or deleted (No such file or directory)",
    )
    assert pool.run() == EXIT_CRASH
    assert calls.read_text() == "x"  # no replacement forked
    assert taken_back == []  # nor an open at the path to take its jobs back: they are in the moved file


def test_a_program_a_job_starts_stops_on_its_own_sigterm():
    # The processes' SIGTERM does nothing by a handler of their own, which a program they start does not
    # inherit (SIG_IGN it would, and then ignore the SIGTERM of a timeout or a cancel).
    probe = "import signal, sys; sys.exit(0 if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL else 3)"

    def serve(member):
        return subprocess.run([sys.executable, "-c", probe]).returncode

    assert pool_exit(serve, processes=1) == EXIT_OK


def test_an_exit_by_a_signal_without_a_name_is_described():
    assert describe_exit(signal.SIGKILL) == "was killed by SIGKILL"
    assert describe_exit(signal.SIGRTMIN + 6) == f"was killed by signal {signal.SIGRTMIN + 6}"
    assert describe_exit(3 << 8) == "exited with code 3"


@contextlib.contextmanager
def pool_with_pipes(count: int):
    """A pool whose processes are only pipes: what its stop signals write to them."""
    pool = WorkerPool(count, lambda member: EXIT_OK, burst=False, shutdown_timeout=5.0)
    readers = []
    for index in range(count):
        reader, writer = os.pipe()
        readers.append(reader)
        pool.children[10_000 + index] = pool_module.Child(index, writer, 0.0, None)
    try:
        yield pool, readers
    finally:
        for fd in [*readers, *(child.control for child in pool.children.values())]:
            os.close(fd)


def words(readers) -> list[bytes]:
    return [os.read(reader, 16) for reader in readers]


# Python runs a signal's handler between any two steps of its main thread, whichever thread the signal
# reached: a second signal's handler can run anywhere inside the first's. These tests run it at two such
# places, as a call from there.


def test_a_second_signal_during_the_first_ones_message_still_reaches_each_process_second(monkeypatch):
    # "n" then "s" is a stop with no time to finish, reported as the shutdown timeout's, not as a second request.
    with pool_with_pipes(2) as (pool, readers):
        real_info = pool_module.logger.info

        def info(*args):
            real_info(*args)
            if pool.signals == 1:
                pool._on_signal(signal.SIGTERM, None)

        monkeypatch.setattr(pool_module.logger, "info", info)
        pool._on_signal(signal.SIGTERM, None)
        assert pool.signals == 2
        assert words(readers) == [b"sn", b"sn"]


@pytest.mark.parametrize("level", ["info", "warning"])
def test_a_signal_whose_line_cannot_be_written_still_reaches_each_process(monkeypatch, level):
    # The line may raise (a handler run inside the main thread's own write to stderr: "reentrant call"); the
    # word it says was sent must be sent all the same, before the line (test_worker_ctrl_c has the worker's).
    def unwritable(*args, **kwargs):
        raise RuntimeError("reentrant call inside <_io.BufferedWriter name='<stderr>'>")

    with pool_with_pipes(2) as (pool, readers):
        monkeypatch.setattr(pool_module.logger, level, unwritable)
        pool._on_signal(signal.SIGTERM, None)
        pool._on_signal(signal.SIGINT, None)
        assert words(readers) == [b"sn", b"sn"]


@pytest.mark.parametrize("after_writes", [1, 2])
def test_a_second_signal_while_the_first_is_being_sent_is_sent_after_it_once(monkeypatch, after_writes):
    with pool_with_pipes(2) as (pool, readers):
        real_write, sent = os.write, []

        def write(fd, data):
            sent.append(data)
            real_write(fd, data)
            if len(sent) == after_writes:
                pool._on_signal(signal.SIGTERM, None)

        monkeypatch.setattr(pool_module.os, "write", write)
        pool._on_signal(signal.SIGTERM, None)
        assert pool.signals == 2
        assert words(readers) == [b"sn", b"sn"]


def stop_when_logged(monkeypatch, pool: WorkerPool, level: str, text: str) -> None:
    """Have ``pool`` receive a SIGTERM right after it logs a line containing ``text`` at ``level``."""
    real = getattr(pool_module.logger, level)

    def log(message, *args):
        real(message, *args)
        if text in message and not pool.stopping:
            pool._on_signal(signal.SIGTERM, None)

    monkeypatch.setattr(pool_module.logger, level, log)


def until_told_to_stop(member) -> int:
    os.read(member.control, 1)
    return EXIT_OK


def test_a_process_that_died_as_the_pool_was_told_to_stop_has_its_jobs_taken_back(monkeypatch):
    # Its replacement was due when the stop came, so none was forked, and nothing took back the jobs it held:
    # they stayed running, and its row in the registry too, until --stale-after.
    monkeypatch.setattr(pool_module, "FIRST_RESTART_DELAY", 3600.0)
    taken = []
    serve = lambda member: EXIT_CRASH if member.index == 0 else until_told_to_stop(member)  # noqa: E731
    pool = WorkerPool(2, serve, burst=False, shutdown_timeout=1, on_unreplaced=lambda *dead: taken.append(dead))
    stop_when_logged(monkeypatch, pool, "warning", "starting another")
    assert pool.run() == EXIT_OK
    assert [index for index, _pid in taken] == [0]


def test_the_jobs_of_the_last_process_are_taken_back_when_the_stop_comes_before_its_replacement(monkeypatch):
    # Every process dead (an OOM kill of the group, a poison job) and a replacement due: a stop then ended the
    # pool at once, with no process left to wait for, and the jobs stayed running until --stale-after.
    monkeypatch.setattr(pool_module, "FIRST_RESTART_DELAY", 3600.0)
    taken = []
    pool = WorkerPool(
        2, lambda member: EXIT_CRASH, burst=False, shutdown_timeout=1, on_unreplaced=lambda *dead: taken.append(dead)
    )
    real = pool_module.logger.warning

    def log(message, *args):
        real(message, *args)
        if "starting another" in message and not pool.children and not pool.stopping:
            pool._on_signal(signal.SIGTERM, None)  # both died: the stop comes while their replacements wait

    monkeypatch.setattr(pool_module.logger, "warning", log)
    assert pool.run() == EXIT_OK
    assert sorted(index for index, _pid in taken) == [0, 1]


def test_a_process_that_crashes_while_the_pool_stops_has_its_jobs_taken_back(monkeypatch):
    taken = []

    def serve(member):
        until_told_to_stop(member)
        return EXIT_CRASH if member.index == 0 else EXIT_OK  # 0 died in its stop (killed, or a crash)

    pool = WorkerPool(2, serve, burst=False, shutdown_timeout=1, on_unreplaced=lambda *dead: taken.append(dead))
    stop_when_logged(monkeypatch, pool, "info", "started %d worker processes")
    assert pool.run() == EXIT_CRASH
    assert [index for index, _pid in taken] == [0]
