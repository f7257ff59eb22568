"""The thread both wake-up sources run on (PostgreSQL's LISTEN in store.notify, SQLite's data_version watch in
store.watch): started once, stopped once, and a callback that can fail without ending the wake-ups.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class WakeupThread:
    """A daemon thread running ``_run`` (the subclass's loop, which ends when ``_stopping`` is set) and
    calling ``on_wake()`` through ``_wake``; ``_listening`` is set once wake-ups from now on are seen."""

    def __init__(self, on_wake: Callable[[], None], *, name: str):
        self._on_wake = on_wake
        self._stopping = threading.Event()
        self._listening = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        raise NotImplementedError

    def start(self):
        self._thread.start()
        return self

    def wait_listening(self, timeout: float | None = None) -> bool:
        """True once wake-ups are seen (notifications sent, or commits made, from now on)."""
        return self._listening.wait(timeout)

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout: float | None = None) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _wake(self) -> None:
        try:
            self._on_wake()
        except Exception:  # a broken callback must not end the wake-ups; polling would hide it
            log.exception("%s: wake-up callback failed", self._thread.name)
