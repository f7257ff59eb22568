"""Bulk retry while worker processes drain the queue (both backends; ``pytest --soak``: 100,000 jobs).

Every failed job is retried exactly once and then run exactly once (the ledger of executions and the
attempt numbers show it), nothing is lost, nothing outside the plan is touched, and no process sees
"database is locked". A job that changed between the dry run and the apply is skipped and counted.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from queue_core.store.database import open_database
from queue_core.store.models import is_postgres
from queue_core.store.repository import JobRepository

ROOT = Path(__file__).resolve().parents[2]
WORKERS = 4


def seed_failed(repo: JobRepository, n: int, type: str = "record") -> list[int]:
    # max_retries 0: a retried job that fails again ends failed (on its new attempt), not backed off.
    """``n`` jobs left as a worker's failed first attempt leaves them (one UPDATE: failing 100,000 jobs one
    transaction each would take minutes of setup)."""
    ids = []
    for start in range(0, n, 10_000):
        chunk = range(start, min(n, start + 10_000))
        specs = [{"type": type, "payload": {"i": i, "max_sleep": 0}, "max_retries": 0} for i in chunk]
        ids += [job.id for job in repo.create_many(specs)]
    Job = repo.Job
    Job.update(status="failed", attempt=1, worker_id="gone", error="card 42 declined").where(
        Job.id.in_(Job.select(Job.id).where(Job.type == type))
    ).execute()
    return ids


class Workers:
    """``python -m queue_core.worker`` processes running the chaos ledger's ``record`` handler."""

    def __init__(self, db_url: str, ledger: Path, log_dir: Path):
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests" / "reliability")]),
            "CHAOS_LEDGER": str(ledger),
        }
        self.logs = [log_dir / f"bulk-{i}.log" for i in range(WORKERS)]
        self.procs = []
        for i, log in enumerate(self.logs):
            command = [
                sys.executable, "-m", "queue_core.worker", "--db", db_url, "--handlers", "chaos_handlers",
                "--worker-id", f"bulk-{i}", "--concurrency", "2", "--poll-interval", "0.02",
                "--max-poll-interval", "0.1", "--no-scheduler",
            ]  # fmt: skip
            with open(log, "w") as out:
                self.procs.append(subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT))

    def stop(self) -> list[int]:
        for proc in self.procs:
            proc.terminate()
        return [proc.wait(timeout=60) for proc in self.procs]

    def text(self) -> str:
        return "\n".join(log.read_text() for log in self.logs)


def wait_for(predicate, timeout: float, what: str, repo: JobRepository) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {repo.counts()}"
        time.sleep(0.5)


def drained(repo: JobRepository, n: int):
    """``wait_for``'s test that ``n`` jobs completed; on PostgreSQL it vacuums ``jobs`` every few seconds
    first, as autovacuum does in production (the schema asks for it at 1 % dead rows). The shared test
    server may run with autovacuum off, and then the claim's partial index fills with the dead entries of
    every finished job: 100,000 retried jobs drained at 17 jobs/s instead of hundreds."""
    last = [time.monotonic()]

    def check() -> bool:
        if is_postgres(repo.db) and time.monotonic() - last[0] > 5:
            repo.db.execute_sql("VACUUM jobs")
            last[0] = time.monotonic()
        return repo.counts()["completed"] == n

    return check


def executions(ledger: Path) -> Counter:
    with sqlite3.connect(ledger) as con:
        return Counter(con.execute("SELECT job_id, attempt FROM executions").fetchall())


@pytest.mark.timeout(1800)
def test_bulk_retry_while_workers_drain_retries_and_runs_each_job_exactly_once(db_url, tmp_path, soak):
    n = 100_000 if soak else 10_000
    repo = JobRepository(open_database(db_url))
    ids = seed_failed(repo, n)
    ledger = tmp_path / "ledger.db"
    workers = Workers(db_url, ledger, tmp_path)
    try:
        wait_for(lambda: sum(w.state == "running" for w in repo.workers()) == WORKERS, 60, "the workers to start", repo)
        started = time.perf_counter()
        outcome = repo.bulk("retry", "type:record", status="failed")
        took = time.perf_counter() - started
        backend = db_url.split(":")[0]
        print(f"\nbulk retry of {n:,} failed jobs on {backend} with {WORKERS} workers draining: {took:.2f}s")
        wait_for(drained(repo, n), 1500, "the workers to drain the retried jobs", repo)
    finally:
        codes = workers.stop()

    assert (outcome.planned, outcome.changed, outcome.skipped, outcome.stopped) == (n, n, 0, False)
    assert "locked" not in workers.text(), workers.text()[-3000:]
    assert codes == [0] * WORKERS, workers.text()[-3000:]
    assert repo.counts() == {"pending": 0, "running": 0, "completed": n, "failed": 0, "cancelled": 0}
    # Each job retried once (attempt 1 failed, attempt 2 the retry) and run once, on that attempt.
    attempts = Counter(attempt for (attempt,) in repo.Job.select(repo.Job.attempt).tuples())
    assert attempts == {2: n}
    assert executions(ledger) == Counter({(job_id, 2): 1 for job_id in ids})


@pytest.mark.timeout(600)
def test_bulk_apply_skips_jobs_that_changed_since_the_plan_and_touches_nothing_else(db_url, tmp_path):
    repo = JobRepository(open_database(db_url))
    ids = seed_failed(repo, 3000)
    plan = repo.plan_bulk("retry", "type:record")
    outside = seed_failed(repo, 50, type="other")  # failed after the dry run: not in the plan

    # Between the dry run and the confirmation, before any worker runs: jobs of the plan retried by hand
    # and then completed, failed again (a new attempt, the same status), still running, or deleted.
    completed, failed_again, running, deleted = ids[10:15], ids[1000:1005], ids[2000:2005], ids[2990:2995]
    for job_id in completed + failed_again + running:
        repo.retry(job_id)
    for job in repo.claim_many("racer", 15):
        if job.id in completed:
            repo.complete(job.id, worker_id="racer", attempt=job.attempt)
        elif job.id in failed_again:
            repo.fail(job.id, "again", worker_id="racer", attempt=job.attempt)
    repo.bulk("delete", ids=deleted)

    # During the apply, the workers claim what each batch retries, and an operator retries by hand the
    # jobs the next batch is about to take.
    by_hand = []
    racer = JobRepository(open_database(db_url))

    def race(progress) -> None:
        # In the middle of the next batch: clear of the jobs changed above, which sit at batch starts.
        upcoming = plan.ids[progress.done + 100 : progress.done + 102].tolist()
        for job_id in upcoming:
            if racer.retry(job_id) is not None:
                by_hand.append(job_id)

    ledger = tmp_path / "ledger.db"
    workers = Workers(db_url, ledger, tmp_path)
    try:
        wait_for(lambda: sum(w.state == "running" for w in repo.workers()) == WORKERS, 60, "the workers to start", repo)
        outcome = repo.apply_bulk(plan, batch_size=200, on_batch=race)
        for job_id in running:
            repo.complete(job_id, worker_id="racer", attempt=2)
        left = len(ids) - len(deleted) - len(failed_again)
        wait_for(drained(repo, left), 300, "the drain", repo)
    finally:
        workers.stop()

    changed_meanwhile = completed + failed_again + running + deleted + by_hand
    assert len(by_hand) >= 20
    assert (outcome.planned, outcome.skipped) == (len(ids), len(changed_meanwhile))
    assert outcome.changed == len(ids) - len(changed_meanwhile)
    for job_id in completed + running:
        assert (repo.find_by_id(job_id).status, repo.find_by_id(job_id).attempt) == ("completed", 2)
    for job_id in failed_again:
        job = repo.find_by_id(job_id)
        assert (job.status, job.attempt, job.error) == ("failed", 2, "again")
    assert all(repo.find_by_id(job_id) is None for job_id in deleted)
    for job_id in outside:
        assert (repo.find_by_id(job_id).status, repo.find_by_id(job_id).attempt) == ("failed", 1)
    # Every other job was retried once (by the bulk or by hand, never both) and ran once, on attempt 2.
    runs = executions(ledger)
    expected = set(ids) - set(completed + failed_again + running + deleted)
    assert runs == Counter({(job_id, 2): 1 for job_id in expected})
