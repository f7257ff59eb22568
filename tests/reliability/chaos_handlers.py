"""Handlers for the chaos test: every execution is written to a ledger, in its own transaction, first."""

from __future__ import annotations

import asyncio
import os
import random
import sqlite3
import time

from queue_core.handlers import current_job, handler

LEDGER = os.environ.get("CHAOS_LEDGER", "")


def ledger() -> sqlite3.Connection:
    """The ledger, in WAL mode with its table. Four workers open it at once when they start: switching the
    journal mode takes a lock SQLite's busy timeout does not wait for ("database is locked" at once), which
    once failed a job in CI, so setting up is retried rather than left to the handler's error."""
    deadline = time.monotonic() + 60
    while True:
        con = sqlite3.connect(LEDGER, timeout=60, isolation_level=None)
        try:
            con.execute("PRAGMA journal_mode=wal")
            con.execute(
                "CREATE TABLE IF NOT EXISTS executions (job_id INTEGER, attempt INTEGER, worker_id TEXT, "
                "pid INTEGER, started REAL)"  # started: time.time() when the run began, vs a cancel's ack
            )
            return con
        except sqlite3.OperationalError as exc:
            con.close()
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def write_down() -> None:
    job = current_job()
    con = ledger()
    try:
        con.execute(
            "INSERT INTO executions VALUES (?, ?, ?, ?, ?)",
            (job.id, job.attempt, job.worker_id, os.getpid(), time.time()),
        )
    finally:
        con.close()


@handler("record")
def record(payload: dict) -> None:
    write_down()
    time.sleep(random.uniform(0, payload.get("max_sleep", 0.01)))


@handler("slow")
def slow(payload: dict) -> None:
    """Runs past its job's timeout: the worker fails the attempt at the deadline."""
    write_down()
    time.sleep(payload.get("sleep", 1.0))


@handler("long")
async def long(payload: dict) -> None:
    """A coroutine long enough for an operator to cancel it while it runs."""
    write_down()
    await asyncio.sleep(payload.get("sleep", 1.0))


@handler("flaky-once")
def flaky_once(payload: dict) -> None:
    """Fails its first attempt (the soak's operators retry such jobs in bulk), then succeeds."""
    write_down()
    if current_job().attempt < 2:
        raise RuntimeError("flaky: first attempt fails on purpose")
