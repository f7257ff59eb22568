"""Every message of the console: what a thread worker reports back to the UI thread.

Reads and writes of the database run on thread workers and never touch a widget; they post one of these
(``post_message`` is thread-safe) and a handler on the UI thread renders the outcome. Named after what
happened, so a handler reads as ``on_job_retried``, ``on_snapshot_loaded``.

Dataclasses, as many of Textual's own messages are (``Message.__post_init__`` sets up the rest);
``eq=False`` keeps a message equal only to itself, as a plain Message is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.message import Message

if TYPE_CHECKING:  # types only: this module stays free of the database and widget modules
    from rich.text import Text
    from textual.content import Content

    from queue_core.store.models import Job
    from queue_core.store.pages import AttemptPage

    from .detail_text import JobDetail
    from .selection import Selection
    from .snapshot import Snapshot

message = dataclass(eq=False)


# --- refresh (console.app) ------------------------------------------------------------------------


@message
class SnapshotLoaded(Message):
    snapshot: Snapshot


@message
class RefreshFailed(Message):
    error: str


# --- writes from the job keys (console.actions) ---------------------------------------------------


@message
class JobFailedByOperator(Message):
    job_id: int
    job: Job | None  # None: it was no longer running, nothing changed


@message
class StaleReaped(Message):
    result: tuple  # (stale claims taken back, {lost worker id: its jobs taken back})


@message
class WriteFailed(Message):
    """The database refused a write (locked past its busy timeout, gone, a rule said no): nothing changed."""

    what: str  # the verb: "retry", "fail", "reap"
    error: str


# --- the enqueue form (console.screens.enqueue) ---------------------------------------------------


@message
class JobEnqueued(Message):
    job: Job
    created: bool  # False: the idempotency key already belonged to ``job``


@message
class EnqueueRefused(Message):
    error: str
    field: str  # the form field to mark and focus


# --- job detail (console.screens.detail) ----------------------------------------------------------


@message
class DetailLoaded(Message):
    detail: JobDetail | None  # None: the job is gone (pruned)
    page: Text | None


@message
class DetailFailed(Message):
    error: str


@message
class DetailRefreshed(Message):
    """The job read again on the app's refresh cycle: what can change since the detail opened (never the payload)."""

    status: str | None  # None: the job is gone (deleted, pruned)
    title: Content | None
    fields: Content | None
    attempts: AttemptPage | None  # the page of the history shown, read again


@message
class DetailStale(Message):
    """Reading the job again failed (the database is gone, locked): the detail shows what it last read."""

    error: str


@message
class PageRendered(Message):
    index: int
    page: Text


# --- the embedded worker (console.embedded_worker, console.widgets.worker) ------------------------


@message
class WorkerEventReceived(Message):
    """One ``queue_core.worker.WorkerEvent``, carried from a worker thread to the pane, then to the app."""

    event: Any


@message
class QueueWorkerStopped(Message):
    then_exit: bool


# --- views (console.views, console.widgets.jobs.paged) --------------------------------------------


@message
class PageRequested(Message):
    """A paged table asks for the window after (step +1) or before (step -1) the one it shows."""

    state: str
    step: int


# --- queue, cancel and worker controls (console.controls) -----------------------------------------


@message
class QueuePauseChanged(Message):
    state: Any  # queue_core.store.reads.QueueState after the write


@message
class WorkerJobsLoaded(Message):
    worker_id: str
    rows: list | None  # None: the read failed (a WriteFailed says why)
    now: Any


# --- selection and bulk actions (console.selection, console.bulk) ---------------------------------


@message
class SelectionLoaded(Message):
    selection: Selection | None  # None: the read failed (a WriteFailed says why)


@message
class BulkPlanned(Message):
    """The dry run: ``plan`` (queue_core.store.bulk.BulkPlan) is exactly what the action would touch now."""

    plan: Any  # None: the dry run failed (a WriteFailed says why)
    selection: Selection | None  # None: the job under the cursor


@message
class BulkProgressed(Message):
    progress: Any  # queue_core.store.bulk.BulkProgress after one batch


@message
class BulkDone(Message):
    outcome: Any  # queue_core.store.bulk.BulkOutcome
    lines: list[str]  # the equivalent admin-CLI commands
    what: str  # the plan's description: "4 failed jobs matching type:x"
    running: int = 0  # of those, running jobs a cancel asked to stop (they end at their worker's next beat)


# --- job detail: why it waits (console.screens.detail) --------------------------------------------


@message
class WaitingExplained(Message):
    reasons: list  # queue_core.store.waiting.WaitReason; empty: the job does not wait
