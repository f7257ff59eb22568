"""The worker: claim -> run the handler -> complete or fail, with heartbeats, reaping and a graceful stop.

``python -m queue_core.worker`` (script ``queue-worker``) runs it headless; see ``queue_core.worker.cli``.
"""

from .loop import EVENT_KINDS, MAX_CONCURRENCY, Worker, WorkerEvent, WorkerStats, default_worker_id, next_idle_delay

__all__ = [
    "EVENT_KINDS",
    "MAX_CONCURRENCY",
    "Worker",
    "WorkerEvent",
    "WorkerStats",
    "default_worker_id",
    "next_idle_delay",
]
