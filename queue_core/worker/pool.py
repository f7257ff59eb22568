"""``--processes N``: one worker command, N worker processes forked from it once start-up is done.

Python runs one thread of a process at a time, so a machine with several cores runs several worker
processes. Started one by one, each pays the interpreter's start-up and the imports (~0.15 s of CPU with
psycopg); forked from one that has paid them, each begins with its modules and handlers loaded and only opens
its own connections. The parent is a supervisor: it holds no connection and runs no job, and a process that
dies while the pool is not stopping is replaced (after 1 s, doubling up to 30 s while replacements keep dying
young), unless the pool runs ``--burst``.

Stopping: the processes ignore SIGINT and SIGTERM, so that a terminal's Ctrl-C or a service manager's
SIGTERM, which reach the whole process group, count once, not twice (a second signal releases running
jobs). The parent passes each signal it receives to every process over a pipe of its own: the first stops
them gracefully, the next releases their running jobs now; a process whose parent dies (the pipe closes)
stops gracefully.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from .logs import logger
from .loop import Worker

STOP, STOP_NOW = b"s", b"n"  # what the parent writes to a process's pipe
SIGNALS = (signal.SIGTERM, signal.SIGINT)
FIRST_RESTART_DELAY, MAX_RESTART_DELAY = 1.0, 30.0  # seconds before a dead process is replaced
YOUNG = 30.0  # seconds: a replacement that dies sooner doubles the next delay
EXIT_OK, EXIT_CRASH, EXIT_USAGE = 0, 1, 2


@dataclass(frozen=True)
class Member:
    """What a forked process knows of its place in the pool."""

    index: int  # 0 .. N-1 (1 .. N in log lines); a replacement keeps the index of the process it replaces
    control: int  # the read end of its pipe from the parent

    def obey(self, worker: Worker) -> None:
        """Stop ``worker`` as the parent says: a graceful stop, a stop now, or (the pipe closed: the parent is
        gone) a graceful stop. A stop that arrives before the worker has started takes effect once it has."""
        started = threading.Event()
        worker.subscribe(lambda _event: started.set(), ["started"])

        def listen() -> None:
            while True:
                try:
                    word = os.read(self.control, 1)
                except OSError:
                    word = b""
                started.wait()
                worker.request_stop(0 if word == STOP_NOW else None)
                if not word:
                    return

        threading.Thread(target=listen, name="pool-control", daemon=True).start()


def describe_exit(status: int) -> str:
    code = os.waitstatus_to_exitcode(status)
    return f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"


class WorkerPool:
    """Forks ``processes`` processes, each running ``serve(member)`` (which returns an exit code), and
    supervises them until they have all exited; ``run()`` returns the pool's exit code: 0 when every process
    exited 0, 2 when one found a problem with its settings (the rest are stopped, none replaced), else 1."""

    def __init__(self, processes: int, serve: Callable[[Member], int], *, burst: bool, shutdown_timeout: float):
        self.processes, self.serve, self.burst, self.shutdown_timeout = processes, serve, burst, shutdown_timeout
        self.children: dict[int, tuple[int, int, float]] = {}  # pid -> (index, pipe's write end, started at)
        self.signals = 0  # stop signals received
        self.stopping = False  # told to stop (by a signal, or a process that could not start): no replacements
        self.code = EXIT_OK

    def run(self) -> int:
        previous = {sig: signal.signal(sig, self._on_signal) for sig in SIGNALS}
        try:
            for index in range(self.processes):
                self._fork(index)
            logger.info(
                "started %d worker processes: pids %s", self.processes, ",".join(str(pid) for pid in self.children)
            )
            self._supervise()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        logger.info("stopped %d worker processes", self.processes)
        return self.code

    def _supervise(self) -> None:
        delays: dict[int, float] = {}  # index -> the delay before its next replacement
        while self.children:
            pid, status = os.wait()  # resumed after a signal's handler (PEP 475)
            if pid not in self.children:
                continue
            index, control, started_at = self.children.pop(pid)
            os.close(control)
            code = os.waitstatus_to_exitcode(status)
            if code == EXIT_OK or self.stopping:
                self.code = max(self.code, EXIT_CRASH if code else EXIT_OK)
                continue
            if code == EXIT_USAGE:  # its settings (a metrics port in use, ...): a replacement would fail alike
                logger.error(
                    "worker process %d (pid %d) %s: stopping the others", index + 1, pid, describe_exit(status)
                )
                self.code = EXIT_USAGE
                self.stopping = True
                self._tell_all(STOP)
                continue
            if self.burst:
                logger.error("worker process %d (pid %d) %s", index + 1, pid, describe_exit(status))
                self.code = EXIT_CRASH
                continue
            delay = FIRST_RESTART_DELAY
            if time.monotonic() - started_at < YOUNG:
                delay = min(delays.get(index, FIRST_RESTART_DELAY / 2) * 2, MAX_RESTART_DELAY)
            delays[index] = delay
            logger.warning(
                "worker process %d (pid %d) %s: starting another in %gs", index + 1, pid, describe_exit(status), delay
            )
            if self._sleep(delay):
                self._fork(index)

    def _sleep(self, seconds: float) -> bool:
        """Wait ``seconds`` unless a stop signal comes; True if none came."""
        deadline = time.monotonic() + seconds
        while not self.stopping and time.monotonic() < deadline:
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
        return not self.stopping

    def _fork(self, index: int) -> None:
        reader, writer = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        # Signals wait until the child has set its own dispositions (one between the fork and that would run
        # this parent's handler in the child) and the parent has the child in its table (so a stop reaches it).
        signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
        try:
            pid = os.fork()
            if pid == 0:
                self._child(index, reader, writer)  # never returns
            os.close(reader)
            self.children[pid] = (index, writer, time.monotonic())
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)

    def _child(self, index: int, reader: int, writer: int) -> None:
        code = EXIT_CRASH
        try:
            for sig in SIGNALS:
                signal.signal(sig, signal.SIG_IGN)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
            # Only the parent may hold a pipe's write end, or a sibling would keep it open past the parent.
            for fd in [writer, *(control for _, control, _ in self.children.values())]:
                os.close(fd)
            self.children.clear()
            code = self.serve(Member(index, reader))
        except BaseException:
            logger.exception("worker process %d crashed", index + 1)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)

    def _on_signal(self, signum, _frame) -> None:
        name = signal.Signals(signum).name
        self.signals += 1
        self.stopping = True
        if self.signals == 1:
            logger.info(
                "%s received: stopping %d worker processes; running jobs get up to %gs to finish (send it again "
                "to release them now)",
                name,
                len(self.children),
                self.shutdown_timeout,
            )
            self._tell_all(STOP)
        else:
            logger.warning("%s received again: releasing running jobs now", name)
            self._tell_all(STOP_NOW)

    def _tell_all(self, word: bytes) -> None:
        for _, control, _ in self.children.values():
            with contextlib.suppress(OSError):  # that process has exited; the wait reaps it
                os.write(control, word)
