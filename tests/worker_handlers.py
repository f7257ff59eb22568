"""Handlers for the worker tests; real worker processes import this with ``--handlers worker_handlers``.

``record`` writes one row per execution into its own table, so a test can count how often each job ran.
"""

from __future__ import annotations

import os
import threading
import time

import peewee as pw

from queue_core.handlers import current_job, handler
from queue_core.store.database import open_database


class Execution(pw.Model):
    job_id = pw.IntegerField(index=True)
    attempt = pw.IntegerField()
    worker_id = pw.CharField()
    pid = pw.IntegerField()

    class Meta:
        table_name = "test_executions"


_bind_lock = threading.Lock()


def bind(url: str) -> pw.Database:
    db = open_database(url)
    Execution.bind(db)
    return db


def create_table(url: str) -> None:
    """Called by the test before workers start, so processes never race to create it."""
    db = bind(url)
    db.create_tables([Execution])
    db.close()


@handler("record")
def record(payload: dict) -> None:
    with _bind_lock:
        if Execution._meta.database is None:
            bind(os.environ["QUEUE_DB_URL"])
    job = current_job()
    Execution.create(job_id=job.id, attempt=job.attempt, worker_id=job.worker_id, pid=os.getpid())


@handler("die_on_first_attempt")
def die_on_first_attempt(payload: dict) -> None:
    """End this worker process at once with exit code ``payload["code"]`` (no release, no goodbye), on the job's
    first attempt only: a process that crashes under a job, which the next attempt completes."""
    if current_job().attempt == 1:
        os._exit(payload["code"])


@handler("zombie")
def zombie(payload: dict) -> None:
    """Sleep, then fail if this attempt is listed in ``fail_attempts``."""
    time.sleep(payload["seconds"])
    attempt = current_job().attempt
    if attempt in payload.get("fail_attempts", []):
        raise RuntimeError(f"attempt {attempt} failed")


@handler("marked_sleep")
def marked_sleep(payload: dict) -> None:
    """Create the file ``payload["started"]``, then sleep: a test that signals the worker waits for the file,
    because the claim's row says "running" a moment before the worker has taken the job in hand, and a stop
    in that moment rightly gives the job back unstarted."""
    with open(payload["started"], "x"):
        pass
    time.sleep(payload["seconds"])


@handler("gated")
def gated(payload: dict) -> None:
    """Create the file ``payload["started"]``, then wait until the test creates ``payload["release"]`` (at most
    60 s): the job runs for exactly as long as the test needs it to, however loaded the machine."""
    with open(payload["started"], "x"):
        pass
    deadline = time.monotonic() + 60
    while not os.path.exists(payload["release"]) and time.monotonic() < deadline:
        time.sleep(0.01)
