"""The worker on PostgreSQL: NOTIFY wakes idle workers; ``--prune-after`` keeps the table small."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support import FakeClock

from queue_core.store.repository import JobRepository
from queue_core.worker import Worker
from queue_core.worker.handlers import HandlerRegistry

ROOT = Path(__file__).resolve().parents[1]
GUARD = 20  # seconds: far below the 60 s poll interval used here, so only a wake-up can beat it
SLOW_POLL = ["--poll-interval", "60", "--max-poll-interval", "60"]


class IdleAwareQueue:
    """A repository that says when a claim came back empty (the worker is about to sleep)."""

    def __init__(self, repo: JobRepository):
        self.repo = repo
        self.idle = threading.Event()

    def __getattr__(self, name):
        return getattr(self.repo, name)

    def complete_and_claim_many(self, *args, **kwargs):
        done, jobs = self.repo.complete_and_claim_many(*args, **kwargs)
        if not jobs:
            self.idle.set()
        return done, jobs


@pytest.mark.backends("postgresql")
def test_a_notify_wakes_an_idle_worker_long_before_its_next_poll(db, live_repo):
    handlers = HandlerRegistry(with_builtins=False)
    handlers.register("t", lambda payload: None)
    completed = threading.Event()
    queue = IdleAwareQueue(live_repo)
    worker = Worker(
        queue,
        worker_id="w1",
        registry=handlers,
        poll_interval=60,
        max_poll_interval=60,
        on_event=lambda event: event.kind == "completed" and completed.set(),
    )
    try:
        worker.start()  # the Worker LISTENs itself (the queue has the repository's db), and returns once it does
        assert worker.listening
        assert queue.idle.wait(GUARD)  # claimed nothing: now asleep for a minute
        live_repo.create("t")
        assert completed.wait(GUARD), "the worker slept through the NOTIFY"
    finally:
        worker.stop(timeout=5)
    assert not worker.listening


@pytest.fixture
def env(db_url):
    return {**os.environ, "QUEUE_DB_URL": db_url, "PYTHONPATH": str(ROOT)}


@pytest.mark.backends("postgresql")
def test_the_worker_cli_listens_and_picks_up_a_new_job_at_once(live_repo, env, tmp_path):
    first, _ = live_repo.create("echo")
    log = tmp_path / "worker.log"
    with open(log, "w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "queue_core.worker", "--worker-id", "w1", *SLOW_POLL],
            env=env,
            stdout=out,
            stderr=out,
        )
    try:
        deadline = time.monotonic() + GUARD
        while live_repo.find_by_id(first.id).status != "completed":
            assert time.monotonic() < deadline and process.poll() is None, log.read_text()
            time.sleep(0.05)
        time.sleep(0.5)  # its next claim finds nothing: it sleeps for a minute unless woken
        second, _ = live_repo.create("echo")
        deadline = time.monotonic() + GUARD
        while live_repo.find_by_id(second.id).status != "completed":
            assert time.monotonic() < deadline, "the worker slept through the NOTIFY:\n" + log.read_text()
            time.sleep(0.05)
    finally:
        process.terminate()
        process.wait(30)


def test_prune_after_deletes_old_finished_jobs_and_keeps_the_rest(db, env, tmp_path):
    past = JobRepository(db, clock=FakeClock(), rng=random.Random(1))  # 2026-01-01, long ago
    old, _ = past.create("echo")
    past.claim("w-old")
    past.complete(old.id)
    fresh, _ = JobRepository(db).create("echo")
    out = subprocess.run(
        [sys.executable, "-m", "queue_core.worker", "--burst", "--prune-after", "86400", "--log-level", "info"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    repo = JobRepository(db)
    assert repo.find_by_id(old.id) is None
    assert repo.find_by_id(fresh.id).status == "completed"
    assert "pruned 1 finished job" in out.stderr


@pytest.mark.parametrize("value", ["0", "-1", "soon"])
def test_prune_after_must_be_positive_seconds(db_url, env, tmp_path, value):
    out = subprocess.run(
        [sys.executable, "-m", "queue_core.worker", "--burst", "--prune-after", value],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "--prune-after" in out.stderr and "Traceback" not in out.stderr
