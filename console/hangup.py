"""A terminal that hangs up under the console (an SSH connection dropped, a tmux server killed).

The kernel then sends the console SIGHUP and, right after it, SIGCONT, and every read or write of the terminal
fails (EIO). Textual's driver takes any SIGCONT for the end of a ctrl+z and starts its output thread again: on a
terminal that is gone that thread dies at its first write, and the app's exit waited for ever on its queue
(the process left running, its embedded worker's jobs claimed until ``--stale-after``). So the console
handles SIGHUP itself, at once rather than on the event loop (Python runs the handlers of both signals in
signal-number order, SIGHUP's first): when the terminal is gone it points the descriptors that were the
terminal at ``/dev/null``, so the writes of the way out go nowhere instead of failing, and tells the SIGCONT
handler to resume nothing. A SIGHUP sent with the terminal still there (``kill -HUP``) leaves the terminal to
Textual, which puts it back as it found it.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

STANDARD_FDS = (0, 1, 2)


def terminal_fds() -> tuple[int, ...]:
    """The standard descriptors that are a terminal now."""
    return tuple(fd for fd in STANDARD_FDS if _is_terminal(fd))


def detach_hung_up(fds: tuple[int, ...]) -> bool:
    """Point each of ``fds`` (terminals once) that is no longer a terminal at ``/dev/null``; True if any was."""
    gone = [fd for fd in fds if not _is_terminal(fd)]
    if gone:
        null = os.open(os.devnull, os.O_RDWR)
        try:
            for fd in gone:
                os.dup2(null, fd)
        finally:
            os.close(null)
    return bool(gone)


def _is_terminal(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


class HangUpGuard:
    """Installs the SIGHUP handler (``on_hang_up`` called on the event loop, through ``call_soon``, which
    must be safe from a signal handler: ``loop.call_soon_threadsafe``) and a SIGCONT handler that passes the
    signal on to the one before it unless the terminal hung up. ``uninstall`` puts both back."""

    def __init__(self, call_soon: Callable[[Callable[[], None]], object], on_hang_up: Callable[[], None]):
        self.call_soon, self.on_hang_up = call_soon, on_hang_up
        self.fds = terminal_fds()
        self.hung_up = False
        self.previous: dict[int, object] = {}

    def install(self) -> None:
        self.previous = {
            signal.SIGHUP: signal.signal(signal.SIGHUP, self._on_sighup),
            signal.SIGCONT: signal.signal(signal.SIGCONT, self._on_sigcont),
        }

    def uninstall(self) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)
        self.previous = {}

    def _on_sighup(self, _signum, _frame) -> None:
        if detach_hung_up(self.fds):
            self.hung_up = True
        self.call_soon(self.on_hang_up)

    def _on_sigcont(self, signum, frame) -> None:
        previous = self.previous.get(signal.SIGCONT)
        if self.hung_up or not callable(previous):
            return
        previous(signum, frame)
