"""Handlers for the chaos test: every execution is written to a ledger, in its own transaction, first."""

from __future__ import annotations

import os
import random
import sqlite3
import time

from queue_core.handlers import current_job, handler

LEDGER = os.environ.get("CHAOS_LEDGER", "")


def ledger() -> sqlite3.Connection:
    con = sqlite3.connect(LEDGER, timeout=60, isolation_level=None)
    con.execute("PRAGMA journal_mode=wal")
    con.execute("CREATE TABLE IF NOT EXISTS executions (job_id INTEGER, attempt INTEGER, worker_id TEXT, pid INTEGER)")
    return con


@handler("record")
def record(payload: dict) -> None:
    job = current_job()
    con = ledger()
    try:
        con.execute("INSERT INTO executions VALUES (?, ?, ?, ?)", (job.id, job.attempt, job.worker_id, os.getpid()))
    finally:
        con.close()
    time.sleep(random.uniform(0, payload.get("max_sleep", 0.01)))
