"""Exactly-once accounting while a chaos loop SIGKILLs and restarts worker processes (`pytest --soak`: longer).

Every execution is recorded in a ledger before the handler does its work. At the end every job is
completed or failed, and a job ran more than once only if every earlier run was on a worker that was
killed (at-least-once, and only where a kill explains it).
"""

from __future__ import annotations

import random
import time

import pytest
from fleet import Fleet, iter_all

from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository

STALE_AFTER = 3.0  # heartbeats every 1 s: a loaded 2-core machine cannot starve a live worker that long


@pytest.mark.timeout(3600)
def test_nothing_lost_or_run_twice_under_sigkill(db_url, tmp_path, soak):
    jobs, workers = (20_000, 8) if soak else (1_500, 4)  # --soak: a longer run
    rng = random.Random(20261202)
    repo = JobRepository(open_database(db_url))
    with repo.db.atomic():
        for i in range(jobs):
            repo.create("record", {"i": i, "max_sleep": 0.01}, max_retries=10, retry_backoff=0)
    ledger = tmp_path / "ledger.db"
    fleet = Fleet(db_url, ledger, tmp_path, stale_after=STALE_AFTER)
    for _ in range(workers):
        fleet.start()

    deadline = time.monotonic() + (3000 if soak else 400)
    while time.monotonic() < deadline:
        counts = repo.counts()
        if counts["pending"] == 0 and counts["running"] == 0:
            break
        time.sleep(rng.uniform(0.2, 0.6))
        if counts["pending"] > jobs // 10:  # chaos while there is work to interrupt
            fleet.kill_one(rng)
            fleet.start()
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
