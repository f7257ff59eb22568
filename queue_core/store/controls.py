"""Operator controls of ``JobRepository``: cancel a job, pause and resume a queue.

A mixin of the repository (it reads the repository's models, statements and clock), kept in a module of
its own so the claim-and-ack transitions stay short to read. Every change is one guarded statement.
"""

from __future__ import annotations

from collections.abc import Iterable

import peewee as pw

from ..rules import CANCELLED, PENDING, RUNNING
from ..validation import validate_job_id, validate_job_ids, validate_queue_name, validate_worker_id
from .models import Job


class OperatorControls:
    """Cancel, the worker's side of a cancel, and a queue's pause state (see ``JobRepository``)."""

    def cancel(self, job_id: int) -> Job | None:
        """Cancel a job: a pending (or scheduled) one becomes ``cancelled`` at once and is never claimed; a
        running one gets a cancel request (``cancel_requested_at``) its worker sees at its next heartbeat,
        and is returned still running. None, and nothing changed, for an unknown or final job."""
        job_id = validate_job_id(job_id)
        Job = self.Job
        changes = self._cancel_changes(self.time.sql())
        # One statement: a claim racing this cancel either took the job first (it is running: a request)
        # or finds it cancelled.
        query = Job.update(**changes).where((Job.id == job_id) & Job.status.in_([PENDING, RUNNING])).returning(Job)
        return next(iter(query.execute()), None)

    def _cancel_changes(self, now) -> dict:
        """A cancel as one UPDATE's changes: pending jobs become cancelled, running ones get a request."""
        Job = self.Job
        pending = Job.status == PENDING
        return {
            "status": pw.Case(None, [(pending, CANCELLED)], Job.status),
            # A repeated cancel keeps the time of the first request.
            "cancel_requested_at": pw.Case(
                None,
                [(pending, Job.cancel_requested_at)],
                # to_value: stored as the column stores times (a bare datetime inside a function would not be).
                pw.fn.COALESCE(Job.cancel_requested_at, Job.cancel_requested_at.to_value(now)),
            ),
            "updated_at": now,
        }

    def cancel_requests(self, job_ids: Iterable[int], *, worker_id: str) -> list[int]:
        """Of these running jobs held by ``worker_id``, the ids an operator asked to cancel (sorted)."""
        worker_id = validate_worker_id(worker_id)
        job_ids = validate_job_ids(job_ids)
        if not job_ids:
            return []
        Job = self.Job
        query = Job.select(Job.id).where(
            Job.id.in_(job_ids)
            & (Job.status == RUNNING)
            & (Job.worker_id == worker_id)
            & Job.cancel_requested_at.is_null(False)
        )
        return sorted(job_id for (job_id,) in query.tuples())

    def mark_cancelled(self, job_id: int, *, worker_id: str, attempt: int) -> Job | None:
        """The worker's acknowledgement that its handler stopped for a cancel request: the job it holds at
        ``attempt``, with a request, becomes ``cancelled``. None if it is not held or has no request."""
        worker_id = validate_worker_id(worker_id)
        Job = self.Job
        held = self.statements.held(job_id, worker_id, attempt) & Job.cancel_requested_at.is_null(False)
        query = Job.update(status=CANCELLED, updated_at=self.time.sql()).where(held).returning(Job)
        return next(iter(query.execute()), None)

    def pause_queue(self, name: str):
        """Pause a queue for every worker: its jobs are not claimed from the moment this returns (running
        ones finish). A queue with no jobs yet may be paused. Returns its ``QueueState``."""
        return self._set_paused(validate_queue_name(name, "name"), True)

    def resume_queue(self, name: str):
        """Let workers claim a paused queue's jobs again. Returns its ``QueueState``."""
        return self._set_paused(validate_queue_name(name, "name"), False)

    def _set_paused(self, name: str, paused: bool):
        Queue = self.QueueRecord
        with self.db.atomic():
            if paused:
                self.statements.pause_lock()
            Queue.insert(name=name, paused=paused, updated_at=self.time.sql()).on_conflict(
                conflict_target=[Queue.name], preserve=[Queue.paused, Queue.updated_at]
            ).execute()
        self.statements.forget_pauses()  # this process's claims read past the paused queue from now on
        if not paused:
            self.statements.announce_pending()
        return self.queue_state(name)
