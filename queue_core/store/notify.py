"""Wake-ups on PostgreSQL: ``JobRepository`` NOTIFYs when a job becomes claimable, idle workers LISTEN.

Polling stays the fallback: a notification lost while the listener reconnects costs at most one poll
interval, never a job. SQLite has no such channel: ``listen_for_jobs`` gives it store.watch's watcher.
"""

from __future__ import annotations

import logging
import selectors
import socket
from collections.abc import Callable

import peewee as pw

from .database import driver_reason
from .wakeup import WakeupThread
from .watch import ChangeWatcher, watch_for_changes

# One channel per database; each notification's payload is the schema of the queue that has new work.
JOBS_CHANNEL = "queue_core_jobs"
RECONNECT_DELAY = 1.0  # seconds before the first attempt to re-open a lost listening connection
RECONNECT_MAX_DELAY = 5.0  # the wait doubles up to this while the database stays away (polling covers)

log = logging.getLogger(__name__)


class JobListener(WakeupThread):
    """A daemon thread that LISTENs on its own connection and calls ``on_job()`` for every notification.

    ``on_job`` runs on the listener thread: keep it quick (``Worker.wakeup`` only sets an event).
    """

    def __init__(self, db: pw.PostgresqlDatabase, on_job: Callable[[], None]):
        if not isinstance(db, pw.PostgresqlDatabase):
            raise TypeError("JobListener needs a PostgreSQL database; SQLite workers poll")
        super().__init__(on_job, name="queue-listener")
        # The same connection settings as the queue's own connections (conninfo URL, options).
        self._conninfo = db.database
        self._connect_params = dict(db.connect_params)
        self._bell, self._ring = socket.socketpair()  # stop() rings: the thread's wait ends at once

    def _run(self) -> None:
        import psycopg

        delay, lost = RECONNECT_DELAY, False
        try:
            while not self._stopping.is_set():
                try:
                    with psycopg.connect(self._conninfo, autocommit=True, **self._connect_params) as conn:
                        schema = conn.execute("SELECT current_schema()").fetchone()[0]
                        conn.execute(f"LISTEN {JOBS_CHANNEL}")
                        self._listening.set()
                        if lost:
                            log.info("job listener is listening again")
                        delay, lost = RECONNECT_DELAY, False
                        self._serve(conn, schema)
                except psycopg.Error as exc:
                    self._listening.clear()
                    # Said once an outage, in one line: it said so at each try, every second, in three lines.
                    say = log.debug if lost else log.warning
                    say("job listener lost its connection (%s); polling covers until it is back", driver_reason(exc))
                    lost = True
                    self._stopping.wait(delay)
                    delay = next_reconnect_delay(delay)
        finally:
            self._bell.close()

    def _serve(self, conn, schema: str) -> None:
        """Wait on the connection's socket and on the bell together: idle, the thread takes no CPU, and a stop
        ends it at once (it waited in ``notifies(timeout=0.2)`` before, waking five times a second for a stop
        that every worker's stop then waited up to 0.2 s for). A closed connection makes the socket readable,
        and the next read raises: the caller reconnects."""
        with selectors.DefaultSelector() as waiting:
            waiting.register(conn.fileno(), selectors.EVENT_READ)
            waiting.register(self._bell, selectors.EVENT_READ)
            while not self._stopping.is_set():
                for notification in conn.notifies(timeout=0):  # those read already, then those the socket holds
                    if notification.payload == schema:  # not another queue's, in another schema
                        self._wake()
                waiting.select()

    def stop(self, timeout: float | None = None) -> None:
        self._stopping.set()
        try:
            self._ring.send(b"x")
            self._ring.close()
        except OSError:  # stopped before: nothing waits on the bell any more
            pass
        super().stop(timeout)


def next_reconnect_delay(delay: float) -> float:
    """The wait before the next try to reconnect, after one more that failed: doubles, up to the bound."""
    return min(RECONNECT_MAX_DELAY, delay * 2)


def listen_for_jobs(db: pw.Database, on_job: Callable[[], None]) -> JobListener | ChangeWatcher | None:
    """Start a listener calling ``on_job`` on PostgreSQL, or on SQLite a watcher of other connections'
    commits (store.watch); None on any other database (polling only)."""
    if not isinstance(db, pw.PostgresqlDatabase):
        return watch_for_changes(db, on_job)
    return JobListener(db, on_job).start()
