"""A persistent background job queue on peewee: SQLite by default, PostgreSQL to scale out."""

from .errors import DatabaseURLError, IdempotencyConflict, QueueError, ValidationError
from .store.database import open_database
from .store.models import Job, JobStatus, Priority, parse_priority, priority_label
from .store.repository import JobRepository

__all__ = [
    "DatabaseURLError",
    "IdempotencyConflict",
    "Job",
    "JobRepository",
    "JobStatus",
    "Priority",
    "QueueError",
    "ValidationError",
    "open_database",
    "parse_priority",
    "priority_label",
]
