"""Exactly-once accounting while a chaos loop SIGKILLs and restarts worker processes (`pytest --soak`: longer).

Every execution is recorded in a ledger before the handler does its work. At the end every job is
completed or failed, and a job ran more than once only if every earlier run was on a worker that was
killed (at-least-once, and only where a kill explains it).
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import sys
import time

import pytest
from fleet import Fleet, iter_all

from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository

STALE_AFTER = 3.0  # heartbeats every 1 s: a loaded 2-core machine cannot starve a live worker that long


def record_jobs(db_url: str, count: int) -> JobRepository:
    """The repository, holding ``count`` short ``record`` jobs with retries enough to outlast the kills."""
    repo = JobRepository(open_database(db_url))
    with repo.db.atomic():
        for i in range(count):
            repo.create("record", {"i": i, "max_sleep": 0.01}, max_retries=10, retry_backoff=0)
    return repo


def chaos_until_drained(repo: JobRepository, jobs: int, rng: random.Random, soak: bool, kill) -> None:
    """Every 0.2-0.6 s, ``kill()`` while more than a tenth of the jobs wait (chaos while there is work to
    interrupt), until no job is pending or running (or the time is up: the caller's checks say what is left)."""
    deadline = time.monotonic() + (3000 if soak else 400)
    while time.monotonic() < deadline:
        counts = repo.counts()
        if counts["pending"] == 0 and counts["running"] == 0:
            return
        time.sleep(rng.uniform(0.2, 0.6))
        if counts["pending"] > jobs // 10:
            kill()


@pytest.mark.timeout(3600)
def test_nothing_lost_or_run_twice_under_sigkill(db_url, tmp_path, soak):
    jobs, workers = (20_000, 8) if soak else (1_500, 4)  # --soak: a longer run
    rng = random.Random(20261202)
    repo = record_jobs(db_url, jobs)
    ledger = tmp_path / "ledger.db"
    fleet = Fleet(db_url, ledger, tmp_path, stale_after=STALE_AFTER)
    for _ in range(workers):
        fleet.start()

    def kill_and_restart() -> None:
        fleet.kill_one(rng)
        fleet.start()

    chaos_until_drained(repo, jobs, rng, soak, kill_and_restart)
    exit_codes = fleet.stop_all()

    counts = repo.counts()
    logs = "\n".join(p.read_text()[-2000:] for p in tmp_path.glob("chaos-*.log"))
    assert counts["pending"] == 0 and counts["running"] == 0, (counts, logs)
    assert counts["completed"] + counts["failed"] == jobs
    assert set(exit_codes.values()) == {0}, exit_codes
    assert len(fleet.killed) >= 3, "the chaos loop should have killed workers mid-run"

    runs = fleet.runs()
    by_id = {job.id: job for job in iter_all(repo)}
    duplicates = 0
    for job_id, job in by_id.items():
        executions = runs.get(job_id, [])
        if job.status == "completed":
            assert executions, f"job {job_id} completed without running"
            earlier = executions[:-1]
            duplicates += len(earlier)
            # Every earlier run was on a killed worker: a reap explains it.
            assert all(worker_id in fleet.killed for _, worker_id in earlier), (job_id, executions)
            assert executions[-1][1] == job.worker_id
        else:
            assert "lost its claim" in job.error, (job_id, job.error)
    print(f"\nchaos: {jobs} jobs, {len(fleet.killed)} kills, {duplicates} re-runs (all after a kill)")
    if db_url.startswith("sqlite"):
        assert repo.db.execute_sql("PRAGMA integrity_check").fetchone()[0] == "ok"


# Batched acknowledgements (hot-path issue 17): workers batch completions by default (5 ms); the chaos below
# holds them 50 ms, so a kill or a cancel often lands while completions wait to be written.
BATCHED_ACKS: tuple[str, ...] = ("--ack-delay", "0.05")


def chaos_jobs(size: int) -> list[dict]:
    """Short jobs on two queues, jobs that overrun their timeout, and coroutines long enough to cancel."""
    specs = [
        {"type": "record", "payload": {"i": i, "max_sleep": 0.01}, "queue": "reports" if i % 3 == 0 else "default",
         "max_retries": 10, "retry_backoff": 0}
        for i in range(size)
    ]  # fmt: skip
    specs += [
        {"type": "slow", "payload": {"sleep": 1.0}, "timeout": 0.3, "max_retries": 1, "retry_backoff": 0}
        for _ in range(size // 40)
    ]
    specs += [{"type": "long", "payload": {"sleep": 2.0}, "max_retries": 10, "retry_backoff": 0}] * (size // 15)
    random.Random(size).shuffle(specs)  # every kind all through the drain, while the chaos goes on
    return specs


class Operator:
    """The chaos loop's operator: pauses and resumes the reports queue, cancels long jobs, running or not."""

    def __init__(self, repo: JobRepository, rng: random.Random):
        self.repo, self.rng = repo, rng
        self.pauses = 0
        self.cancelled: set[int] = set()

    def act(self, *, pause: bool) -> None:
        if pause:
            paused = self.repo.pause_queue("reports") if self.pauses % 2 == 0 else self.repo.resume_queue("reports")
            assert paused is not None
            self.pauses += 1
        running = self.repo.list(status="running", type="long", limit=100)
        for job in self.rng.sample(running, min(2, len(running))):
            if self.repo.cancel(job.id) is not None:
                self.cancelled.add(job.id)
        pending = self.repo.list(status="pending", type="long", limit=100)
        if pending and self.rng.random() < 0.2:
            job = self.rng.choice(pending)
            if self.repo.cancel(job.id) is not None:
                self.cancelled.add(job.id)


def explained(execution, job_errors, killed) -> bool:
    """An earlier run is explained by a kill of its worker, or by its own failure (a timeout): a reap of a live
    worker's claim would leave a "lost its claim" error from a worker that was never killed, and fail this."""
    attempt, worker_id, _started = execution
    if worker_id in killed:
        return True
    return any(e.attempt == attempt and e.worker_id == worker_id and "timed out" in e.error for e in job_errors)


@pytest.mark.timeout(3600)
def test_chaos_over_pauses_cancels_and_timeouts(db_url, tmp_path, soak):
    size, workers = (6_000, 8) if soak else (600, 4)
    rng = random.Random(18)
    repo = JobRepository(open_database(db_url))
    specs = chaos_jobs(size)
    repo.create_many(specs)
    fleet = Fleet(db_url, tmp_path / "ledger.db", tmp_path, stale_after=STALE_AFTER, extra=BATCHED_ACKS)
    for _ in range(workers):
        fleet.start()
    operator = Operator(repo, rng)

    deadline = time.monotonic() + (3000 if soak else 400)
    tick = 0
    while time.monotonic() < deadline:
        counts = repo.counts()
        if counts["pending"] == 0 and counts["running"] == 0:
            break
        time.sleep(rng.uniform(0.2, 0.5))
        tick += 1
        busy = counts["pending"] > len(specs) // 10
        # Pause or resume on every fourth busy tick, kills on every third: a set cadence, where a draw of
        # 0.3 a tick once left a whole busy stretch of 18 ticks without a single pause.
        operator.act(pause=busy and tick % 4 == 2)
        if busy:
            if tick % 3 == 0:
                fleet.kill_one(rng)
                fleet.start()
        elif operator.pauses % 2 == 1:  # the drain's tail: the reports queue must not stay paused
            assert repo.resume_queue("reports") is not None
            operator.pauses += 1
    exit_codes = fleet.stop_all()

    counts = repo.counts()
    assert counts["pending"] == 0 and counts["running"] == 0, (counts, fleet.logs())
    assert sum(counts.values()) == len(specs), counts
    assert set(exit_codes.values()) == {0}, exit_codes
    assert len(fleet.killed) >= 2 and operator.pauses >= 2, (fleet.killed, operator.pauses)

    runs = fleet.runs(started=True)
    duplicates = cancelled_running = timed_out = 0
    for job in iter_all(repo):
        executions, job_errors = runs.get(job.id, []), repo.errors_for(job.id)
        earlier = executions if job.status != "completed" else executions[:-1]
        unexplained = [e for e in earlier if not explained(e, job_errors, fleet.killed)]
        if job.status == "cancelled":
            assert job.id in operator.cancelled, job.id
            acknowledged = job.updated_at.timestamp()
            # A run's start is written down before its work; none may come after the cancel was acknowledged.
            assert all(started <= acknowledged + 0.001 for _, _, started in executions), (job.id, executions)
            cancelled_running += bool(executions)
            continue  # its last run was stopped by the cancel
        if job.status == "completed":
            assert executions and executions[-1][1] == job.worker_id, (job.id, executions)
        elif job.type == "slow":
            timed_out += 1
            assert "timed out" in job.error or "lost its claim" in job.error, (job.id, job.error)
        else:
            assert "lost its claim" in job.error, (job.id, job.error)
        errors = [(e.attempt, e.worker_id, e.error) for e in job_errors]
        assert not unexplained, (job.id, job.status, executions, errors)
        duplicates += sum(worker_id in fleet.killed for _, worker_id, _ in earlier)
    assert cancelled_running >= 1 and timed_out >= 1, (cancelled_running, timed_out)
    acks = f"batched ({' '.join(BATCHED_ACKS)})" if BATCHED_ACKS else "batched (default delay)"
    print(
        f"\nchaos over new states: {len(specs)} jobs, {len(fleet.killed)} kills, {operator.pauses} pauses/resumes, "
        f"{len(operator.cancelled)} cancels ({cancelled_running} while running), {timed_out} timed out, "
        f"{duplicates} re-runs after a kill, acks {acks}"
    )


def children_of(pid: int) -> list[int]:
    """The live processes whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry))
    return found


@pytest.mark.timeout(3600)
def test_a_pool_loses_nothing_while_its_processes_are_sigkilled_and_replaced(db_url, tmp_path, soak):
    """``--processes 4``: the chaos loop SIGKILLs the pool's processes and the pool replaces them (each a
    worker of its own, ``host-pid``); every job ends once, re-run only after a kill, and the pool stops
    cleanly."""
    jobs = 6_000 if soak else 1_500
    rng = random.Random(20261205)
    repo = record_jobs(db_url, jobs)
    ledger = tmp_path / "ledger.db"
    fleet = Fleet(db_url, ledger, tmp_path, stale_after=STALE_AFTER)  # its environment and ledger
    log_path = tmp_path / "pool.log"
    with open(log_path, "w") as log:
        pool = subprocess.Popen(
            [
                sys.executable, "-m", "queue_core.worker", "--db", db_url, "--handlers", "chaos_handlers",
                "--processes", "4", "--concurrency", "2", "--poll-interval", "0.05",
                "--stale-after", str(STALE_AFTER), "--shutdown-timeout", "10",
            ],
            env=fleet.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    host, killed = socket.gethostname(), set()
    # Kills in the normal suite: enough to kill one process twice (a young replacement's next delay doubles),
    # few enough that the pool is not left waiting out replacement delays that grow to 30 s: unbounded, this
    # test spent four minutes of the suite's half hour waiting for replacements. ``--soak`` kills unbounded.
    most_kills = None if soak else 6

    def kill_one() -> None:  # the pool replaces it
        if most_kills is not None and len(killed) >= most_kills:
            return
        if victims := children_of(pool.pid):
            victim = rng.choice(victims)
            os.kill(victim, signal.SIGKILL)
            killed.add(f"{host}-{victim}")

    try:
        chaos_until_drained(repo, jobs, rng, soak, kill_one)
        pool.send_signal(signal.SIGTERM)
        exit_code = pool.wait(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pool.pid, signal.SIGKILL)
        pool.wait()

    log = log_path.read_text()
    counts = repo.counts()
    assert counts["pending"] == 0 and counts["running"] == 0, (counts, log[-3000:])
    assert counts["completed"] + counts["failed"] == jobs
    assert exit_code == 0, log[-3000:]
    assert len(killed) >= 3, "the chaos loop should have killed processes mid-run"
    assert log.count("was killed by SIGKILL: starting another") == len(killed), log[-3000:]
    assert "took back" in log  # the replacements' takeover of a killed process's jobs, not the stale reaper
    runs = fleet.runs()
    for job in iter_all(repo):
        executions = runs.get(job.id, [])
        if job.status == "completed":
            assert executions, f"job {job.id} completed without running"
            assert all(worker_id in killed for _, worker_id in executions[:-1]), (job.id, executions)
            assert executions[-1][1] == job.worker_id
        else:
            assert "lost its claim" in job.error, (job.id, job.error)
