"""Wake-ups on SQLite: an idle worker hears of other connections' commits in milliseconds, without a busy poll.

SQLite has no NOTIFY. ``PRAGMA data_version`` on a connection of its own answers a new number once any
other connection has committed a change: it reads the WAL index in shared memory (no disk read, no lock,
~10 µs here). A daemon thread asks every ``interval`` (20 ms) and calls ``on_change()`` when the number
moved, so an idle worker's claim threads wake and claim a new job within about that: ~50 cheap checks a
second, far under 1 % of a core. A claim that finds nothing writes no page and so moves nobody's number:
idle workers do not wake each other. Polling stays the fallback, as with PostgreSQL's listener.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Callable
from urllib.parse import quote

import peewee as pw

from .wakeup import WakeupThread

WATCH_INTERVAL = 0.02  # seconds between data_version checks
REOPEN_DELAY = 1.0  # seconds before re-opening a connection that failed

log = logging.getLogger(__name__)


class ChangeWatcher(WakeupThread):
    """A daemon thread that calls ``on_change()`` whenever another connection commits to the database file."""

    def __init__(self, path: str, on_change: Callable[[], None], *, interval: float = WATCH_INTERVAL):
        super().__init__(on_change, name="queue-watcher")
        self._path = path
        self._interval = interval

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self._watch()
            except sqlite3.Error as exc:
                self._listening.clear()
                log.warning("change watcher failed (%s); polling covers until it is back", exc)
                self._stopping.wait(REOPEN_DELAY)

    def _watch(self) -> None:
        connection = sqlite3.connect(*opening(self._path), isolation_level=None, check_same_thread=False)
        try:
            read = connection.cursor()
            version = read.execute("PRAGMA data_version").fetchone()[0]
            self._listening.set()
            while not self._stopping.wait(self._interval):
                now = read.execute("PRAGMA data_version").fetchone()[0]
                if now != version:
                    version = now
                    self._wake()
        finally:
            connection.close()


def opening(path: str) -> tuple[str, bool]:
    """``sqlite3.connect``'s database and ``uri`` for the file at ``path``, never made by the open: a watcher
    that (re)opens after the file was moved or deleted under its worker would otherwise make a new, empty one
    at the path, where an operator may be putting the file back (it fails instead, and tries again)."""
    if path in ("", ":memory:") or path.startswith("file:"):
        return path, path.startswith("file:")
    return f"file:{quote(os.path.abspath(path))}?mode=rw", True


def watch_for_changes(db: pw.Database, on_change: Callable[[], None]) -> ChangeWatcher | None:
    """Start a watcher calling ``on_change`` on SQLite; None on other databases (PostgreSQL has LISTEN)."""
    if not isinstance(db, pw.SqliteDatabase):
        return None
    return ChangeWatcher(db.database, on_change).start()
