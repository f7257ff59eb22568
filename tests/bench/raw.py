"""Reference "raw": the queue's own SQL per job on a bare driver connection, no ORM and no worker.

One job per transaction (autocommit), the same schema and indexes as queue_core: the ceiling for a
one-job-per-transaction design on this machine. Also fills tables fast for the drain scenarios.
"""

from __future__ import annotations

from datetime import UTC, datetime

from queue_core.store.models import SQLITE_TIME_FORMAT

INSERT = (
    "INSERT INTO jobs (type, payload, priority, status, retry_count, max_retries, run_at, created_at, updated_at)"
    " VALUES (?, '{}', 0, 'pending', 0, 3, ?, ?, ?)"
)
# What JobRepository.claim does: the due pending job with the highest priority, then due first, then lowest id.
CLAIM = (
    "UPDATE jobs SET status = 'running', worker_id = ?, claimed_at = ?, heartbeat_at = NULL, updated_at = ?"
    " WHERE id IN (SELECT id FROM jobs WHERE status = 'pending' AND run_at <= ?"
    " ORDER BY priority DESC, run_at, id LIMIT 1{lock}) RETURNING *"
)
COMPLETE = (
    "UPDATE jobs SET status = 'completed', updated_at = ?"
    " WHERE id = ? AND status = 'running' AND worker_id = ? AND retry_count = ?"
)


class RawQueue:
    """The per-job statements on one autocommit connection (sqlite3 or psycopg)."""

    def __init__(self, connection, *, postgres: bool):
        self.connection = connection
        self.postgres = postgres
        self.columns = None
        self.insert_sql, self.claim_sql, self.complete_sql = (
            self._dialect(sql)
            for sql in (INSERT, CLAIM.format(lock=" FOR UPDATE SKIP LOCKED" if postgres else ""), COMPLETE)
        )

    def _dialect(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.postgres else sql

    def now(self):
        now = datetime.now(UTC).replace(tzinfo=None)
        return now if self.postgres else now.strftime(SQLITE_TIME_FORMAT)

    def insert_one(self, type: str = "bench-noop") -> None:
        now = self.now()
        self.connection.execute(self.insert_sql, (type, now, now, now))

    def claim_and_complete_one(self, worker_id: str) -> bool:
        now = self.now()
        cursor = self.connection.execute(self.claim_sql, (worker_id, now, now, now))
        row = cursor.fetchone()
        if row is None:
            return False
        if self.columns is None:
            self.columns = [column[0] for column in cursor.description]
        job = dict(zip(self.columns, row, strict=True))  # the whole job, as a worker needs it
        job_id, retry_count = job["id"], job["retry_count"]
        self.connection.execute(self.complete_sql, (self.now(), job_id, worker_id, retry_count))
        return True

    def fill(self, n: int, *, type: str = "bench-noop") -> None:
        """n pending jobs, due now, in one transaction (setup for drains, never timed)."""
        now = self.now()
        sql = self.insert_sql
        rows = [(type, now, now, now)] * n
        if self.postgres:
            with self.connection.transaction(), self.connection.cursor() as cursor:
                cursor.executemany(sql, rows)
        else:
            self.connection.execute("BEGIN IMMEDIATE")
            self.connection.executemany(sql, rows)
            self.connection.execute("COMMIT")


def sqlite_connection(path: str):
    """A bare sqlite3 connection with queue_core's settings: WAL, synchronous=NORMAL, 10 s busy timeout."""
    import sqlite3

    connection = sqlite3.connect(path, isolation_level=None, timeout=10)
    connection.execute("PRAGMA journal_mode = wal")
    connection.execute("PRAGMA synchronous = NORMAL")
    connection.execute("PRAGMA busy_timeout = 10000")
    return connection
