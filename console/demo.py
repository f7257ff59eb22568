"""Demo data: ``seed_demo`` for a newcomer's first run, ``build_scene`` for screenshots and snapshot tests.

Both go through ``JobRepository`` like any other client. ``build_scene`` is deterministic: a fixed clock
moved by hand and a seeded random generator give the same jobs, ids and times on every run.

``--demo`` writes into whatever database it is pointed at, so ``demo_refusal`` says when that could be
someone's real queue: a PostgreSQL server, or a database holding jobs the demo did not seed (demo jobs
carry an idempotency key starting with ``DEMO_KEY``). ``--force-demo`` overrides it.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import peewee as pw

from queue_core.clock import ManualClock
from queue_core.store.repository import JobRepository
from queue_core.validation import MAX_LIST_LIMIT
from queue_core.worker import WorkerEvent, WorkerStats
from queue_core.worker.events import describe
from queue_core.worker.handlers import BUILTINS
from queue_core.worker.scheduler import Schedule

SCENE_END = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)  # "now" in every screenshot
DEMO_KEY = "demo:"  # the idempotency key of every job seed_demo creates starts so: "demo:<run>:<n>"
FORCE_FLAG = "--force-demo"


def scene_schedules() -> tuple[Schedule, ...]:
    """The schedules view's picture: periodic jobs as a --handlers module would declare them. Built when a
    scene is drawn, not when the console starts: reading a cron expression loads croniter (~25 ms, ~2 MB)."""
    return (
        Schedule(name="nightly-report", cron="0 3 * * *", type="generate-report"),
        Schedule(name="sync-crm", cron="*/15 * * * *", type="sync-crm"),
    )


def seed_demo(repo: JobRepository, rng: random.Random | None = None) -> int:
    """A few dozen jobs of the built-in handler types, so the embedded worker has something to show."""
    rng = rng or random.Random()
    run = uuid.uuid4().hex[:8]  # a fresh prefix per run: seeding again is never an idempotent no-op
    specs = [
        ("echo", {"message": f"hello #{i + 1}"}, {"priority": rng.choice(["low", "medium", "high"])}) for i in range(12)
    ]
    specs += [
        ("sleep", {"seconds": round(rng.uniform(0.5, 4.0), 1)}, {"priority": rng.choice(["low", "medium"])})
        for _ in range(10)
    ]
    specs += [("flaky", {"p": 0.5, "n": i}, {"max_retries": 3, "retry_backoff": 1}) for i in range(6)]
    specs += [
        ("fail", {"error": f"card declined (demo #{i + 1})"}, {"max_retries": 1, "retry_backoff": 1}) for i in range(4)
    ]
    later = repo.now() + timedelta(seconds=20)
    specs += [
        (
            "echo",
            {"message": f"delayed #{i + 1}"},
            {"priority": "critical", "run_at": later + timedelta(seconds=10 * i)},
        )
        for i in range(3)
    ]
    for n, (job_type, payload, options) in enumerate(specs):
        repo.create(job_type, payload, idempotency_key=f"{DEMO_KEY}{run}:{n}", **options)
    return len(specs)


def is_demo_job(job) -> bool:
    return (job.idempotency_key or "").startswith(DEMO_KEY)


def demo_refusal(repo: JobRepository) -> str | None:
    """Why seeding demo jobs here could hit a real queue, or None when it is a SQLite file with demo jobs only."""
    if not isinstance(repo.db, pw.SqliteDatabase):
        return (
            "--demo seeds demo jobs into a SQLite file; this database is a PostgreSQL server, which may be "
            f"production. Point --db (or $QUEUE_DB_URL) at a new SQLite file, or add {FORCE_FLAG} to seed it anyway"
        )
    real = first_job_not_seeded_by_demo(repo)
    if real is None:
        return None
    return (
        f"--demo refuses to seed a database holding jobs it did not seed (job {real.id}, type {real.type!r}). "
        f"Point --db (or $QUEUE_DB_URL) at a new SQLite file, or add {FORCE_FLAG} to seed it anyway"
    )


def first_job_not_seeded_by_demo(repo: JobRepository):
    """Pages through the jobs in id order; a real queue answers on its first page, a demo one is small."""
    after = None
    while True:
        jobs = repo.list(limit=MAX_LIST_LIMIT, after=after)
        real = next((job for job in jobs if not is_demo_job(job)), None)
        if real is not None or len(jobs) < MAX_LIST_LIMIT:
            return real
        after = jobs[-1].id


def build_scene(repo: JobRepository, clock: ManualClock) -> None:
    """Ten minutes of a small shop's queue, ending at ``SCENE_END`` with ``clock`` left there.

    Failed jobs with their attempt history, completed work for the throughput, four running jobs of which
    one is stale, and a pending backlog with a delayed job and one waiting to retry.
    """
    clock.now = SCENE_END - timedelta(minutes=10)
    # Failed for good: each job fails every attempt.
    failures = [
        ("resize-image", {"image": "img_4411.png", "width": 1200}, "UnidentifiedImageError: cannot identify image"),
        ("send-invoice", {"invoice": 7, "to": "ann@example.com"}, "SMTPRecipientsRefused: 550 mailbox unavailable"),
        ("charge-card", {"order": 1042, "amount_cents": 4999}, "PaymentDeclined: card_declined (insufficient_funds)"),
        ("sync-crm", {"account": 88}, "TimeoutError: crm.example.com did not answer within 30s"),
    ]
    for i, (job_type, payload, error) in enumerate(failures):
        job, _ = repo.create(job_type, payload, max_retries=2, priority=["high", "medium", "critical", "low"][i])
        for attempt in range(3):
            clock.advance(40)
            repo.claim(f"host-{'ab'[attempt % 2]}:{412 + attempt}", types=[job_type])
            clock.advance(3 + i)
            repo.fail(job.id, error if attempt == 2 else f"{error} (attempt {attempt + 1})")
    # Running: one claimed six minutes ago by a worker that went quiet: stale.
    clock.now = SCENE_END - timedelta(minutes=6)
    repo.create("generate-report", {"report": "monthly", "month": "2025-12"}, priority="medium")
    repo.claim("host-c:977", types=["generate-report"])
    # Completed in the last five minutes: the throughput.
    for step in range(30):
        clock.now = SCENE_END - timedelta(seconds=290 - step * 9)
        job, _ = repo.create(["echo", "send-invoice", "resize-image"][step % 3], {"n": step})
        repo.complete(repo.claim("host-a:412").id)
    clock.now = SCENE_END - timedelta(seconds=40)
    repo.create("resize-image", {"image": "img_4420.png", "width": 640}, priority="high")
    repo.create("send-invoice", {"invoice": 9, "to": "bob@example.com"})
    repo.claim_many("host-a:412", 2)
    repo.create("sleep", {"seconds": 30})
    repo.claim("host-b:413")
    clock.now = SCENE_END - timedelta(seconds=20)
    # Pending: a backlog in claim order, one job backing off after a failure, one delayed.
    backlog = [
        ("send-invoice", {"invoice": 10 + i, "to": f"customer{i}@example.com"}, ["low", "medium", "high"][i % 3])
        for i in range(9)
    ] + [("resize-image", {"image": f"img_45{i:02d}.png", "width": 320}, "low") for i in range(5)]
    for job_type, payload, priority in backlog:
        repo.create(job_type, payload, priority=priority)
    repo.create("charge-card", {"order": 1043, "amount_cents": 1250}, priority="critical")
    repo.create("sync-crm", {"account": 91}, run_at=SCENE_END + timedelta(minutes=15))
    retrying, _ = repo.create("send-email", {"template": "welcome", "user": 5012}, priority="high", max_retries=5)
    repo.claim("host-b:413", types=["send-email"])
    clock.advance(5)
    repo.fail(retrying.id, "SMTPServerDisconnected: Connection unexpectedly closed")
    clock.now = SCENE_END - timedelta(seconds=5)
    repo.heartbeat([job.id for job in repo.window("running") if job.worker_id != "host-c:977"], worker_id="host-a:412")
    repo.heartbeat([job.id for job in repo.window("running") if job.worker_id == "host-b:413"], worker_id="host-b:413")
    build_queues_and_workers(repo, clock)
    clock.now = SCENE_END


def build_queues_and_workers(repo: JobRepository, clock: ManualClock) -> None:
    """The scene's other queues (one paused), a cancelled job, and the worker registry with a lost worker."""
    for n in range(2):
        repo.create("send-email", {"template": "digest", "user": 6000 + n}, queue="mail")
    repo.create("export-csv", {"report": "weekly"}, queue="reports")
    repo.pause_queue("reports")
    stray, _ = repo.create("cleanup-tmp", {"older_than_days": 7}, priority="low")
    repo.cancel(stray.id)
    # host-c:977 was last seen when it claimed the stale job: lost for six minutes.
    seen = {"host-a:412": SCENE_END - timedelta(seconds=5), "host-b:413": SCENE_END - timedelta(seconds=5)}
    workers = [
        ("host-a:412", "host-a", 412, None, 4, (2, 30, 6)),
        ("host-b:413", "host-b", 413, ["default", "mail"], 2, (1, 0, 4)),
        ("host-c:977", "host-c", 977, ["default"], 1, (1, 0, 0)),
    ]
    for worker_id, host, pid, queues, slots, (running, done, failed) in workers:
        clock.now = SCENE_END - timedelta(minutes=12)
        repo.register_worker(worker_id, host=host, pid=pid, queues=queues, concurrency=slots, stale_after=30)
        clock.now = seen.get(worker_id, SCENE_END - timedelta(minutes=6))
        repo.worker_seen(worker_id, running=running, completed=done, failed=failed)


def add_failure_causes(repo: JobRepository, clock: ManualClock) -> None:
    """An incident for the failures view's picture (not in ``build_scene``, whose counts the other pictures
    show): two causes, many jobs each, their errors differing only in numbers and ids, on a queue of their own."""
    causes = (
        ("charge-card", "PaymentDeclined: card {card} declined for order {n} (do_not_honor)", 12),
        ("send-invoice", "SMTPServerDisconnected: 421 {host} closed the connection after {ms} ms", 7),
    )
    for job_type, error, count in causes:
        for n in range(count):
            clock.now = SCENE_END - timedelta(minutes=9, seconds=-30 * n)
            repo.create(job_type, {"order": 2000 + n}, max_retries=0, queue="incident")
            job = repo.claim("host-a:412", queues=["incident"])
            text = error.format(card=4000 + 17 * n, n=2000 + n, host=f"mx{n % 3}.example.com", ms=1200 + 37 * n)
            repo.fail(job.id, text)
    clock.now = SCENE_END


# --- the worker pane's picture: a replayed run ----------------------------------------------------

WORKER_ID = "console-demo:1"
WORKER_CONCURRENCY = 2
WORKER_JOBS = (  # built-in handler types; the two sleeps are still running when the picture is taken
    ("echo", {"message": "hello"}, "critical"),
    ("echo", {"message": "hello again"}, "critical"),
    ("fail", {"error": "card declined"}, "critical"),
    ("echo", {"message": "one more"}, "critical"),
    ("sleep", {"seconds": 600}, "high"),
    ("sleep", {"seconds": 600}, "high"),
)
QUICK_JOBS = 4  # the echo and fail jobs; the sleeps only get claimed
HANDLER_DURATION = 0.01  # seconds, every quick job: a live run measures its own


@dataclass(frozen=True)
class ReplayedWorker:
    """What the worker pane reads of a worker (id, concurrency, stats), for a run that is replayed."""

    worker_id: str
    concurrency: int
    stats: WorkerStats


def replay_worker_run(repo: JobRepository, stale_after: timedelta) -> tuple[ReplayedWorker, list[WorkerEvent]]:
    """The first second of the embedded worker on the scene, made deterministic for pictures.

    A live worker's two threads interleave their events differently on every run and measure real
    durations, so the screenshot of the pane changed from run to run. This makes the same repository
    calls the worker makes, in one order, at the repository's (fixed) clock, and returns the events it
    would have emitted, with a fixed duration.
    """
    for job_type, payload, priority in WORKER_JOBS:
        repo.create(job_type, payload, priority=priority, max_retries=0)
    types = sorted(BUILTINS)
    events = [
        WorkerEvent(
            "started",
            WORKER_ID,
            message=f"started worker={WORKER_ID} concurrency={WORKER_CONCURRENCY} burst=False types={','.join(types)}",
        )
    ]
    reaped = repo.reap_stale(stale_after)
    if reaped:
        events.append(
            WorkerEvent(
                "reaped",
                WORKER_ID,
                message=f"reaped {reaped} stale job(s) worker={WORKER_ID} (no heartbeat for "
                f"{stale_after.total_seconds():g}s): back to pending, or failed without retries left",
            )
        )
    completed = failed = 0
    for n in range(len(WORKER_JOBS)):
        job = repo.claim(WORKER_ID, types=types)
        events.append(job_event("claimed", job))
        if n >= QUICK_JOBS:
            continue
        if job.type == "fail":
            error = job.payload["error"]
            repo.fail(job.id, error, worker_id=WORKER_ID, attempt=job.attempt)
            events.append(job_event("failed", job, duration=HANDLER_DURATION, error=error))
            failed += 1
        else:
            repo.complete(job.id, worker_id=WORKER_ID, attempt=job.attempt)
            events.append(job_event("completed", job, duration=HANDLER_DURATION))
            completed += 1
    running = len(WORKER_JOBS) - QUICK_JOBS
    return ReplayedWorker(WORKER_ID, WORKER_CONCURRENCY, WorkerStats(completed, failed, running)), events


def job_event(kind: str, job, *, duration: float | None = None, error: str | None = None) -> WorkerEvent:
    return WorkerEvent(
        kind,
        WORKER_ID,
        job_id=job.id,
        job_type=job.type,
        attempt=job.attempt,
        duration=duration,
        error=error,
        message=describe(kind, WORKER_ID, job, duration, error, ""),
    )
