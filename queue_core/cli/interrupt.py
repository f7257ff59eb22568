"""Ctrl-C during an admin-CLI command that changes jobs in batches (a bulk ``--query`` action, ``prune``).

Python's default turns ctrl-C into KeyboardInterrupt wherever the command is: the batch in hand is rolled
back, and the batches already committed stay done, unsaid (``exit_with`` ends quietly, exit 130). While a
``StopOnInterrupt`` is entered, the first ctrl-C only asks to stop: the batch in hand finishes, no other
begins, and the command says how far it got. A second ctrl-C interrupts at once, as before.
"""

from __future__ import annotations

import signal
import threading


class StopOnInterrupt:
    """``keep_going`` is an ``on_batch`` callback: False once ctrl-C was pressed (and then ``stopped``)."""

    def __init__(self) -> None:
        self.asked = False
        self.stopped = False
        self._previous = None

    def __enter__(self) -> StopOnInterrupt:
        if threading.current_thread() is threading.main_thread():  # only there can a handler be set
            self._previous = signal.signal(signal.SIGINT, self._ask)
        return self

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def _ask(self, signum, frame) -> None:
        if self.asked:
            raise KeyboardInterrupt
        self.asked = True

    def keep_going(self, _progress=None) -> bool:
        if self.asked:
            self.stopped = True
        return not self.asked
