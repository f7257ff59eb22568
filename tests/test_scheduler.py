"""Periodic jobs (issue 14, item 6): cron ticks, one job per tick however many schedulers, missed ticks once."""

from __future__ import annotations

import functools
import logging
import random
import threading
import time
from datetime import UTC, datetime, timedelta, timezone

import peewee as pw
import pytest
from support import START, FakeClock

from queue_core import Queue, ValidationError
from queue_core.handlers import HandlerRegistry, current_job
from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository, tick_record_key
from queue_core.tasks import registered_schedules
from queue_core.worker import Worker
from queue_core.worker import scheduler as scheduler_module
from queue_core.worker.scheduler import (
    RETRY_AFTER,
    Schedule,
    Scheduler,
    describe_schedules,
    latest_tick,
    next_tick,
    parse_cron,
)

EVERY_SECOND = "* * * * * *"
WAIT = 20  # seconds a thread may take to stop; only a guard against hangs


def jobs_of(repo, type: str) -> list:
    return repo.list(type=type, limit=1000)


def at(second: int) -> datetime:
    return START + timedelta(seconds=second)


# --- cron expressions and ticks (no database) -----------------------------------------------------


@pytest.mark.parametrize(
    "expression",
    ["", "   ", None, 5, "61 * * * *", "* * * *", "* * * * * * *", "@reboot", "0 0 31 2 *", "H * * * *", "x y z a b"],
)
def test_a_bad_cron_expression_is_a_validation_error_naming_cron(expression):
    with pytest.raises(ValidationError) as raised:
        parse_cron(expression)
    assert raised.value.field == "cron"


@pytest.mark.parametrize("expression", ["@reboot", "@every 5m", "@daily @daily", "@"])
def test_an_unknown_schedule_name_is_an_error_that_lists_the_names(expression):
    with pytest.raises(ValidationError) as raised:
        parse_cron(expression)
    assert raised.value.field == "cron"
    assert "is not a name of a schedule; the names are @yearly, @annually, @monthly" in str(raised.value)
    assert "columns" not in str(raised.value)  # croniter's field count, which said 7 would do
    assert parse_cron("@Daily") == "@Daily"  # in any case, as croniter reads them


def test_cron_expressions_are_normalised_and_checked_where_they_are_written():
    assert parse_cron("  */5   *  * * * ") == "*/5 * * * *"
    assert parse_cron("@daily") == "@daily"
    queue = Queue(registry=HandlerRegistry(with_builtins=False))
    with pytest.raises(ValidationError) as raised:
        queue.periodic("0 25 * * *", name="report")
    assert raised.value.field == "cron"
    with pytest.raises(ValidationError) as raised:
        queue.task("report", cron="every day")
    assert raised.value.field == "cron"


def test_ticks_are_in_utc_on_whole_seconds():
    # The latest tick at or before now includes a tick at exactly now; the next one is strictly after.
    assert latest_tick("*/5 * * * *", START) == START
    assert latest_tick("*/5 * * * *", START - timedelta(microseconds=1)) == START - timedelta(minutes=5)
    assert next_tick("*/5 * * * *", START) == START + timedelta(minutes=5)
    assert latest_tick(EVERY_SECOND, START + timedelta(seconds=3.7)) == START + timedelta(seconds=3)
    assert next_tick(EVERY_SECOND, START + timedelta(seconds=3.7)) == START + timedelta(seconds=4)
    # Six fields: seconds first.
    assert next_tick("*/10 * * * * *", START + timedelta(seconds=1)) == START + timedelta(seconds=10)
    assert next_tick("30 0 12 * * *", START) == START + timedelta(seconds=30)
    # Another time zone's "now" is the same instant; the cron expression stays in UTC.
    tokyo = START.astimezone(timezone(timedelta(hours=9)))
    assert latest_tick("0 3 * * *", tokyo) == datetime(2026, 1, 1, 3, tzinfo=UTC)
    assert latest_tick("0 3 * * *", tokyo).utcoffset() == timedelta(0)
    with pytest.raises(ValidationError) as raised:
        latest_tick("* * * * *", datetime(2026, 1, 1))
    assert raised.value.field == "now"


def test_a_schedule_checks_its_parts_and_names_its_keys():
    schedule = Schedule("nightly-report", "0 3 * * *", "report", {"to": "ops"}, {"priority": "high"})
    assert schedule.key(datetime(2026, 1, 2, 3, tzinfo=UTC)) == "periodic:nightly-report:2026-01-02T03:00:00Z"
    assert schedule.options == {"priority": 20}
    for bad, field in [
        ({"name": "a:b"}, "name"),
        ({"name": ""}, "name"),
        ({"name": "x" * 300}, "name"),
        ({"cron": "* *"}, "cron"),
        ({"type": ""}, "type"),
        ({"payload": {"when": datetime(2026, 1, 1)}}, "payload"),
        ({"options": {"colour": "red"}}, "colour"),
        ({"options": {"timeout": -1}}, "timeout"),
    ]:
        with pytest.raises(ValidationError) as raised:
            Schedule(**{"name": "n", "cron": "* * * * *", "type": "t", **bad})
        assert raised.value.field == field, bad
    with pytest.raises(ValidationError) as raised:
        Scheduler(None, [schedule, Schedule("nightly-report", "* * * * *", "other")])
    assert raised.value.field == "name"


def test_periodic_and_cron_tasks_register_a_task_and_a_schedule():
    handlers = HandlerRegistry(with_builtins=False)
    queue = Queue(registry=handlers)

    @queue.periodic("*/5 * * * *", name="nightly-report", payload={"to": "ops"}, priority="high")
    def report(to, fmt="pdf"):
        return f"{to}.{fmt}"

    @queue.task("cleanup", cron="0 3 * * *", max_retries=0)
    def cleanup(days=30): ...

    assert report(to="me") == "me.pdf"
    assert handlers.names() == ["cleanup", "nightly-report"]
    assert [(s.name, s.cron, s.type, s.payload, s.options) for s in queue.schedules] == [
        ("nightly-report", "*/5 * * * *", "nightly-report", {"to": "ops"}, {"priority": 20}),
        ("cleanup", "0 3 * * *", "cleanup", {}, {"max_retries": 0}),
    ]
    assert report.schedule is queue.schedules[0]
    # A periodic payload is checked against the function like any enqueue, at the decorator.
    for payload, field in [({"too": "ops"}, "too"), ({}, "to"), ({"to": {1, 2}}, "to")]:
        with pytest.raises(ValidationError) as raised:
            queue.periodic("* * * * *", name="bad", payload=payload)(report.fn)
        assert raised.value.field == field
    with pytest.raises(ValidationError) as raised:
        queue.task("needs-args", cron="* * * * *")(lambda order: None)
    assert raised.value.field == "cron"
    with pytest.raises(ValidationError) as raised:
        queue.periodic("* * * * *", name="nightly-report", payload={"to": "x"})(report.fn)
    assert raised.value.field == "name"
    with pytest.raises(ValidationError) as raised:
        queue.periodic("* * * * *", colour="red")
    assert raised.value.field == "colour"
    # A payload that is no mapping was a TypeError or ValueError from dict(); a bare decorator named cron only.
    for payload in (["ops"], "to=ops", 5):
        with pytest.raises(ValidationError, match=r"must be a mapping of report\(\)'s arguments") as raised:
            queue.periodic("* * * * *", name="bad", payload=payload)(report.fn)
        assert raised.value.field == "payload"
    with pytest.raises(ValidationError, match=r"not a bare @queue\.periodic") as raised:
        queue.periodic(report.fn)
    assert raised.value.field == "cron"
    assert handlers.names() == ["cleanup", "nightly-report"]  # refused definitions registered nothing


def test_periodic_stacked_on_a_task_schedules_that_task_keeping_its_defaults():
    # procrastinate's way to schedule a task: @app.periodic(cron=...) over @app.task(...). It made a second job
    # type named after the function, without the task's queue or priority; named like the task, it replaced
    # the task by one without them, so even report.enqueue() went to the default queue.
    handlers = HandlerRegistry(with_builtins=False)
    queue = Queue(registry=handlers)

    @queue.periodic("0 3 * * *")
    @queue.task("send-report", queue="reports", priority="high")
    def report(): ...

    @queue.periodic("0 4 * * *", name="cleanup", max_retries=0)
    @queue.task("cleanup", queue="reports")
    def cleanup(): ...

    assert handlers.names() == ["cleanup", "send-report"]
    assert [(s.name, s.type, s.options) for s in queue.schedules] == [
        ("send-report", "send-report", {"queue": "reports", "priority": 20}),
        ("cleanup", "cleanup", {"queue": "reports", "max_retries": 0}),  # the periodic's options: its jobs'
    ]
    assert (report.type, dict(report.options), report.schedule) == (
        "send-report",
        {"queue": "reports", "priority": 20},
        queue.schedules[0],
    )
    assert dict(cleanup.options) == {"queue": "reports"}


def test_a_periodic_callable_without_a_name_of_its_own_must_be_given_one():
    # A partial's or an instance's name was its repr, memory address included: each worker process registered
    # and enqueued a job type of its own at every tick, which no other worker could run. A lambda's, <lambda>.
    handlers = HandlerRegistry(with_builtins=False)
    queue = Queue(registry=handlers)

    def report(to="ops"): ...

    class Report:
        def __call__(self, to="ops"): ...

    for unnamed in [functools.partial(report, to="me"), Report(), lambda: None]:
        with pytest.raises(ValidationError, match=r"give periodic\(\.\.\., name='\.\.\.'\)") as raised:
            queue.periodic("* * * * *")(unnamed)
        assert raised.value.field == "name"
    assert handlers.names() == [] and queue.schedules == []
    assert queue.periodic("* * * * *")(report).type == "report"  # a function's own name is the default
    assert queue.periodic("* * * * *", name="mine")(Report()).type == "mine"


# --- the scheduler on a database, with a fake clock ---------------------------------------------------


def test_each_tick_is_enqueued_once_with_its_key_and_options(repo):
    schedule = Schedule("report", "*/5 * * * *", "send-report", {"to": "ops"}, {"priority": "high", "max_retries": 1})
    scheduler = Scheduler(repo, [schedule], clock=FakeClock(START))

    [job] = scheduler.tick()  # at START, 12:00: a tick
    assert (job.type, job.payload, job.priority, job.max_retries) == ("send-report", {"to": "ops"}, 20, 1)
    assert job.idempotency_key == "periodic:report:2026-01-01T12:00:00Z"
    assert scheduler.tick(at(1)) == [] and scheduler.tick(at(299)) == []
    assert scheduler.next_due(at(299)) == at(300)
    [later] = scheduler.tick(at(300))
    assert later.idempotency_key == "periodic:report:2026-01-01T12:05:00Z"
    assert [j.id for j in jobs_of(repo, "send-report")] == [job.id, later.id]


def test_missed_ticks_are_enqueued_once_not_once_each(repo, clock):
    clock.advance(10 * 60 + 30)  # the database's clock: no tick below is ahead of it
    schedule = Schedule("beat", EVERY_SECOND, "beat")
    assert len(Scheduler(repo, [schedule]).tick(at(0))) == 1

    # No scheduler ran for 10 ticks; the next one to start enqueues only the latest of them.
    [caught_up] = Scheduler(repo, [schedule]).tick(at(10))
    assert caught_up.idempotency_key == "periodic:beat:2026-01-01T12:00:10Z"
    assert Scheduler(repo, [schedule]).tick(at(10.9)) == []  # another starting in the same tick adds none
    assert len(jobs_of(repo, "beat")) == 2

    # The same on a minute schedule after a ten-minute gap, by one long-lived scheduler.
    minutely = Scheduler(repo, [Schedule("minutely", "* * * * *", "minutely")])
    minutely.tick(at(0))
    assert [j.idempotency_key for j in minutely.tick(at(10 * 60 + 30))] == ["periodic:minutely:2026-01-01T12:10:00Z"]
    assert len(jobs_of(repo, "minutely")) == 2


def test_a_tick_whose_job_was_pruned_is_not_enqueued_again_by_a_scheduler_starting_later(repo, clock):
    """The key alone forgot a tick once prune deleted its job: a worker starting later enqueued it again."""
    schedule = Schedule("nightly", "0 3 * * *", "nightly")
    clock.advance(15 * 3600 + 30)  # the database's clock too: a tick ahead of it is refused
    [job] = Scheduler(repo, [schedule]).tick(at(15 * 3600 + 30))  # 03:00:30 on 2 January
    assert job.idempotency_key == "periodic:nightly:2026-01-02T03:00:00Z"
    held = repo.claim("w", types=["nightly"])
    repo.complete(held.id, worker_id="w", attempt=held.attempt)
    clock.advance(7200)
    assert repo.prune(timedelta(seconds=3600)) == 1 and repo.find_by_id(job.id) is None
    assert Scheduler(repo, [schedule]).tick(at(16 * 3600)) == []  # a worker started since: still the same tick
    assert jobs_of(repo, "nightly") == []
    [line] = describe_schedules(repo, [schedule], at(16 * 3600))  # the listing still knows when it last ran
    assert (line.last_run, line.last_job_id) == (datetime(2026, 1, 2, 3, tzinfo=UTC), None)
    clock.advance(24 * 3600)
    [tomorrow] = Scheduler(repo, [schedule]).tick(at(16 * 3600 + 24 * 3600))
    assert tomorrow.idempotency_key == "periodic:nightly:2026-01-03T03:00:00Z"
    # A schedule's tick record is its own: another schedule's first tick is enqueued.
    assert len(Scheduler(repo, [Schedule("hourly", "0 * * * *", "hourly")]).tick(at(16 * 3600))) == 1


def test_two_schedulers_ticking_together_create_one_job_per_tick(db_url, clock):
    # Each scheduler has its own connection, as on two hosts; both tick every simulated second at once.
    seconds = 40
    schedule = Schedule("beat", EVERY_SECOND, "beat", {"n": 1})
    repos = [JobRepository(open_database(db_url), clock=clock) for _ in range(2)]
    start = threading.Barrier(2)
    created: dict[int, list] = {0: [], 1: []}
    errors = []

    def run(index: int) -> None:
        scheduler = Scheduler(repos[index], [schedule])
        try:
            for second in range(seconds):
                start.wait(WAIT)
                created[index].extend(scheduler.tick(at(second + random.random() * 0.9)))
        except Exception as exc:  # "database is locked" included: any error fails the test
            errors.append(repr(exc))
            start.abort()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT * 3)
    try:
        assert errors == []
        keys = [job.idempotency_key for job in jobs_of(repos[0], "beat")]
        assert len(keys) == len(set(keys)) == seconds
        assert keys == [f"periodic:beat:2026-01-01T12:00:{second:02d}Z" for second in range(seconds)]
        # Each tick was created by exactly one of them; the other got the same job back.
        assert len(created[0]) + len(created[1]) == seconds
        assert not {j.id for j in created[0]} & {j.id for j in created[1]}
    finally:
        for repo in repos:
            repo.db.close()


class FailingOnce:
    """A repository whose next create fails as if the database went away."""

    def __init__(self, repo):
        self.repo = repo
        self.fail_next = True

    def create_tick(self, *args, **kwargs):
        if self.fail_next:
            self.fail_next = False
            raise pw.OperationalError("server closed the connection unexpectedly")
        return self.repo.create_tick(*args, **kwargs)


def test_a_tick_whose_create_failed_is_owed_and_tried_again(repo, caplog):
    schedule = Schedule("report", "*/5 * * * *", "report")
    flaky = FailingOnce(repo)
    scheduler = Scheduler(flaky, [schedule], clock=FakeClock(at(10)))

    with caplog.at_level(logging.ERROR):
        assert scheduler.tick(at(10)) == []
    assert "schedule report: could not enqueue the tick" in caplog.text
    assert "(OperationalError: server closed the connection unexpectedly)" in caplog.text
    assert "Traceback" not in caplog.text  # an operator's log line, not a traceback
    assert scheduler.next_due(at(10)) == at(10)  # owed now
    assert scheduler._wait_after(at(10)) == RETRY_AFTER
    [job] = scheduler.tick(at(15))
    assert job.idempotency_key == "periodic:report:2026-01-01T12:00:00Z"
    assert scheduler.next_due(at(15)) == at(300)


def test_another_definition_of_the_same_schedule_takes_the_tick_without_an_error(repo, caplog):
    # A rolling deploy: old and new workers define "report" with different payloads.
    old = Scheduler(repo, [Schedule("report", "* * * * *", "report", {"format": "pdf"})])
    new = Scheduler(repo, [Schedule("report", "* * * * *", "report", {"format": "html"})])
    [job] = old.tick(at(0))
    with caplog.at_level(logging.WARNING):
        assert new.tick(at(30)) == []
    assert f"was enqueued as job {job.id} by another definition" in caplog.text
    assert new.next_due(at(30)) == at(60)  # the tick counts as enqueued: not retried
    assert len(jobs_of(repo, "report")) == 1


def test_a_tick_ahead_of_the_database_s_clock_is_refused_and_does_not_silence_the_schedule(repo, clock, caplog):
    """A host whose clock was a year fast enqueued its tick and recorded it: every scheduler after it found each
    tick "enqueued before" and skipped the schedule for that year, with no line in any log."""
    schedule = Schedule("nightly", "0 3 * * *", "nightly")
    fast = Scheduler(repo, [schedule], clock=FakeClock(START + timedelta(days=365)))
    with caplog.at_level(logging.ERROR):
        assert fast.tick() == []
    assert "schedule nightly: could not enqueue the tick of 2027-01-01 03:00:00+00:00" in caplog.text
    assert "is ahead of the database's clock (2026-01-01T12:00:00Z) by more than 5 minutes" in caplog.text
    assert "the clock of the scheduler's host or of the database server is wrong; set it right (NTP)" in caplog.text
    assert jobs_of(repo, "nightly") == [] and repo.last_tick("nightly") is None
    assert fast.next_due() == fast.clock()  # owed: tried again (and said again) until its clock is right
    # A host with the right clock enqueues the schedule's ticks as if the fast one had not been there.
    [job] = Scheduler(repo, [schedule], clock=clock).tick()
    assert job.idempotency_key == "periodic:nightly:2026-01-01T03:00:00Z"
    # A clock a few minutes fast (less than MAX_TICK_AHEAD) only notices its ticks early.
    early = Scheduler(repo, [Schedule("often", "*/5 * * * *", "often")], clock=lambda: clock() + timedelta(minutes=4))
    clock.advance(60)
    assert [job.idempotency_key for job in early.tick()] == ["periodic:often:2026-01-01T12:05:00Z"]


def test_a_tick_record_ahead_of_the_database_s_clock_is_not_trusted(repo):
    # Written before ticks were checked against the database's clock, by a host whose clock was a year fast.
    repo.SchemaMeta.insert(key=tick_record_key("nightly"), value="2027-01-01T03:00:00.000000Z").execute()
    schedule = Schedule("nightly", "0 3 * * *", "nightly")
    [job] = Scheduler(repo, [schedule]).tick(START)
    assert job.idempotency_key == "periodic:nightly:2026-01-01T03:00:00Z"
    assert repo.last_tick("nightly") == datetime(2026, 1, 1, 3, tzinfo=UTC)  # replaced: trusted again from here
    assert Scheduler(repo, [schedule]).tick(START + timedelta(seconds=1)) == []


def test_a_scheduler_without_schedules_sleeps_long():
    scheduler = Scheduler(None, [])
    assert scheduler.tick(START) == [] and scheduler.next_due(START) is None


# --- the schedules listing ------------------------------------------------------------------------


def test_describe_schedules_shows_last_and_next_runs(repo, clock):
    clock.advance(7300)  # the database's clock: no tick below is ahead of it
    # Names that a LIKE pattern or a case-insensitive match would confuse with one another.
    names = ["nightly_report", "nightlyXreport", "nightly", "Nightly", "never"]
    schedules = [Schedule(name, "0 * * * *", name, {"name": name}) for name in names]
    ran = [s for s in schedules if s.name != "never"]
    Scheduler(repo, ran[:1]).tick(at(0))  # nightly_report at 12:00
    Scheduler(repo, ran).tick(at(3600))  # all but "never" at 13:00
    Scheduler(repo, ran[1:2]).tick(at(7200))  # nightlyXreport again at 14:00
    repo.complete(repo.claim("w1", types=["nightly"]).id, worker_id="w1")

    lines = {line.name: line for line in describe_schedules(repo, schedules, at(7300))}

    thirteen, fourteen = datetime(2026, 1, 1, 13, tzinfo=UTC), datetime(2026, 1, 1, 14, tzinfo=UTC)
    assert {name: line.last_run for name, line in lines.items()} == {
        "nightly_report": thirteen,
        "nightlyXreport": fourteen,
        "nightly": thirteen,
        "Nightly": thirteen,
        "never": None,
    }
    for name in names[:4]:
        assert repo.find_by_id(lines[name].last_job_id).payload == {"name": name}
    assert {name: line.last_status for name, line in lines.items()} == {
        "nightly_report": "pending",
        "nightlyXreport": "pending",
        "nightly": "completed",
        "Nightly": "pending",
        "never": None,
    }
    assert lines["never"].last_job_id is None
    assert {line.next_run for line in lines.values()} == {datetime(2026, 1, 1, 15, tzinfo=UTC)}
    assert (lines["nightly"].cron, lines["nightly"].type) == ("0 * * * *", "nightly")


def test_describe_schedules_reads_the_recorded_tick_s_job_by_its_key_not_by_a_scan(repo, monkeypatch):
    """The listing read each schedule's job by a scan of every keyed job, newest first: 0.2 s per schedule at
    300,000 jobs for one whose job was not among the newest rows (a monthly one), at each console refresh."""
    schedule = Schedule("monthly", "0 0 1 * *", "monthly")
    [job] = Scheduler(repo, [schedule]).tick(START)
    repo.create_many([{"type": "echo", "idempotency_key": f"order-{i}"} for i in range(50)])  # newer keyed jobs

    def scan(repo, name):
        raise AssertionError(f"scanned the keyed jobs for {name}")

    with monkeypatch.context() as patched:
        patched.setattr(scheduler_module, "last_job", scan)
        [line] = describe_schedules(repo, [schedule], START)
    assert (line.last_run, line.last_job_id, line.last_status) == (datetime(2026, 1, 1, tzinfo=UTC), job.id, "pending")
    # No record (enqueued through an old server's POST /jobs, with the key alone): the scan still finds it.
    old, _ = repo.create("legacy", idempotency_key="periodic:legacy:2026-01-01T11:00:00Z")
    [line] = describe_schedules(repo, [Schedule("legacy", "0 * * * *", "legacy")], START)
    assert (line.last_run, line.last_job_id) == (datetime(2026, 1, 1, 11, tzinfo=UTC), old.id)


# --- real time: worker-like scheduler threads -------------------------------------------------------


def test_two_scheduler_threads_on_an_every_second_schedule_create_one_job_per_tick(db_url):
    schedule = Schedule("beat", EVERY_SECOND, "beat")
    stop = threading.Event()
    created = []
    lock = threading.Lock()
    schedulers = []
    for _ in range(2):  # two workers: each its own connection and real clock
        scheduler = Scheduler(JobRepository(open_database(db_url)), [schedule])
        plain_tick = scheduler.tick

        def counting_tick(now=None, plain_tick=plain_tick):
            jobs = plain_tick(now)
            with lock:
                created.extend(jobs)
            return jobs

        scheduler.tick = counting_tick
        schedulers.append(scheduler)
    threads = [threading.Thread(target=s.run_forever, args=(stop,)) for s in schedulers]
    for thread in threads:
        thread.start()
    time.sleep(3.2)
    stop.set()
    for thread in threads:
        thread.join(WAIT)
    try:
        assert not any(thread.is_alive() for thread in threads)
        keys = [job.idempotency_key for job in jobs_of(schedulers[0].repo, "beat")]
        ticks = {datetime.strptime(key, "periodic:beat:%Y-%m-%dT%H:%M:%SZ") for key in keys}
        assert len(ticks) == len(keys) >= 2  # one job per tick, none twice
        assert sorted(job.idempotency_key for job in created) == sorted(keys)  # each created by one scheduler
    finally:
        for scheduler in schedulers:
            scheduler.repo.db.close()


def test_run_forever_returns_soon_after_the_stop_event(repo, clock):
    scheduler = Scheduler(repo, [Schedule("daily", "@daily", "daily")], clock=clock)  # the database's clock
    stop = threading.Event()
    thread = threading.Thread(target=scheduler.run_forever, args=(stop,))
    thread.start()
    time.sleep(0.2)
    began = time.monotonic()
    stop.set()
    thread.join(WAIT)
    assert not thread.is_alive() and time.monotonic() - began < 2
    assert len(jobs_of(repo, "daily")) == 1  # the latest tick (today's midnight) was enqueued on start


def test_a_queue_s_scheduler_enqueues_its_periodic_tasks_and_a_worker_runs_them(live_repo):
    handlers = HandlerRegistry(with_builtins=False)
    queue = Queue(repository=live_repo, registry=handlers)
    calls = []

    @queue.periodic(EVERY_SECOND, name="beat", payload={"n": 7})
    def beat(n, unit="s"):
        calls.append((n, unit, current_job().idempotency_key))

    [job] = queue.scheduler().tick()
    Worker(live_repo, registry=handlers, worker_id="w1", poll_interval=0.01).run(burst=True)
    assert calls == [(7, "s", job.idempotency_key)]
    assert live_repo.find_by_id(job.id).status == "completed"


def test_registered_schedules_are_what_a_worker_finds_after_importing_its_handlers():
    handlers = HandlerRegistry(with_builtins=False)
    first, again, elsewhere = Queue(registry=handlers), Queue(registry=handlers), Queue(registry=HandlerRegistry())

    def report(to="ops"): ...

    # The same module imported twice (as __main__ and by name) defines the same schedule twice.
    first.periodic("0 3 * * *", name="report")(report)
    again.periodic("0 3 * * *", name="report")(report)
    first.task("cleanup", cron="@daily")(lambda: None)
    elsewhere.periodic("* * * * *", name="other")(lambda: None)

    assert [s.name for s in registered_schedules(handlers)] == ["cleanup", "report"]
    changed = Queue(registry=handlers)  # kept: a module's Queue lives as long as its module
    changed.periodic("0 4 * * *", name="report")(report)
    with pytest.raises(ValidationError, match="two different schedules are named 'report'"):
        registered_schedules(handlers)
