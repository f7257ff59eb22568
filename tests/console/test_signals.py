"""The console as a real process on a terminal (a pty): a closed terminal (SIGHUP) or a SIGTERM leaves no job of
its embedded worker running; both backends."""

from __future__ import annotations

import fcntl
import os
import signal
import struct
import subprocess
import sys
import termios
import threading
import time

import pytest

from queue_core.store.repository import JobRepository


def wait_until(condition, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.05)


def take_terminal() -> None:
    """In the child, after its setsid: make its stdin (the pty) its controlling terminal."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class TerminalProcess:
    """``python -m console ...`` on a 120x40 pty whose output is read (and kept) on a thread."""

    def __init__(self, args: list[str], env: dict):
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        env = {**env, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "console", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            start_new_session=True,  # its own session, of which the pty is the controlling terminal:
            preexec_fn=take_terminal,  # a hang-up signals it as it does a login shell or a tmux pane's command
        )
        os.close(slave)
        self.master = master
        self.output = bytearray()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: the terminal's other end is gone
                return
            if not chunk:
                return
            self.output += chunk

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.close(self.master)


@pytest.fixture
def console_process(worker_env):
    made = []

    def start(*args: str) -> TerminalProcess:
        made.append(TerminalProcess(list(args), worker_env))
        return made[-1]

    yield start
    for console in made:
        console.close()


def running_sleep(db, console_process, db_url) -> tuple[JobRepository, int, TerminalProcess]:
    repo = JobRepository(db)
    job, _ = repo.create("sleep", {"seconds": 120})
    console = console_process("--db", db_url, "--worker", "--refresh", "0.5")
    wait_until(lambda: repo.find_by_id(job.id).status == "running", "the embedded worker runs the job")
    return repo, job.id, console


def worker_stopped(repo) -> list[bool]:
    return [worker.stopped_at is not None for worker in repo.WorkerRecord.select()]


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM], ids=["hangup", "terminate"])
@pytest.mark.backends("sqlite", "postgresql")
def test_a_signal_leaves_no_job_of_the_embedded_worker_running(db, db_url, console_process, signum):
    repo, job_id, console = running_sleep(db, console_process, db_url)
    console.process.send_signal(signum)
    if signum == signal.SIGTERM:
        # Like q: the running job gets the shutdown timeout; a second SIGTERM, like a second q, releases it now.
        time.sleep(0.5)
        assert console.process.poll() is None, "a first SIGTERM waits for the running job"
        console.process.send_signal(signum)
    console.process.wait(timeout=30)
    assert console.process.returncode == 0, f"ended by signal {-console.process.returncode}, not by its handler"
    job = repo.find_by_id(job_id)
    assert job.status == "pending" and job.worker_id is None, console.output.decode(errors="replace")[-2000:]
    assert worker_stopped(repo) == [True]


@pytest.mark.backends("sqlite", "postgresql")
def test_a_terminal_that_hangs_up_leaves_no_console_running_nor_job_of_its_worker(db, db_url, console_process):
    """The terminal itself gone (an SSH connection dropped, a tmux server killed): the kernel sends SIGHUP and
    then SIGCONT, and every write to the terminal fails. Review finding: Textual's SIGCONT handler started a
    second output thread, which died on its first write; the app's exit then waited on that thread's queue
    for ever, the process left running with its worker's job claimed (`running` until --stale-after)."""
    repo, job_id, console = running_sleep(db, console_process, db_url)
    os.close(console.master)  # the terminal's other end: the pty hangs up
    console.master = os.open(os.devnull, os.O_RDONLY)  # for close() to close
    try:
        console.process.wait(timeout=60)  # a hang guard, not a timing: it exited at once here
    except subprocess.TimeoutExpired:
        pytest.fail("the console did not exit after its terminal hung up")
    assert console.process.returncode == 0, f"ended by signal {-console.process.returncode}, not by its handler"
    job = repo.find_by_id(job_id)
    assert job.status == "pending" and job.worker_id is None
    assert worker_stopped(repo) == [True]
