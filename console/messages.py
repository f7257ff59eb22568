"""Every message of the console: what a thread worker reports back to the UI thread.

Reads and writes of the database run on thread workers and never touch a widget; they post one of these
(``post_message`` is thread-safe) and a handler on the UI thread renders the outcome. Named after what
happened, so a handler reads as ``on_job_retried``, ``on_snapshot_loaded``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:  # types only: the messages module stays free of the database and widget modules
    from rich.text import Text

    from queue_core.store.models import Job

    from .detail_text import JobDetail
    from .snapshot import Snapshot


# --- refresh (console.app) ------------------------------------------------------------------------


class SnapshotLoaded(Message):
    def __init__(self, snapshot: Snapshot) -> None:
        super().__init__()
        self.snapshot = snapshot


class RefreshFailed(Message):
    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


# --- writes from the job keys (console.actions) ---------------------------------------------------


class JobRetried(Message):
    def __init__(self, job_id: int, job: Job | None) -> None:
        super().__init__()
        self.job_id = job_id
        self.job = job  # None: it was no longer failed, nothing changed


class JobFailedByOperator(Message):
    def __init__(self, job_id: int, job: Job | None) -> None:
        super().__init__()
        self.job_id = job_id
        self.job = job  # None: it was no longer running, nothing changed


class StaleReaped(Message):
    def __init__(self, count: int) -> None:
        super().__init__()
        self.count = count


class WriteFailed(Message):
    """The database refused a write (locked past its busy timeout, gone, a rule said no): nothing changed."""

    def __init__(self, what: str, error: str) -> None:
        super().__init__()
        self.what = what  # the verb: "retry", "fail", "reap"
        self.error = error


# --- the enqueue form (console.screens.enqueue) ---------------------------------------------------


class JobEnqueued(Message):
    def __init__(self, job: Job, created: bool) -> None:
        super().__init__()
        self.job = job
        self.created = created  # False: the idempotency key already belonged to ``job``


class EnqueueRefused(Message):
    def __init__(self, error: str, field: str) -> None:
        super().__init__()
        self.error = error
        self.field = field  # the form field to mark and focus


# --- job detail (console.screens.detail) ----------------------------------------------------------


class DetailLoaded(Message):
    def __init__(self, detail: JobDetail | None, page: Text | None) -> None:
        super().__init__()
        self.detail = detail  # None: the job is gone (pruned)
        self.page = page


class DetailFailed(Message):
    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


class PageRendered(Message):
    def __init__(self, index: int, page: Text) -> None:
        super().__init__()
        self.index = index
        self.page = page


# --- the embedded worker (console.embedded_worker, console.widgets.worker) --------------------------


class WorkerEventReceived(Message):
    """One ``queue_core.worker.WorkerEvent``, carried from a worker thread to the pane, then to the app."""

    def __init__(self, event) -> None:
        super().__init__()
        self.event = event


class QueueWorkerStopped(Message):
    def __init__(self, then_exit: bool) -> None:
        super().__init__()
        self.then_exit = then_exit
