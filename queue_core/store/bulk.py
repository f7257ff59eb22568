"""Bulk actions of ``JobRepository``: retry, cancel or delete every job a query (and a selection) names.

Two steps, so an operator confirms exactly what will happen: ``plan_bulk`` is the dry run (the ids of the
jobs the action would touch now, with the attempt each was on), ``apply_bulk`` does it in batches of
``BULK_BATCH`` jobs, one short transaction each, set-based: one statement per batch (delete: two), never
one per job. Each statement matches a job only if it is still in a status the action takes AND still on
the attempt the plan saw: a job a worker claimed, finished or failed again meanwhile is skipped and
counted, never touched, and no job outside the plan can match at all.

A mixin of the repository, like store.controls: it reads the repository's models, statements and clock.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..errors import ValidationError
from ..rules import CANCELLED, COMPLETED, FAILED, PENDING, RUNNING
from ..validation import validate_job_ids, validate_positive_int
from .pages import SCHEDULED
from .query import JobQuery, parse_query

BULK_ACTIONS = ("retry", "cancel", "delete")
# The statuses each action takes; a job in any other status is left alone. Running jobs are cancelled, not
# deleted: their worker would otherwise ack a job that no longer exists.
ELIGIBLE = {
    "retry": (FAILED, CANCELLED),
    "cancel": (PENDING, RUNNING),
    "delete": (PENDING, FAILED, COMPLETED, CANCELLED),
}
BULK_BATCH = 2000  # jobs per transaction: a short write lock (SQLite) while workers keep claiming
# Ids per statement, whatever batch_size: SQLite binds at most 32,766 values since 3.32 (999 before; this
# build's limit is far higher, checked in tests), PostgreSQL 65,535.
MAX_PARAMS = 30_000
MAX_SELECTION = 100_000  # ids an HTTP client may name in one request (the console's selection has no limit)
PLAN_CHUNK = 5000  # ids of an operator's selection looked up per statement when planning
VIEW_STATUSES = (PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, SCHEDULED)
VIEW_AS_STATUS = {SCHEDULED: PENDING}  # a scheduled job is a pending one, due later
PAST = {"retry": "retried", "cancel": "cancelled", "delete": "deleted"}
STATUSES = (PENDING, RUNNING, COMPLETED, FAILED, CANCELLED)


@dataclass(frozen=True)
class BulkPlan:
    """The dry run: exactly the jobs the action would touch now, ids ascending, each with its attempt then."""

    action: str
    query: str  # the query text as given ("" = none)
    status: str | None  # the view's status restriction, if any
    ids: array  # array('q') of job ids, ascending
    attempts: array  # array('q'): the attempt each job was on when planned (the fence)
    # array('b'): each job's status when planned, as an index of STATUSES (the fence too: a failed job an
    # operator retried by hand is pending now, on the same attempt, and "delete 3 failed jobs" must not
    # delete it). Empty, or not one per id (a plan cut down with dataclasses.replace(ids=..., attempts=...)):
    # the fence is "a status the action takes".
    statuses: array = field(default_factory=lambda: array("b"))

    @property
    def count(self) -> int:
        return len(self.ids)

    def describe(self) -> str:
        """``1,234 failed jobs matching type:send-invoice``: what the confirmation and the CLI say."""
        named = self.status or _query_status(self.query)
        eligible = ELIGIBLE[self.action]
        noun = "job" if self.count == 1 else "jobs"
        text = f"{self.count:,} {named or '/'.join(eligible)} {noun}"
        text = f"{text} matching {self.query}" if self.query else text
        outside = [one for one in (named or "").split("/") if one and VIEW_AS_STATUS.get(one, one) not in eligible]
        if outside:  # "0 completed jobs matching status:completed" read as if there were none: say why
            text += f"; {self.action} takes no {'/'.join(outside)} jobs"
        return text


@dataclass(frozen=True)
class BulkProgress:
    action: str
    planned: int
    done: int  # jobs of the plan looked at so far (changed + skipped)
    changed: int
    skipped: int  # changed state since the plan: left alone


@dataclass(frozen=True)
class BulkOutcome:
    action: str
    planned: int
    changed: int
    skipped: int
    stopped: bool  # on_batch asked to stop: the rest of the plan was not looked at

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def validate_action(action) -> str:
    if action not in BULK_ACTIONS:
        raise ValidationError("action", f"unknown action {action!r}; use one of {', '.join(BULK_ACTIONS)}")
    return action


def _validate_view_status(status) -> str | None:
    if status is not None and status not in VIEW_STATUSES:
        raise ValidationError("status", f"unknown status {status!r}; use one of {', '.join(VIEW_STATUSES)}")
    return status


class BulkActions:
    """``plan_bulk``, ``apply_bulk`` and both at once, ``bulk`` (see ``JobRepository``)."""

    def plan_bulk(
        self,
        action: str,
        query: str | JobQuery = "",
        *,
        status: str | None = None,
        ids: Iterable[int] | None = None,
    ) -> BulkPlan:
        """The jobs ``action`` would touch now: matching ``query`` and ``status`` (a view's: a job status or
        ``scheduled``), among ``ids`` if given (an operator's selection), in a status the action takes.

        Raises QueryError for a bad query, ValidationError for an unknown action or status.
        """
        validate_action(action)
        parsed = query if isinstance(query, JobQuery) else parse_query(query)
        condition = self._bulk_condition(action, parsed, _validate_view_status(status))
        plan = BulkPlan(action, parsed.text, status, array("q"), array("q"))
        if ids is None:
            self._bulk_rows(condition, plan)
            return plan
        wanted = sorted(set(_job_ids(ids)))
        if len(wanted) <= PLAN_CHUNK:
            if wanted:
                self._bulk_rows(condition & self.Job.id.in_(wanted), plan)
            return plan
        # A large selection: the query's jobs in the selection's id range, kept if selected. One statement
        # read by the query's own indexes: 100,000 ids as 20 IN lists took 8 s on SQLite (the console's
        # measurement), this well under one.
        everything = BulkPlan(action, parsed.text, status, array("q"), array("q"))
        self._bulk_rows(condition & self.Job.id.between(wanted[0], wanted[-1]), everything)
        chosen = set(wanted)
        for i, job_id in enumerate(everything.ids):
            if job_id in chosen:
                plan.ids.append(job_id)
                plan.attempts.append(everything.attempts[i])
                plan.statuses.append(everything.statuses[i])
        return plan

    def apply_bulk(
        self,
        plan: BulkPlan,
        *,
        batch_size: int = BULK_BATCH,
        on_batch: Callable[[BulkProgress], bool | None] | None = None,
    ) -> BulkOutcome:
        """Do ``plan`` in transactions of ``batch_size`` jobs; a job that changed since is skipped and counted.

        ``on_batch`` hears the progress after each batch; returning False stops there (``stopped=True``).
        """
        validate_action(plan.action)
        validate_positive_int("batch_size", batch_size)
        if len(plan.attempts) != plan.count:
            raise ValidationError("plan", f"has {plan.count} ids but {len(plan.attempts)} attempts: one each")
        changed = done = 0
        stopped = False
        for start in range(0, plan.count, batch_size):
            end = min(start + batch_size, plan.count)
            with self.db.atomic():
                changed += self._apply_batch(plan, start, end)
            done = end
            if on_batch is not None:
                progress = BulkProgress(plan.action, plan.count, done, changed, done - changed)
                if on_batch(progress) is False and done < plan.count:
                    stopped = True
                    break
        return BulkOutcome(plan.action, plan.count, changed, done - changed, stopped)

    def bulk(
        self,
        action: str,
        query: str | JobQuery = "",
        *,
        status: str | None = None,
        ids: Iterable[int] | None = None,
        dry_run: bool = False,
        batch_size: int = BULK_BATCH,
        on_batch: Callable[[BulkProgress], bool | None] | None = None,
    ) -> BulkOutcome:
        """``plan_bulk`` then ``apply_bulk`` (the CLI's and the HTTP API's one call); a dry run changes nothing
        and reports what it would touch as ``planned``."""
        plan = self.plan_bulk(action, query, status=status, ids=ids)
        if dry_run:
            return BulkOutcome(action, plan.count, 0, 0, False)
        return self.apply_bulk(plan, batch_size=batch_size, on_batch=on_batch)

    def count_running_matching(self, query: str | JobQuery = "") -> int:
        """The running jobs ``query`` matches: what a bulk delete of it leaves alone (running jobs are
        cancelled, never deleted), so that its dry run can say so rather than "would delete 0 jobs"."""
        parsed = query if isinstance(query, JobQuery) else parse_query(query)
        Job = self.Job
        return Job.select().where((Job.status == RUNNING) & parsed.condition(self)).count()

    # --- planning -------------------------------------------------------------------------------

    def _bulk_condition(self, action: str, query: JobQuery, status: str | None):
        Job = self.Job
        condition = Job.status.in_(ELIGIBLE[action]) & query.condition(self)
        if status == SCHEDULED:
            condition &= (Job.status == PENDING) & (Job.run_at > Job.run_at.to_value(self.now()))
        elif status is not None:
            condition &= Job.status == status
        return condition

    def _bulk_rows(self, condition, plan: BulkPlan) -> None:
        """Append to ``plan`` the jobs matching ``condition`` in id order, a row at a time: a million-job plan
        is three arrays (17 MB), never a million tuples."""
        Job = self.Job
        query = Job.select(Job.id, Job.attempt, Job.status).where(condition).order_by(Job.id)
        index = {status: i for i, status in enumerate(STATUSES)}
        for job_id, attempt, status in self.db.execute_sql(*query.sql()):
            plan.ids.append(job_id)
            plan.attempts.append(attempt)
            plan.statuses.append(index[status])

    # --- applying -------------------------------------------------------------------------------

    def _apply_batch(self, plan: BulkPlan, start: int, end: int) -> int:
        """Jobs ``start:end`` of the plan, inside their transaction: how many changed.

        One statement per (attempt, status) the batch's jobs were planned with (a plan's jobs share a few),
        each ``id IN (...) AND attempt = N AND status = S``: the fence.
        """
        known = len(plan.statuses) == plan.count
        statuses = plan.statuses[start:end].tolist() if known else [None] * (end - start)
        groups: dict[tuple, list[int]] = {}
        for job_id, attempt, status in zip(
            plan.ids[start:end].tolist(), plan.attempts[start:end].tolist(), statuses, strict=True
        ):
            groups.setdefault((attempt, status), []).append(job_id)
        changed = 0
        for (attempt, status), same in sorted(groups.items(), key=lambda item: item[1][0]):
            allowed = ELIGIBLE[plan.action] if status is None else [STATUSES[status]]
            for first in range(0, len(same), MAX_PARAMS):
                fence = self._fence(same[first : first + MAX_PARAMS], attempt, allowed)
                changed += getattr(self, f"_bulk_{plan.action}")(fence)
        return changed

    def _fence(self, ids: list[int], attempt: int, statuses):
        """These jobs (ids ascending), only while still on ``attempt`` and in one of ``statuses``."""
        return self._by_key(ids, statuses) & (self.Job.attempt == attempt)

    def _by_key(self, ids: list[int], statuses):
        """These jobs (ids ascending) while in one of ``statuses``, written so both planners find the rows by
        primary key whatever their statistics say: the id range makes the key the cheapest path, and the
        status test on an expression keeps the status index out. On a freshly loaded PostgreSQL table (no
        statistics yet) a plain ``status IN`` read the whole status index per batch, and a join on VALUES ran
        as a nested loop over the list per row (0.5 s a batch); SQLite walked the status index over every old
        finished job for a prune's batch (from ten ids on)."""
        Job = self.Job
        return Job.id.between(ids[0], ids[-1]) & Job.id.in_(ids) & Job.status.checked(statuses)

    def _bulk_retry(self, where) -> int:
        Job = self.Job
        changes = self._requeue_changes(self.time.sql(), retry_count=0)
        changes["cancel_requested_at"] = None
        count = Job.update(**changes).where(where).execute()
        if count:
            self.statements.announce_pending()
        return count

    def _bulk_cancel(self, where) -> int:
        Job = self.Job
        return Job.update(**self._cancel_changes(self.time.sql())).where(where).execute()

    def _bulk_delete(self, where) -> int:
        Job = self.Job
        deleted = [row.id for row in Job.delete().where(where).returning(Job.id)]
        self._forget_deleted(deleted)
        return len(deleted)

    def _forget_deleted(self, deleted: list[int]) -> None:
        """In the deleting transaction: the deleted jobs' error history goes too, and their ids stay taken
        (``Statements.keep_id_floor``: a client holding one must not find another job under it)."""
        if deleted:
            self.JobError.delete().where(self.JobError.job_id.in_(deleted)).execute()
            self.statements.keep_id_floor(deleted)


def _query_status(query: str) -> str | None:
    """The status a query's ``status:`` term names (what "1,234 failed jobs" says), if it has one."""
    named = sorted({term.value for term in parse_query(query).terms if term.field == "status"})
    return "/".join(named) or None


def _job_ids(ids: Iterable[int]) -> list[int]:
    values = validate_job_ids(ids, "ids")
    below = next((value for value in values if value < 1), None)
    if below is not None:
        raise ValidationError("ids", f"job ids are positive whole numbers, not {below}")
    return values
