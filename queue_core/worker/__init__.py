"""The worker: claim -> run the handler -> complete or fail, with heartbeats, reaping and a graceful stop.

``python -m queue_core.worker`` (script ``queue-worker``) runs it headless; see ``queue_core.worker.cli``.

Modules, one role each: ``loop`` (``Worker``: start/stop and the claim threads), ``acks`` (writing outcomes,
retried), ``housekeeping`` (the heartbeat thread: beat, reap, prune), ``events`` (what a worker reports),
``session`` (the state of one start..stop), ``defaults`` (the table of settings), ``protocol`` (``JobQueue``:
what a worker needs of its queue), ``handlers`` (the registry and ``current_job``), ``cli`` (the command).
"""

from .defaults import DEFAULTS, MAX_CONCURRENCY, WorkerDefaults
from .events import EVENT_KINDS, WorkerEvent
from .loop import Worker, WorkerStats, default_worker_id, next_idle_delay
from .protocol import ClaimedJob, JobQueue

__all__ = [
    "DEFAULTS",
    "EVENT_KINDS",
    "MAX_CONCURRENCY",
    "ClaimedJob",
    "JobQueue",
    "Worker",
    "WorkerDefaults",
    "WorkerEvent",
    "WorkerStats",
    "default_worker_id",
    "next_idle_delay",
]
