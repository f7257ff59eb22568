"""A persistent background job queue on peewee: SQLite by default, PostgreSQL to scale out.

The public API, re-exported here so application code needs one import (``from queue_core import Queue``).
"""

# First, before anything imports peewee: importing store.driver imports peewee without psycopg, which is
# wired in when PostgreSQL is first used (~11 MB and ~0.1 s less for a program on SQLite).
from .store import driver  # noqa: F401  # isort: skip

from .errors import (
    DatabaseURLError,
    IdempotencyConflict,
    JobFailed,
    NoCurrentJobError,
    QueueError,
    ValidationError,
    WorkerGaveUp,
)
from .store.database import open_database
from .store.models import Job, JobStatus, Priority, parse_priority, priority_label
from .store.repository import JobRepository
from .tasks import Queue
from .worker import Worker
from .worker.handlers import HandlerRegistry, current_job, handler

__all__ = [
    "DatabaseURLError",
    "HandlerRegistry",
    "IdempotencyConflict",
    "Job",
    "JobFailed",
    "JobRepository",
    "JobStatus",
    "NoCurrentJobError",
    "Priority",
    "Queue",
    "QueueError",
    "ValidationError",
    "Worker",
    "WorkerGaveUp",
    "current_job",
    "handler",
    "open_database",
    "parse_priority",
    "priority_label",
]
