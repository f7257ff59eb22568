"""Periodic jobs: a ``Schedule`` (a cron expression and the job it enqueues) and the ``Scheduler`` that
enqueues each of its ticks exactly once, however many schedulers run on however many hosts.

Schedulers never talk to each other. Each tick's job carries the idempotency key ``periodic:{name}:{tick}``,
and the repository's UNIQUE key lets exactly one create win; the others get that job back. A scheduler
enqueues only the latest tick at or before now, so a worker that starts after an outage runs a missed
schedule once, not once per missed tick.

Cron expressions are evaluated in UTC by croniter: five fields (minute hour day-of-month month day-of-week),
the ``@hourly``/``@daily``/... aliases, or six fields with the seconds first (``*/10 * * * * *``: every ten
seconds), the order that Quartz, Spring and cronsim use.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import peewee as pw

from ..clock import utc_now
from ..errors import IdempotencyConflict, ValidationError
from ..job_options import validate_job_options
from ..store.models import Job
from ..validation import MAX_TEXT_CHARS, encode_payload, validate_aware, validate_type
from .events import exception_message
from .protocol import close_thread_connection

if TYPE_CHECKING:
    # Imported where a cron expression is first read: croniter (and the dateutil.tz it loads) is ~25 ms of
    # start-up that a worker, console or CLI with no schedules would spend for nothing.
    from croniter import croniter

logger = logging.getLogger(__name__)

KEY_PREFIX = "periodic"
TICK_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
# The idempotency key "periodic:{name}:{tick}" must fit the key column's 255 characters.
MAX_NAME_CHARS = MAX_TEXT_CHARS - len(f"{KEY_PREFIX}::") - len("2026-01-01T00:00:00Z")
MAX_SLEEP = 60.0  # read the clock at least this often, so a change of the system clock is noticed
RETRY_AFTER = 5.0  # seconds before a tick whose create failed (the database was away) is tried again
# Event.wait runs on the monotonic clock and ticks are on the wall clock: a wait that ends a hair early
# would find nothing due and wait again for a few microseconds. Waking a little late costs nothing.
WAKE_MARGIN = 0.005
_VALIDATION_START = datetime(2000, 1, 1, tzinfo=UTC)
# croniter's names (in any case); not @reboot, which no scheduler of a database can keep.
ALIASES = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")


# --- cron expressions --------------------------------------------------------------------------------


def parse_cron(expression) -> str:
    """``expression`` with its whitespace normalised; ValidationError naming ``cron`` if croniter cannot use it."""
    if not isinstance(expression, str) or not expression.strip():
        raise ValidationError("cron", f"must be a cron expression such as '*/5 * * * *', got {expression!r}")
    text = " ".join(expression.split())
    count = len(text.split())
    if text.startswith("@") and text.lower() not in ALIASES:
        # croniter's own message counted fields ("Exactly 5, 6 or 7 columns"): neither the fix nor the rule here.
        raise ValidationError(
            "cron",
            f"{expression!r} is not a name of a schedule; the names are {', '.join(ALIASES)} (or write 5 fields)",
        )
    if not text.startswith("@") and count not in (5, 6):
        raise ValidationError(
            "cron",
            f"{expression!r} has {count} fields; use 5 (minute hour day month weekday) or 6 with seconds first",
        )
    from croniter import CroniterBadDateError, CroniterError

    try:
        _cron(text, _VALIDATION_START).get_next()
    except CroniterBadDateError:
        raise ValidationError("cron", f"{expression!r} never matches a date") from None
    except (CroniterError, ValueError, KeyError, IndexError, TypeError, OverflowError) as exc:
        raise ValidationError("cron", f"{expression!r} is not a valid cron expression ({exc})") from None
    return text


def _cron(expression: str, start: datetime) -> croniter:
    from croniter import croniter

    # A fresh iterator every time: croniter's get_next/get_prev move a cursor, so a shared one would drift.
    return croniter(expression, start, ret_type=datetime, second_at_beginning=True)


def _utc(now: datetime) -> datetime:
    return validate_aware("now", now)


def latest_tick(cron: str, now: datetime) -> datetime:
    """The newest tick at or before ``now``, in UTC."""
    # croniter's get_prev is strictly before its start; ticks fall on whole seconds, so starting at the
    # next whole second finds a tick at exactly ``now`` too.
    after = _utc(now).replace(microsecond=0) + timedelta(seconds=1)
    return _cron(cron, after).get_prev()


def next_tick(cron: str, now: datetime) -> datetime:
    """The first tick strictly after ``now``, in UTC."""
    return _cron(cron, _utc(now)).get_next()


# --- schedules ---------------------------------------------------------------------------------------


def validate_schedule_name(value) -> str:
    if not isinstance(value, str) or not value.strip() or not value.isprintable() or ":" in value:
        # ':' ends the name inside the key: schedule "a" would otherwise own the jobs of schedule "a:b".
        raise ValidationError("name", f"must be a non-empty printable string without ':', got {value!r}")
    if len(value) > MAX_NAME_CHARS:
        raise ValidationError("name", f"must be at most {MAX_NAME_CHARS} characters (it is part of each job's key)")
    return value


def key_prefix(name: str) -> str:
    return f"{KEY_PREFIX}:{name}:"


@dataclass(frozen=True, eq=False)
class Schedule:
    """Enqueue a job of ``type`` with ``payload`` and job ``options`` at every tick of ``cron`` (UTC).

    ``name`` identifies the schedule across processes and deploys: it is part of every tick's idempotency
    key, so renaming a schedule makes its next tick look new.
    """

    name: str
    cron: str
    type: str
    payload: Mapping = field(default_factory=dict)
    options: Mapping = field(default_factory=dict)  # job options: priority, max_retries, queue, timeout, retry_backoff

    def __post_init__(self):
        set_ = object.__setattr__  # frozen: normalised once, here
        set_(self, "name", validate_schedule_name(self.name))
        set_(self, "cron", parse_cron(self.cron))
        set_(self, "type", validate_type(self.type))
        # A copy as the JSON it will be stored as: a caller changing its dict later changes no schedule.
        set_(self, "payload", json.loads(encode_payload(self.payload)))
        set_(self, "options", validate_job_options(self.options))

    def key(self, tick: datetime) -> str:
        """The idempotency key of this schedule's job for ``tick``."""
        return f"{key_prefix(self.name)}{tick.astimezone(UTC):{TICK_FORMAT}}"

    def latest_tick(self, now: datetime) -> datetime:
        return latest_tick(self.cron, now)

    def next_tick(self, now: datetime) -> datetime:
        return next_tick(self.cron, now)


# --- the scheduler -----------------------------------------------------------------------------------


class Scheduler:
    """Enqueues the due ticks of ``schedules`` through ``repo.create``; one per worker, on a thread of its own.

    ``clock`` (default: this host's UTC clock) says when ticks are due. Hosts whose clocks disagree still
    create one job per tick, since the key is the tick; a skew only moves when a tick is noticed. A tick
    more than ``MAX_TICK_AHEAD`` ahead of the database's clock is refused (logged, and owed).
    """

    def __init__(self, repo, schedules: Iterable[Schedule], clock: Callable[[], datetime] | None = None):
        self.repo = repo
        self.schedules = tuple(schedules)
        names = [schedule.name for schedule in self.schedules]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValidationError("name", f"two schedules are named {repeated[0]!r}; each needs a name of its own")
        self.clock = clock or utc_now
        # The newest tick of each schedule known to be enqueued (by this scheduler or another), so a tick
        # costs one create per scheduler, not one per wake-up.
        self._enqueued: dict[str, datetime] = {}

    def tick(self, now: datetime | None = None) -> list[Job]:
        """Enqueue each schedule's latest tick at or before ``now`` unless it is enqueued already.

        Returns the jobs this call created (a tick another scheduler enqueued first is not among them). A
        create that fails (the database is away) is logged and tried again by the next call.
        """
        now = _utc(self.clock() if now is None else now)
        created = []
        for schedule in self.schedules:
            tick = schedule.latest_tick(now)
            known = self._enqueued.get(schedule.name)
            if known is not None and known >= tick:
                continue
            try:
                job = self._enqueue(schedule, tick)
            except Exception as exc:  # the database away, say: one line for the operator, the traceback at debug
                why = f"{type(exc).__name__}: {exception_message(exc)}"
                logger.error(
                    "schedule %s: could not enqueue the tick of %s (%s); will try again", schedule.name, tick, why
                )
                logger.debug("the tick's create raised", exc_info=True)
                continue
            self._enqueued[schedule.name] = tick
            if job is not None:
                created.append(job)
        return created

    def _enqueue(self, schedule: Schedule, tick: datetime) -> Job | None:
        """Create the tick's job; None if another scheduler did (the UNIQUE key decided)."""
        key = schedule.key(tick)
        try:
            made = self.repo.create_tick(
                schedule.name, tick, schedule.type, schedule.payload, idempotency_key=key, **schedule.options
            )
        except IdempotencyConflict as exc:
            # A scheduler running another version of this schedule (another type or payload, e.g. during a
            # rolling deploy) enqueued this tick first: the tick is enqueued, and only once.
            message = "schedule %s: tick %s was enqueued as job %s by another definition"
            logger.warning(message, schedule.name, tick, exc.existing.id)
            return None
        if made is None:
            return None  # enqueued before, its job since pruned
        job, created = made
        return job if created else None

    def next_due(self, now: datetime | None = None) -> datetime | None:
        """When ``tick`` next has work: ``now`` while a due tick is still owed (its create failed), else the
        earliest next tick of any schedule; None without schedules."""
        now = _utc(self.clock() if now is None else now)
        due = []
        for schedule in self.schedules:
            known = self._enqueued.get(schedule.name)
            owed = known is None or known < schedule.latest_tick(now)
            due.append(now if owed else schedule.next_tick(now))
        return min(due, default=None)

    def run_forever(self, stop_event: threading.Event, on_created: Callable[[list[Job]], None] | None = None) -> None:
        """Tick, then sleep until the next tick is due, until ``stop_event`` is set (a worker's scheduler thread).

        ``on_created(jobs)`` hears of the jobs a tick created (a worker wakes its idle claim threads with it).
        """
        while not stop_event.is_set():
            now = _utc(self.clock())
            created = self.tick(now)
            if created and on_created is not None:
                on_created(created)
            stop_event.wait(self._wait_after(now))

    def start(self, stop_event: threading.Event, on_created: Callable[[], None]) -> threading.Thread:
        """``run_forever`` on a daemon thread (a worker's): ``on_created()`` after a tick created jobs; the
        thread's database connection is closed when it ends."""

        def run() -> None:
            try:
                self.run_forever(stop_event, on_created=lambda _jobs: on_created())
            finally:
                close_thread_connection(self.repo)

        thread = threading.Thread(target=run, name="scheduler", daemon=True)
        thread.start()
        return thread

    def _wait_after(self, now: datetime) -> float:
        """Seconds to sleep after ``tick(now)``: judged at that same ``now``, so a tick falling due while
        ``tick`` ran is never mistaken for a failed one."""
        due = self.next_due(now)
        if due is None:
            return MAX_SLEEP
        if due <= now:
            return RETRY_AFTER
        wait = (due - _utc(self.clock())).total_seconds() + WAKE_MARGIN
        return min(MAX_SLEEP, max(0.0, wait))


def start_periodic(
    scheduler: Scheduler | None,
    burst: bool,
    stop_event: threading.Event,
    on_created: Callable[[], None],
) -> threading.Thread | None:
    """A worker's periodic jobs: a burst enqueues the due ticks once, now (before its claim threads start, so
    it runs them); a running worker ticks on a thread of its own (returned) until ``stop_event``."""
    if scheduler is None or not scheduler.schedules:
        return None
    if burst:
        scheduler.tick()
        return None
    return scheduler.start(stop_event, on_created)


# --- the schedules listing ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ScheduleStatus:
    """One line of ``python -m queue_core schedules``."""

    name: str
    cron: str
    type: str
    last_run: datetime | None  # the tick of the newest job the schedule enqueued
    last_job_id: int | None
    last_status: str | None
    next_run: datetime  # the first tick after now


def describe_schedules(repo, schedules: Iterable[Schedule], now: datetime) -> list[ScheduleStatus]:
    """Each schedule with its last run (from the database) and its next run (from its cron expression); a last
    run whose job was pruned shows its tick, with no job."""
    now = _utc(now)
    lines = []
    for schedule in schedules:
        tick = repo.last_tick(schedule.name)
        # The recorded tick's job by its key (the index); last_job's scan read every keyed job for a schedule
        # whose job was not among the newest rows (0.2 s at 300,000 jobs, per schedule and console refresh).
        # Without a record (ticks from before it was kept, or through an old server's POST /jobs): the scan.
        job = last_job(repo, schedule.name) if tick is None else repo.find_by_idempotency_key(schedule.key(tick))
        lines.append(
            ScheduleStatus(
                name=schedule.name,
                cron=schedule.cron,
                type=schedule.type,
                last_run=tick if job is None else _tick_of(job, schedule.name),
                last_job_id=None if job is None else job.id,
                last_status=None if job is None else job.status,
                next_run=schedule.next_tick(now),
            )
        )
    return lines


def last_job(repo, name: str) -> Job | None:
    """The newest job (highest id) the schedule ``name`` enqueued: its key starts with ``periodic:{name}:``. A
    scan of the keyed jobs: for a schedule with no tick record (``describe_schedules`` reads the record's job).

    TODO(issue 12 layout / issue 15 schedules view): a read of the repository's read model, kept here
    until it moves into the store (``JobRepository.last_periodic_job(name)`` or similar); it writes nothing.
    """
    prefix = key_prefix(name)
    Job = repo.Job
    # An exact prefix test: LIKE would read '_' and '%' in a name as wildcards (and ignores case on
    # SQLite), and a key range follows PostgreSQL's collation, which may ignore punctuation such as ':'.
    starts_with_prefix = pw.fn.SUBSTR(Job.idempotency_key, 1, len(prefix)) == prefix
    query = Job.select().where(Job.idempotency_key.is_null(False) & starts_with_prefix)
    return query.order_by(Job.id.desc()).limit(1).first()


def _tick_of(job: Job, name: str) -> datetime:
    try:
        return datetime.strptime(job.idempotency_key[len(key_prefix(name)) :], TICK_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return job.created_at  # a key of this form written by hand: when the job was created is the best guess
