"""``--processes N``: one worker command, N worker processes forked from it once start-up is done.

Python runs one thread of a process at a time, so a machine with several cores runs several worker
processes. Started one by one, each pays the interpreter's start-up and the imports (~0.15 s of CPU with
psycopg); forked from one that has paid them, each begins with its modules and handlers loaded and only opens
its own connections. The parent is a supervisor: it holds no connection and runs no job, and a process that
dies while the pool is not stopping is replaced (after 1 s, doubling up to 30 s while replacements keep dying
young; an exit 0 too, which only a burst's process makes on its own), unless the pool runs ``--burst`` or is
stopping: then the parent takes back the jobs it held (``on_unreplaced``).

Stopping: the processes' own SIGINT, SIGTERM and SIGHUP do nothing, so that a terminal's Ctrl-C or hang-up
or a service manager's SIGTERM, which reach the whole process group, count once, not twice (a second signal
releases running jobs). The parent passes each signal it receives to every process over a pipe of its own:
the first stops them gracefully, the next releases their running jobs now; a process whose parent dies (the
pipe closes) stops gracefully. A SIGHUP ignored when the pool started (``nohup``) stays ignored, by all.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from .logs import logger
from .loop import Worker
from .signals import STOP_SIGNALS, stop_signals

STOP, STOP_NOW = b"s", b"n"  # what the parent writes to a process's pipe
WORDS = (STOP, STOP_NOW)  # in the order a process must read them
SIGNALS = STOP_SIGNALS  # blocked while a process is forked
FIRST_RESTART_DELAY, MAX_RESTART_DELAY = 1.0, 30.0  # seconds before a dead process is replaced
YOUNG = 30.0  # seconds: a replacement that dies sooner doubles the next delay
EXIT_OK, EXIT_CRASH, EXIT_USAGE = 0, 1, 2


@dataclass(frozen=True)
class Member:
    """What a forked process knows of its place in the pool."""

    index: int  # 0 .. N-1 (1 .. N in log lines); a replacement keeps the index of the process it replaces
    control: int  # the read end of its pipe from the parent
    replaces: int | None = None  # the pid of the process that died, for a replacement

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


def flush_log() -> None:
    """What a process must write before ``os._exit``: the log lines waiting (worker.logs), stdout, stderr."""
    for stream in [*logging.getLogger().handlers, sys.stdout, sys.stderr]:
        with contextlib.suppress(Exception):  # a closed pipe: nothing more can be said
            stream.flush()


def describe_exit(status: int) -> str:
    code = os.waitstatus_to_exitcode(status)
    if code >= 0:
        return f"exited with code {code}"
    try:
        return f"was killed by {signal.Signals(-code).name}"
    except ValueError:  # a real-time signal has no name
        return f"was killed by signal {-code}"


def ignore(_signum, _frame) -> None:
    """A process's SIGINT, SIGTERM and SIGHUP: nothing (its parent's word stops it). A handler, not SIG_IGN, which a
    program a job starts would inherit, and then not stop on its own SIGTERM."""


@dataclass
class Child:
    index: int
    control: int  # the write end of its pipe
    started_at: float
    replaces: int | None  # forked to replace the process of this pid, which died
    told: int = 0  # how many of WORDS it has been sent


class WorkerPool:
    """Forks ``processes`` processes, each running ``serve(member)`` (which returns an exit code), and
    supervises them until they have all exited; ``run()`` returns the pool's exit code: 0 when every process
    exited 0, 2 when one of the first found a problem with its settings (exit 2: the rest are stopped, none
    replaced; a replacement's exit 2, as when the database is down for a while, is a crash like any other),
    else 1. ``exit_hooks``: a process runs the ``atexit`` functions before it exits, as a worker of its own
    would (only where the pool owns the program: a caller's hooks are not the processes' to run).
    ``on_unreplaced(index, pid)``: called in the parent for a process that died and is not replaced (a
    burst, or a pool that is stopping: no fork follows), to do what a replacement does first: take back the
    jobs it held. ``gone()``: what became of the database the pool was started on (a SQLite file moved,
    deleted or replaced), else None; asked before a replacement is forked: a pool whose file went stops,
    exit 1, as its processes do, rather than fork one that would open (or make) whatever is at the path."""

    def __init__(
        self,
        processes: int,
        serve: Callable[[Member], int],
        *,
        burst: bool,
        shutdown_timeout: float,
        exit_hooks: bool = False,
        on_unreplaced: Callable[[int, int], None] | None = None,
        gone: Callable[[], str | None] | None = None,
    ):
        self.processes, self.serve, self.burst, self.shutdown_timeout = processes, serve, burst, shutdown_timeout
        self.exit_hooks, self.on_unreplaced, self.gone = exit_hooks, on_unreplaced, gone
        self.children: dict[int, Child] = {}  # by pid
        self.signals = 0  # stop signals received
        self.wanted = 0  # how many of WORDS every process is to be sent
        self.telling = False  # _tell_all is writing them
        self.stopping = False  # told to stop (by a signal, or a process that could not start): no replacements
        self.code = EXIT_OK
        self.handled: tuple[signal.Signals, ...] = ()  # the signals that stop the pool (stop_signals)

    def run(self) -> int:
        self.handled = stop_signals()
        previous = {sig: signal.signal(sig, self._on_signal) for sig in self.handled}
        try:
            for index in range(self.processes):
                self._fork(index)
            pids = ",".join(str(pid) for pid in self.children)
            logger.info("started %d worker processes: pids %s", len(self.children), pids)
            self._supervise()
            # Said before the handlers are put back: a signal meanwhile is logged, not a kill that loses the line.
            logger.info("stopped %d worker processes", self.processes)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return self.code

    def _supervise(self) -> None:
        delays: dict[int, float] = {}  # index -> the delay of its last replacement
        due: dict[int, tuple[float, int]] = {}  # index -> (when its replacement is forked, the dead one's pid)
        while self.children or due:
            if self.stopping:
                for index, (_at, dead) in due.items():
                    self._take_back(index, dead)  # died just before the stop: no replacement will take them back
                due.clear()  # (also when no process is left to wait for: the last ones died before the stop)
                if not self.children:
                    break
            for index, (at, dead) in list(due.items()):
                if at <= time.monotonic():
                    del due[index]
                    if not self._database_gone():
                        self._fork(index, replaces=dead)
            if due:  # a replacement to fork meanwhile: look for exits without blocking
                pid, status = os.waitpid(-1, os.WNOHANG) if self.children else (0, 0)
                if pid == 0:
                    time.sleep(0.05)
                    continue
            else:
                pid, status = os.wait()  # resumed after a signal's handler (PEP 475)
            child = self.children.pop(pid, None)
            if child is None:
                continue
            os.close(child.control)
            code = os.waitstatus_to_exitcode(status)
            what = f"worker process {child.index + 1} (pid {pid}) {describe_exit(status)}"
            # Exit 0 is a process's end only where it can end on its own (a burst) or was told to (a stop); else
            # it died (a handler's os._exit(0), a library's exit) and is replaced like any other death.
            if self.stopping or (code == EXIT_OK and self.burst):
                self.code = max(self.code, code if code in (EXIT_OK, EXIT_USAGE) else EXIT_CRASH)
                if code not in (EXIT_OK, EXIT_USAGE):
                    self._take_back(child.index, pid)  # died in a stop: a stopping pool replaces none
            elif code == EXIT_USAGE and child.replaces is None:
                # Its settings (a metrics port in use...): a replacement would fail alike.
                logger.error("%s: stopping the others", what)
                self.code, self.stopping = EXIT_USAGE, True
                self._tell_all(STOP)
            elif self.burst:
                logger.error("%s", what)
                self.code = EXIT_CRASH
                self._take_back(child.index, pid)
            elif self._database_gone(f"{what}, and "):
                pass  # its jobs are in the file that went: nothing to take back at the path
            else:
                delay = FIRST_RESTART_DELAY
                if time.monotonic() - child.started_at < YOUNG:
                    delay = min(delays.get(child.index, FIRST_RESTART_DELAY / 2) * 2, MAX_RESTART_DELAY)
                delays[child.index] = delay
                due[child.index] = (time.monotonic() + delay, pid)
                logger.warning("%s: starting another in %gs", what, delay)

    def _database_gone(self, died: str = "") -> bool:
        """Whether the database's file went (``gone``); if so the pool stops, exit 1, once, saying why. A
        replacement would open whatever is at the path now, or make a new, empty file there, and run on it
        while the queue's jobs sit in the moved file: where an operator may be putting the file back."""
        why = None if self.gone is None else self.gone()
        if why is None:
            return False
        logger.error(
            "%s%s: stopping the pool, none replaced. Put the file back (with its -wal and -shm files) and start"
            " the pool again",
            died,
            why,
        )
        self.code, self.stopping = EXIT_CRASH, True
        self._tell_all(STOP)
        return True

    def _take_back(self, index: int, pid: int) -> None:
        """``on_unreplaced`` for process ``index`` (pid ``pid``), which died; whatever it raises is logged, and
        the pool goes on supervising the others. Not once the database's file went: its jobs are in the
        moved file, and an open at the path would make a new one."""
        if self.on_unreplaced is None or (self.gone is not None and self.gone() is not None):
            return
        try:
            self.on_unreplaced(index, pid)
        except Exception:
            logger.exception("could not take back the jobs of worker process %d (pid %d)", index + 1, pid)

    def _fork(self, index: int, *, replaces: int | None = None) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        # Signals wait until the child has set its own handlers (one between the fork and that would run this
        # parent's handler in the child) and the parent has the child in its table (so a stop reaches it); a
        # stop that came before is seen here, and no process is forked after it.
        signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
        try:
            if self.stopping:
                return
            reader, writer = os.pipe()
            pid = os.fork()
            if pid == 0:
                self._child(Member(index, reader, replaces), writer)  # never returns
            os.close(reader)
            self.children[pid] = Child(index, writer, time.monotonic(), replaces)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)

    def _child(self, member: Member, writer: int) -> None:
        code = EXIT_CRASH
        try:
            for sig in self.handled:
                signal.signal(sig, ignore)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
            # Only the parent may hold a pipe's write end, or a sibling would keep it open past the parent.
            for fd in [writer, *(child.control for child in self.children.values())]:
                os.close(fd)
            self.children.clear()
            code = self.serve(member)
        except BaseException:
            logger.exception("worker process %d crashed", member.index + 1)
        finally:
            try:
                if self.exit_hooks:
                    atexit._run_exitfuncs()  # what the interpreter's exit would run (logging's flush, a handler's)
            finally:
                flush_log()
                os._exit(code)  # not the parent's stack: its finally blocks and its caller are not this process's

    def _on_signal(self, signum, _frame) -> None:
        name = signal.Signals(signum).name
        self.signals += 1
        self.stopping = True
        first = self.signals == 1
        self._tell_all(STOP if first else STOP_NOW)  # before the line, which may fail (signals.StopOnSignal)
        with contextlib.suppress(Exception):
            if first:
                logger.info(
                    "%s received: stopping %d worker processes; running jobs get up to %gs to finish (send it "
                    "again to release them now)",
                    name,
                    len(self.children),
                    self.shutdown_timeout,
                )
            else:
                logger.warning("%s received again: releasing running jobs now", name)

    def _tell_all(self, word: bytes) -> None:
        """Send each process ``word``, and first the words before it that it was not sent, in order.

        A signal's handler runs between any two steps of the main thread, so a second signal's runs inside the
        first's, while its words are being written (blocking the signals would not stop it: another thread
        may take one). A process told "stop now" before "stop" would take the second for the first (a stop
        with no time to finish, reported as the shutdown timeout's). So a call made inside another only
        raises the level wanted, and the outer call writes every word up to it; each word is counted sent
        before it is written, so none is written twice."""
        self.wanted = max(self.wanted, WORDS.index(word) + 1)
        if self.telling:
            return  # the call this one runs inside sends it
        self.telling = True
        try:
            for child in list(self.children.values()):
                while child.told < self.wanted:
                    next_word = WORDS[child.told]
                    child.told += 1
                    with contextlib.suppress(OSError):  # that process has exited; the wait reaps it
                        os.write(child.control, next_word)
        finally:
            self.telling = False
        if any(child.told < self.wanted for child in self.children.values()):
            self._tell_all(word)  # raised after the loop had passed a process
