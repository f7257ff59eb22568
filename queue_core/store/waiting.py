"""Why a pending job is still waiting, in words: ``JobRepository.why_waiting``.

Every reason that holds is given, in the order an operator would act on them: the queue is paused; the
job is scheduled later (a delay, or the back-off after a failed attempt); jobs ahead of it by priority;
no live worker serves its queue, or none of those has a handler for its type. When none holds, it is the
next job a worker will claim. The rules are the claim's own (store.statements ``due``): highest priority,
then due first, then lowest id.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta

import peewee as pw

from ..rules import PENDING, RUNNING, WORKER_RUNNING, worker_state
from .registry import EVERY_QUEUE

WAIT_KINDS = ("paused", "scheduled", "ahead", "no_worker", "next", "not_waiting")


@dataclass(frozen=True)
class WaitReason:
    kind: str  # one of WAIT_KINDS
    message: str

    def to_dict(self) -> dict:
        return {"kind": self.kind, "message": self.message}


class WaitingReasons:
    """``why_waiting`` (see ``JobRepository``)."""

    def why_waiting(
        self, job_id: int, *, stale_after: timedelta | None = None, ahead_cap: int | None = None
    ) -> list[WaitReason]:
        """Why job ``job_id`` is not running yet; ``[not_waiting]`` if it is not pending.

        A worker counts as live while the registry says so (seen within its own ``stale_after``), or, with
        ``stale_after`` given, while seen within that. With ``ahead_cap``, the jobs ahead are counted up to
        that many ("10,000+ due jobs are ahead"), so asking again each second costs the same behind any backlog.
        """
        job = self.find_by_id(job_id)
        if job is None:
            return [WaitReason("not_waiting", f"there is no job {job_id}")]
        return self.why_job_waits(job, stale_after=stale_after, ahead_cap=ahead_cap)

    def why_job_waits(
        self, job, *, stale_after: timedelta | None = None, ahead_cap: int | None = None
    ) -> list[WaitReason]:
        """``why_waiting`` for a job already read: its row without the payload will do (a view that reads the
        job again each refresh does not read a large payload again to say why it waits)."""
        if job.status != PENDING:
            worker = f" on worker {job.worker_id}" if job.status == RUNNING and job.worker_id else ""
            return [WaitReason("not_waiting", f"it is {job.status}{worker}, not waiting")]
        now = self.now()
        reasons = []
        Queue = self.QueueRecord
        # The flag alone: queue_state would count the whole queue's jobs per status to say it.
        if Queue.select().where((Queue.name == job.queue) & (Queue.paused == True)).exists():  # noqa: E712
            reasons.append(WaitReason("paused", f"queue {job.queue} is paused"))
        if job.run_at > now:
            why = f"back-off after attempt {job.attempt}" if job.retry_count > 0 else "delayed"
            # The time alone today (as an operator reads a clock), with the date when it is another day.
            when = f"{job.run_at:%H:%M:%S}" if job.run_at.date() == now.date() else f"{job.run_at:%Y-%m-%d %H:%M:%S}"
            reasons.append(WaitReason("scheduled", f"scheduled for {when} UTC ({why})"))
        else:
            ahead = self._jobs_ahead(job, now, ahead_cap)
            if ahead:
                noun = "due job is" if ahead == 1 else "due jobs are"
                count = f"{ahead_cap:,}+" if ahead_cap is not None and ahead > ahead_cap else f"{ahead:,}"
                reasons.append(WaitReason("ahead", f"{count} {noun} ahead of it by priority in queue {job.queue}"))
        serving = self._serving(job.queue, now, stale_after)
        if not serving:
            reasons.append(WaitReason("no_worker", f"no live worker serves queue {job.queue}"))
        elif not any(types is None or job.type in types for types in serving.values()):
            ids = ", ".join(sorted(serving)[:3]) + (", ..." if len(serving) > 3 else "")
            why = f"no live worker has a handler for type {job.type} (those serving queue {job.queue}: {ids})"
            reasons.append(WaitReason("no_worker", why))
        return reasons or [WaitReason("next", "it will be claimed next")]

    def _jobs_ahead(self, job, now, cap: int | None = None) -> int:
        """Due pending jobs of its queue that a claim takes before this one (a worker serving its queue
        takes those first; one serving other queues too may also take theirs); with ``cap``, at most
        ``cap + 1`` (the count stops there)."""
        Job = self.Job
        before = (
            (Job.priority > job.priority)
            | ((Job.priority == job.priority) & (Job.run_at < job.run_at))
            | ((Job.priority == job.priority) & (Job.run_at == job.run_at) & (Job.id < job.id))
        )
        due = (Job.status == PENDING) & (Job.queue == job.queue) & (Job.run_at <= Job.run_at.to_value(now))
        query = Job.select(pw.SQL("1")).where(due & before)
        return (query if cap is None else query.limit(cap + 1)).count()

    def _serving(self, queue: str, now, stale_after: timedelta | None) -> dict[str, frozenset[str] | None]:
        """The live workers in the registry that claim from ``queue``: id -> the types they have handlers
        for (None: not recorded, taken as every type)."""
        Worker = self.WorkerRecord
        serving = {}
        for row in Worker.select().where(Worker.stopped_at.is_null()):
            if stale_after is not None:
                live = now - row.last_seen_at <= stale_after
            else:
                live = worker_state(row.stopped_at, row.last_seen_at, row.stale_after, now) == WORKER_RUNNING
            if live and (row.queues == EVERY_QUEUE or queue in json.loads(row.queues)):
                serving[row.id] = None if row.types is None else frozenset(json.loads(row.types))
        return serving
