"""A persistent background job queue on peewee: SQLite by default, PostgreSQL to scale out."""

from .errors import DatabaseURLError, IdempotencyConflict, QueueError, ValidationError
from .store.database import open_database
from .store.models import Job, JobStatus, Priority, parse_priority, priority_label
from .store.repository import JobRepository
from .tasks import Queue

__all__ = [
    "DatabaseURLError",
    "IdempotencyConflict",
    "Job",
    "JobRepository",
    "JobStatus",
    "Priority",
    "Queue",
    "QueueError",
    "ValidationError",
    "open_database",
    "parse_priority",
    "priority_label",
]
