"""The worker registry of ``JobRepository``: each worker registers, refreshes its row with its heartbeat and
marks a clean stop, so operators see which workers are alive (``JobReads.workers``).

A mixin of the repository, like store.controls: it reads the repository's models and clock.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime

from ..errors import ValidationError
from ..rules import WORKER_RUNNING, worker_state
from ..validation import (
    MAX_INT32,
    MAX_TEXT_CHARS,
    validate_count,
    validate_positive_int,
    validate_printable,
    validate_queue_names,
    validate_seconds,
    validate_types,
    validate_worker_id,
)

EVERY_QUEUE = "*"  # a worker's queues when it serves them all


def stored_queues(queues: Iterable[str] | str | None) -> str:
    """A worker's queues as its row stores them: a JSON list of names, or "*" for every queue."""
    if queues is None or queues == EVERY_QUEUE:
        return EVERY_QUEUE
    try:
        if isinstance(queues, str | bytes):
            raise TypeError
        names = list(queues)  # a dict of slots per queue gives its names
    except TypeError:
        raise ValidationError("queues", 'must be a list of queue names, or None or "*" for every queue') from None
    # At most a claim's: 100,000 names were stored (and every GET /workers sent 1.8 MB), for a worker whose
    # claims are refused past 1,000.
    return json.dumps(validate_queue_names(names))


def stored_types(types: Iterable[str] | None) -> str | None:
    """A worker's handler types as stored: a sorted JSON list (the claim's own check of them: a worker
    claims with them all), or None (not said)."""
    names = validate_types(types)
    return None if names is None else json.dumps(sorted(set(names)))


class WorkerRegistry:
    """Register, refresh and stop a worker's row; prune old rows (see ``JobRepository``)."""

    def register_worker(
        self,
        worker_id: str,
        *,
        host: str,
        pid: int,
        queues: Iterable[str] | str | None,
        concurrency: int,
        stale_after: float,
        types: Iterable[str] | None = None,
    ) -> None:
        """Record a starting worker (again, if the id is reused): started and seen now, counters at 0;
        ``types``, the job types it has handlers for (None: not said, taken as every type)."""
        stored = stored_queues(queues)
        now = self.time.sql()
        row = {
            "id": validate_worker_id(worker_id),
            "host": _text("host", host),
            "pid": validate_count("pid", pid, MAX_INT32),
            "queues": stored,
            "concurrency": validate_count("concurrency", validate_positive_int("concurrency", concurrency), MAX_INT32),
            "stale_after": validate_seconds("stale_after", stale_after),
            "started_at": now,
            "last_seen_at": now,
            "stopped_at": None,
            "running": 0,
            "completed": 0,
            "failed": 0,
            "types": stored_types(types),
        }
        Worker = self.WorkerRecord
        preserve = [field for field in Worker._meta.sorted_fields if field.name != "id"]
        Worker.insert(**row).on_conflict(conflict_target=[Worker.id], preserve=preserve).execute()

    def worker_seen(self, worker_id: str, *, running: int, completed: int, failed: int) -> bool:
        """A worker's heartbeat: seen now, with its jobs running now and completed / failed since its start.
        False when the registry has no row for it (never registered, or its row was pruned): nothing written."""
        Worker = self.WorkerRecord
        return bool(
            Worker.update(
                last_seen_at=self.time.sql(),
                running=validate_count("running", running),
                completed=validate_count("completed", completed),
                failed=validate_count("failed", failed),
            )
            .where(Worker.id == validate_worker_id(worker_id))
            .execute()
        )

    def worker_stopped(self, worker_id: str) -> bool:
        """A clean stop: the worker shows as ``stopped`` (its jobs were finished or released). False, as
        ``worker_seen``, when it has no row."""
        Worker = self.WorkerRecord
        now = self.time.sql()
        return bool(
            Worker.update(stopped_at=now, last_seen_at=now, running=0)
            .where(Worker.id == validate_worker_id(worker_id))
            .execute()
        )

    def prune_workers(self, cutoff: datetime) -> int:
        """Delete the rows of stopped or lost workers last seen before ``cutoff``; a running one stays."""
        Worker = self.WorkerRecord
        now = self.now()
        old = Worker.select().where(Worker.last_seen_at < cutoff)
        doomed = [
            row.id
            for row in old
            if worker_state(row.stopped_at, row.last_seen_at, row.stale_after, now) != WORKER_RUNNING
        ]
        if not doomed:
            return 0
        return Worker.delete().where(Worker.id.in_(doomed) & (Worker.last_seen_at < cutoff)).execute()


def _text(field: str, value) -> str:
    # Printable, as worker ids: shown in the CLI's tables and the console, never acted on by a terminal.
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a string of at most {MAX_TEXT_CHARS} printable characters")
    return validate_printable(field, value)
