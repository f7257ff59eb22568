"""Wake-ups on PostgreSQL: ``JobRepository`` NOTIFYs when a job becomes claimable, idle workers LISTEN.

Polling stays the fallback: a notification lost while the listener reconnects costs at most one poll
interval, never a job. SQLite has no such channel: ``listen_for_jobs`` gives it store.watch's watcher.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import peewee as pw

from .wakeup import WakeupThread
from .watch import ChangeWatcher, watch_for_changes

# One channel per database; each notification's payload is the schema of the queue that has new work.
JOBS_CHANNEL = "queue_core_jobs"
RECONNECT_DELAY = 1.0  # seconds between attempts to re-open a lost listening connection
# Seconds: how soon stop() takes effect. Every worker stop waits for it, now that each Worker listens itself;
# an idle listener wakes this often for it: 0.5 % of a core idle at 0.2 s, 2 % at 0.05 s, 0.1 % at 0.5 s.
CHECK_STOP_EVERY = 0.2

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

    def _run(self) -> None:
        import psycopg

        while not self._stopping.is_set():
            try:
                with psycopg.connect(self._conninfo, autocommit=True, **self._connect_params) as conn:
                    schema = conn.execute("SELECT current_schema()").fetchone()[0]
                    conn.execute(f"LISTEN {JOBS_CHANNEL}")
                    self._listening.set()
                    while not self._stopping.is_set():
                        for notification in conn.notifies(timeout=CHECK_STOP_EVERY):
                            if notification.payload == schema:  # not another queue's, in another schema
                                self._wake()
            except psycopg.Error as exc:
                self._listening.clear()
                log.warning("job listener lost its connection (%s); polling covers until it is back", exc)
                self._stopping.wait(RECONNECT_DELAY)


def listen_for_jobs(db: pw.Database, on_job: Callable[[], None]) -> JobListener | ChangeWatcher | None:
    """Start a listener calling ``on_job`` on PostgreSQL, or on SQLite a watcher of other connections'
    commits (store.watch); None on any other database (polling only)."""
    if not isinstance(db, pw.PostgresqlDatabase):
        return watch_for_changes(db, on_job)
    return JobListener(db, on_job).start()
