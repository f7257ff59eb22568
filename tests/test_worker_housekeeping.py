"""The heartbeat thread's housekeeping: a backlog of old finished jobs is pruned one batch per beat."""

from __future__ import annotations

import itertools
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from queue_core.clock import ManualClock
from queue_core.store.repository import JobRepository
from queue_core.worker import Worker
from queue_core.worker.handlers import HandlerRegistry

WAIT = 20  # seconds; only a guard against hangs


class PruneSpy:
    """The repository, recording each prune call (its options, how many it deleted, when)."""

    def __init__(self, repo: JobRepository):
        self.repo = repo
        self.calls: list[tuple[dict, int, float]] = []
        self.changed = threading.Condition()

    def prune(self, older_than, **options):
        pruned = self.repo.prune(older_than, **options)
        with self.changed:
            self.calls.append((options, pruned, time.monotonic()))
            self.changed.notify_all()
        return pruned

    def __getattr__(self, name):
        return getattr(self.repo, name)


def finished_jobs(db, n: int, age: timedelta) -> None:
    past = JobRepository(db, clock=ManualClock(datetime.now(UTC) - age))
    for _ in range(n):
        job, _ = past.create("t")
        past.claim("w-old")
        past.complete(job.id)


@pytest.fixture
def spy(db, live_repo, monkeypatch):
    monkeypatch.setattr("queue_core.worker.housekeeping.PRUNE_BATCH", 3)
    finished_jobs(db, 7, timedelta(days=2))
    return PruneSpy(live_repo)


def test_a_backlog_is_pruned_one_batch_per_beat_then_pruning_waits_an_hour(spy, live_repo):
    fresh, _ = live_repo.create("t")  # not finished, and new: kept
    registry = HandlerRegistry(with_builtins=False)
    worker = Worker(spy, worker_id="w", registry=registry, stale_after=0.3, prune_after=86400)
    worker.start()
    try:
        with spy.changed:
            assert spy.changed.wait_for(lambda: len(spy.calls) >= 3, WAIT), spy.calls
        time.sleep(6 * worker.heartbeat_interval)  # several more beats: a short batch means the backlog is gone
    finally:
        worker.stop()
    assert [(options, pruned) for options, pruned, _ in spy.calls] == [({"batch": 3, "max_batches": 1}, 3)] * 2 + [
        ({"batch": 3, "max_batches": 1}, 1)
    ]
    started = [at for _, _, at in spy.calls]
    # One batch per tick: each call waited for a beat after the one before.
    assert all(later - earlier >= worker.heartbeat_interval * 0.9 for earlier, later in itertools.pairwise(started))
    assert [job.id for job in live_repo.list()] == [fresh.id]


def test_a_burst_worker_prunes_one_batch_at_start(spy, live_repo):
    Worker(spy, worker_id="w", registry=HandlerRegistry(with_builtins=False), prune_after=86400).run(burst=True)
    assert [(options, pruned) for options, pruned, _ in spy.calls] == [({"batch": 3, "max_batches": 1}, 3)]
    assert len(live_repo.list()) == 4


@pytest.mark.backends("sqlite")
@pytest.mark.parametrize("how", ["renamed", "deleted"])
def test_a_worker_whose_sqlite_file_is_moved_or_deleted_stops_and_says_why(db_url, live_repo, make_worker, how):
    """A worker keeps its connections on the file it opened: after ``mv`` or ``rm`` of the database it went on
    claiming from the renamed or unlinked file while jobs enqueued at the path waited, and nothing said so.
    It stops within a beat, as a burst that gave up does: ``run()`` raises WorkerGaveUp saying why."""
    from pathlib import Path

    from queue_core.errors import WorkerGaveUp

    path = Path(db_url.removeprefix("sqlite:///"))
    worker = make_worker(stale_after=0.3)  # a beat every 0.1 s
    raised: list[BaseException] = []

    def run() -> None:
        try:
            worker.run()
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        deadline = time.monotonic() + WAIT
        while not worker.is_running and time.monotonic() < deadline:
            time.sleep(0.01)
        assert worker.is_running
        time.sleep(0.3)  # a few beats with the file in place: it goes on
        assert thread.is_alive()
        for suffix in ("", "-wal", "-shm"):
            moved = Path(f"{path}{suffix}")
            if moved.exists():
                moved.rename(f"{path}.old{suffix}") if how == "renamed" else moved.unlink()
        thread.join(WAIT)
        assert not thread.is_alive()
    finally:
        worker.stop(timeout=0)
        thread.join(WAIT)
    [error] = raised
    assert isinstance(error, WorkerGaveUp), error
    assert str(error).startswith(f"stopped: the database file {path} was moved"), str(error)
    assert "Put the file back" in str(error)
    assert not path.exists()  # and no new, empty file made at the path meanwhile
