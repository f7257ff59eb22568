"""What the worker command opens, and who a pool's processes are: the queue (a database or the HTTP API)
and the metrics server, each process's worker id, and taking back the jobs of a process that died.

Apart from ``cli`` (its arguments and its run) so that each stays short to read.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import peewee as pw

from ..cli.args import open_for_command
from ..errors import QueueError
from ..store.database import DATABASE_ERRORS, ReconnectingPostgresqlDatabase, schema_change
from ..store.repository import JobRepository
from ..validation import validate_token
from .logs import logger
from .loop import Worker, default_worker_id
from .protocol import JobQueue


def member_worker_id(worker_id: str, index: int) -> str:
    """The worker id of a pool's process ``index`` (0-based) when ``--worker-id`` names the pool."""
    return f"{worker_id}-{index + 1}"


def worker_id_of(args, index: int | None, pid: int | None = None) -> str:
    """The id a worker of ``args`` runs under: ``--worker-id`` (``ID-k`` for a pool's process ``index`` k,
    whose replacement is ``ID-k`` again), else ``host-pid`` of this process or of ``pid``."""
    if args.worker_id is None:
        return default_worker_id(pid)
    return args.worker_id if index is None else member_worker_id(args.worker_id, index)


def take_back(queue: JobRepository, args, index: int, dead: int) -> None:
    """A replacement's first act: the jobs its predecessor (pool process ``index``, pid ``dead``) held go back
    now (its parent saw it die: they need not wait ``--stale-after`` for the reaper), as a reap would take
    them back, and its row shows it stopped. Best effort: after a database error here the reaper still takes
    them back once they are stale."""
    worker_id = worker_id_of(args, index, dead)
    try:
        reaped = queue.reap_worker(worker_id, f"its process (pid {dead}) died")
    except DATABASE_ERRORS as exc:
        logger.warning("could not take back the jobs of worker %s, whose process died: %s", worker_id, exc)
        return
    if reaped:
        logger.warning("took back %d job(s) of worker %s, whose process (pid %d) died", reaped, worker_id, dead)


def take_back_unreplaced(args, index: int, dead: int) -> None:
    """``--burst``, or a pool that is stopping: the pool's parent does a replacement's first act
    (``take_back``) for a process that died, since none replaces it; else its jobs stayed running, and it
    showed running in ``workers``, until ``--stale-after``. The parent holds no connection (one would cross
    the next fork): it opens one for this, after the last fork (a burst forks no replacement, nor does a
    stopping pool). Over ``--api`` the jobs are left to the reaper, as a replacement leaves them."""
    if args.api:
        return
    try:
        queue, _database, close = open_queue(args, create=False)  # what the pool started on, not a new file
    except QueueError as exc:
        logger.warning("could not take back the jobs of worker process %d (pid %d): %s", index + 1, dead, exc)
        return
    try:
        take_back(queue, args, index, dead)
    finally:
        close()


def start_metrics(worker: Worker, port: int | None):
    """With ``--metrics-port``: the worker's metrics, subscribed to its events and served; else None."""
    if port is None:
        return None
    from .metrics import WorkerMetrics  # prometheus_client only for a worker that serves metrics

    metrics = WorkerMetrics()
    worker.subscribe(metrics.on_event)
    try:
        metrics.serve(port)
    except OSError as exc:
        raise QueueError(f"cannot serve metrics on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    logger.info("serving metrics on http://127.0.0.1:%d/metrics", port)
    return metrics


def open_queue(args, *, create: bool = True) -> tuple[JobQueue, pw.Database | None, Callable[[], None]]:
    """The queue to work on, its database (None over the HTTP API) and how to close it; ``create`` as
    ``open_database``'s (False: a SQLite file not there, or a database without the tables, is an error)."""
    if args.api:
        # Imported here: the HTTP client pulls in httpx and FastAPI's models, ~0.4 s of start-up that a
        # worker on the database never needs (measured by python -m tests.bench, burst drains).
        from ..client import HttpQueue

        token = args.token or os.environ.get("QUEUE_API_TOKEN") or None
        if token is not None and args.token is None:
            validate_token("QUEUE_API_TOKEN", token)  # --token was checked by argparse
        queue = HttpQueue(args.api, token=token)
        try:
            queue.check()  # an unreachable server or a refused token: one line now, not an error per poll
        except QueueError:
            queue.close()
            raise
        return queue, None, queue.close
    db = open_for_command(args.db, create=create)
    if done := schema_change(db, args.db):
        logger.info("%s", done)  # the first open of a new database, or the first after an upgrade of queue_core
    if isinstance(db, ReconnectingPostgresqlDatabase):
        db.use_generic_plans()  # this program's own database: every statement on it is the worker's
    return JobRepository(db), db, db.close
