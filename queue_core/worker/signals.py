"""Stop signals: the first one stops a worker gracefully, the next ones release its running jobs now.

The headless worker (``cli``, and a ``--processes`` pool's parent) takes SIGTERM, SIGINT and SIGHUP so.
SIGHUP is the terminal that started it closing (an SSH connection dropped, a tmux session killed): by
default it killed the process at once, its running jobs held until the reaper took them back. A SIGHUP the
process was started ignoring (``nohup``) stays ignored. ``Worker.run`` on the main thread takes Ctrl-C so
while Ctrl-C raises KeyboardInterrupt (``ctrl_c``): a KeyboardInterrupt in the middle of its stop left the
stop half done, its jobs held and heartbeaten while the process lived.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterable
from typing import Protocol

logger = logging.getLogger("queue_core.worker")  # the worker program's log (logs.logger)

_HANG_UP = getattr(signal, "SIGHUP", None)  # none on Windows
# Every signal a stop may come by; a pool blocks them all while it forks.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, *([_HANG_UP] if _HANG_UP is not None else []))


class Stoppable(Protocol):
    """What of a ``Worker`` a stop signal uses (a protocol: ``loop`` imports this module)."""

    shutdown_timeout: float

    @property
    def is_running(self) -> bool: ...

    def request_stop(self, timeout: float | None = None) -> None: ...


def stop_signals() -> tuple[signal.Signals, ...]:
    """The signals that stop the worker program: ``STOP_SIGNALS``, less a SIGHUP this process ignores, as
    under ``nohup``, whose user asked for the worker to outlive the terminal."""
    return tuple(sig for sig in STOP_SIGNALS if sig != _HANG_UP or signal.getsignal(sig) != signal.SIG_IGN)


class StopOnSignal:
    """A signal handler for ``worker``: the first signal asks a graceful stop (running jobs get its shutdown
    timeout), the next ones release its running jobs now. One that comes before the run has started takes
    effect once it has (``started``); one after the run stopped has nothing left to stop, and the process
    goes on with its clean-up instead of dying in the middle of it."""

    def __init__(self, worker: Stoppable):
        self.worker = worker
        self.received: list[str] = []
        self.has_started = False
        self.previous: dict = {}

    def __call__(self, signum, _frame) -> None:
        name = signal.Signals(signum).name
        self.received.append(name)
        stopped = self.has_started and not self.worker.is_running
        # The stop first, then the line that says so: the line could fail (below), and whoever reads it (an
        # operator, a test) may send the next signal as soon as it is written.
        self._stop_as_received()
        try:
            if stopped:
                logger.info("%s received: the worker has stopped already and runs no job; finishing", name)
            elif len(self.received) == 1:
                logger.info(
                    "%s received: stopping; running jobs get up to %gs to finish (send it again to release them now)",
                    name,
                    self.worker.shutdown_timeout,
                )
            else:
                logger.warning("%s received again: releasing running jobs now", name)
        except Exception:
            # A handler runs between any two steps of the main thread, also inside its write to stderr: the
            # logging module's report of the nested write's error ("reentrant call inside BufferedWriter")
            # raised out of it, into the code it interrupted, and the stop it had not asked yet was lost (a
            # second signal then waited out the whole shutdown timeout). The line is lost, never the stop.
            pass

    def started(self) -> None:
        """The worker's run has started: a signal received before now stops it."""
        self.has_started = True
        self._stop_as_received()

    def _stop_as_received(self) -> None:
        if self.received:
            self.worker.request_stop(None if len(self.received) == 1 else 0)

    def install(self, signals: Iterable[signal.Signals]) -> dict:
        """Handle ``signals`` with this; returns their previous handlers."""
        for sig in signals:
            self.previous[sig] = signal.signal(sig, self)
        return self.previous

    def restore(self) -> None:
        """Put back the previous handlers, where this one was not replaced meanwhile."""
        for sig, handler in self.previous.items():
            if signal.getsignal(sig) is self:
                signal.signal(sig, handler)
        self.previous = {}


def ctrl_c(worker: Stoppable) -> StopOnSignal | None:
    """For ``Worker.run``: Ctrl-C (SIGINT) taken as a stop signal while the run lasts (installed; ``restore``
    it after), if this is the main thread and Ctrl-C raises KeyboardInterrupt, Python's default. A handler of
    the caller's own (the worker program's, a framework's) is left alone. None if not installed."""
    if threading.current_thread() is not threading.main_thread():
        return None  # signals reach the main thread only; a run elsewhere is stopped by its caller
    try:
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            return None
        handler = StopOnSignal(worker)
        handler.install([signal.SIGINT])
    except ValueError:  # not the main interpreter: no signal handlers here
        return None
    return handler
