"""The heartbeat thread's housekeeping: a backlog of old finished jobs is pruned one batch per beat."""

from __future__ import annotations

import itertools
import threading
import time
from datetime import UTC, datetime, timedelta

import peewee as pw
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


class AwayForHousekeeping(JobRepository):
    """A repository whose heartbeat-thread calls raise while ``away`` is set (claims work: the slots are not
    this test's), recording each failed try and each call that got through."""

    def __init__(self, db):
        super().__init__(db)
        self.away = threading.Event()
        self.tries: list[str] = []
        self.answered: list[str] = []

    def _unless_away(self, action: str) -> None:
        if self.away.is_set():
            self.tries.append(action)
            raise pw.OperationalError('connection to server at "127.0.0.1", port 5432 failed: Connection refused')
        self.answered.append(action)

    def worker_seen(self, worker_id, **counts):
        self._unless_away("worker_seen")
        return super().worker_seen(worker_id, **counts)

    def reap_stale(self, older_than):
        self._unless_away("reap")
        return super().reap_stale(older_than)

    def prune(self, older_than, **options):
        self._unless_away("prune")
        return super().prune(older_than, **options)

    def refresh_statistics(self):
        self._unless_away("refresh_statistics")
        return super().refresh_statistics()


def wait_until(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_a_housekeeping_round_during_an_outage_is_one_try_and_one_error_line(db, monkeypatch):
    # Regression: each beat of an outage tried the registry refresh, the reap, the prune and the statistics,
    # each failing as the one before: up to four error lines a beat for the whole outage.
    import queue_core.worker.housekeeping as housekeeping

    monkeypatch.setattr(housekeeping, "STATISTICS_INTERVAL", 0.0)  # its turn at every beat, as reap's and prune's
    monkeypatch.setattr(housekeeping, "PRUNE_INTERVAL", 0.0)
    repo = AwayForHousekeeping(db)
    errors = []
    worker = Worker(repo, worker_id="w1", registry=HandlerRegistry(with_builtins=False), stale_after=0.3,
                    prune_after=3600, on_event=lambda e: e.kind == "error" and errors.append(e.message))  # fmt: skip
    worker.start()
    try:
        wait_until(lambda: "refresh_statistics" in repo.answered, "a first whole round")
        repo.away.set()
        wait_until(lambda: repo.tries.count("worker_seen") >= 4, "four beats of the outage")
        tries = list(repo.tries)
        repo.answered.clear()
        repo.away.clear()
        # Back: the rounds get through again, and the reap, prune and statistics that kept their turn run.
        wait_until(lambda: {"reap", "prune", "refresh_statistics"} <= set(repo.answered), "the round after it")
    finally:
        worker.stop(timeout=WAIT)
    # The round under way as the database went may have failed at any call; from the first round that began
    # with the database away, each ended at its first failed call: one try, one error line a round.
    head, outage = tries[: tries.index("worker_seen")], tries[tries.index("worker_seen") :]
    assert set(outage) == {"worker_seen"}, tries
    # And of those rounds' failed refreshes, the 1st, 2nd, 4th... in a row are said, not one a beat.
    said = [n for n in range(1, len(outage) + 1) if n & (n - 1) == 0]
    during = [message.split("during=")[1].split()[0] for message in errors]
    assert during[: len(head) + len(said)] == head + ["worker_seen"] * len(said)
