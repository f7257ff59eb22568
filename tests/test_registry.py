"""The worker registry (both backends): register, seen, stopped, lost after each worker's own threshold, prune."""

from __future__ import annotations

from datetime import timedelta

import pytest

from queue_core.errors import ValidationError


def register(repo, worker_id="w1", **options):
    settings = {"host": "box", "pid": 42, "queues": None, "concurrency": 4, "stale_after": 30.0} | options
    repo.register_worker(worker_id, **settings)


def states(repo) -> dict[str, str]:
    return {worker.id: worker.state for worker in repo.workers()}


def test_a_registered_worker_is_running_with_its_settings(repo, clock):
    register(repo, queues=["mail", "default"], concurrency=3)
    (worker,) = repo.workers()
    assert (worker.id, worker.host, worker.pid, worker.queues, worker.concurrency) == (
        "w1",
        "box",
        42,
        ["mail", "default"],
        3,
    )
    assert worker.started_at == worker.last_seen_at == clock.now and worker.stopped_at is None
    assert (worker.running, worker.completed, worker.failed, worker.state, worker.silent_for) == (0, 0, 0, "running", 0)
    assert worker.to_dict()["started_at"] == clock.now.isoformat()


def test_every_queue_is_stored_as_a_star_and_slots_per_queue_as_their_names(repo):
    register(repo, queues=None)
    register(repo, "w2", queues="*")
    register(repo, "w3", queues={"mail": 2, "default": 4})
    assert [worker.queues for worker in repo.workers()] == ["*", "*", ["mail", "default"]]


def test_seen_refreshes_and_counts_and_lost_follows_each_workers_own_threshold(repo, clock):
    register(repo, "quick", stale_after=2)
    register(repo, "patient", stale_after=60)
    clock.advance(1)
    repo.worker_seen("quick", running=2, completed=10, failed=1)
    clock.advance(2.5)
    assert states(repo) == {"patient": "running", "quick": "lost"}
    quick = next(worker for worker in repo.workers() if worker.id == "quick")
    assert (quick.completed, quick.failed, quick.silent_for) == (10, 1, 2.5)
    repo.worker_seen("quick", running=0, completed=11, failed=1)
    assert states(repo)["quick"] == "running"  # seen again: alive
    clock.advance(61)
    assert states(repo) == {"patient": "lost", "quick": "lost"}


def test_counts_past_32_bits_are_kept_on_every_backend(repo):
    """validate_count takes any count below 2**63, as SQLite stores it; PostgreSQL's INTEGER columns refused a
    busy worker's heartbeat once it had completed 2**31 jobs (schema version 14 widens them)."""
    register(repo, "busy")
    repo.worker_seen("busy", running=3, completed=2**31 + 5, failed=2**40)
    (busy,) = repo.workers()
    assert (busy.completed, busy.failed) == (2**31 + 5, 2**40)


def running(repo) -> dict[str, int]:
    return {worker.id: worker.running for worker in repo.workers()}


def test_a_workers_running_count_is_the_jobs_it_holds_now_not_its_last_report(repo, clock):
    register(repo, "w1", stale_after=10)
    register(repo, "w2", stale_after=10)
    for _ in range(3):
        repo.create("t")
    first, second = repo.claim("w1", types=["t"]), repo.claim("w1", types=["t"])
    other = repo.claim("w2", types=["t"])
    # Reports made before those claims: the view shows what the jobs table holds.
    repo.worker_seen("w1", running=0, completed=7, failed=0)
    repo.worker_seen("w2", running=5, completed=0, failed=0)
    assert running(repo) == {"w1": 2, "w2": 1}
    assert repo.complete(first.id, worker_id="w1", attempt=first.attempt) is not None
    assert running(repo) == {"w1": 1, "w2": 1}
    assert next(worker for worker in repo.workers() if worker.id == "w1").completed == 7  # its own count
    repo.worker_stopped("w2")  # gone without finishing: its claim holds the job until it is reaped
    assert running(repo) == {"w1": 1, "w2": 1}
    clock.advance(11)
    repo.heartbeat([second.id], worker_id="w1")
    assert repo.reap_stale(timedelta(seconds=10)) == 1
    assert repo.find_by_id(other.id).status == "pending"
    assert running(repo) == {"w1": 1, "w2": 0}


def test_a_clean_stop_shows_as_stopped_and_a_restart_registers_afresh(repo, clock):
    register(repo)
    repo.worker_seen("w1", running=1, completed=5, failed=0)
    repo.worker_stopped("w1")
    clock.advance(3600)
    (worker,) = repo.workers()
    assert worker.state == "stopped" and worker.stopped_at is not None and worker.running == 0
    register(repo, pid=43)
    (worker,) = repo.workers()
    assert (worker.state, worker.pid, worker.completed, worker.started_at) == ("running", 43, 0, clock.now)


def test_prune_removes_stopped_and_lost_worker_rows_last_seen_before_the_cutoff(repo, clock):
    register(repo, "stopped")
    repo.worker_stopped("stopped")
    register(repo, "lost", stale_after=10)
    register(repo, "slow", stale_after=7200)  # silent an hour, yet within its own threshold: still running
    clock.advance(3600)
    register(repo, "recently-stopped")
    repo.worker_stopped("recently-stopped")
    repo.prune(timedelta(minutes=30))
    assert states(repo) == {"recently-stopped": "stopped", "slow": "running"}


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"host": 5}, "host"),
        ({"pid": -1}, "pid"),
        ({"queues": "mail"}, "queues"),
        ({"queues": [""]}, "queues"),
        ({"queues": [f"q{i}" for i in range(1001)]}, "queues"),  # more than a claim takes
        ({"concurrency": 0}, "concurrency"),
        ({"stale_after": float("nan")}, "stale_after"),
        # Past PostgreSQL's INTEGER (and REAL) columns: refused there with no field named, stored by SQLite.
        ({"pid": 2**31}, "pid"),
        ({"concurrency": 2**31}, "concurrency"),
        ({"stale_after": 1e300}, "stale_after"),
    ],
)
def test_bad_registrations_name_the_field_and_write_nothing(repo, options, field):
    with pytest.raises(ValidationError) as error:
        register(repo, **options)
    assert error.value.field == field
    assert repo.workers() == []


def test_seen_and_stopped_of_an_unknown_worker_change_nothing_and_say_so(repo):
    # False: the HTTP server answers 404 worker-not-registered for it (it was a 204 that wrote nothing).
    assert repo.worker_seen("ghost", running=0, completed=0, failed=0) is False
    assert repo.worker_stopped("ghost") is False
    assert repo.workers() == []
    register(repo, "ghost")
    assert repo.worker_seen("ghost", running=0, completed=1, failed=0) is True
    assert repo.worker_stopped("ghost") is True


def test_counters_past_32_bits_are_kept_whole_and_the_worker_stays_alive(repo, clock):
    # PostgreSQL's INTEGER ends at 2**31 - 1: a heartbeat with more completed jobs failed there, and the worker
    # went on being seen as lost (schema version 14 widens the counters).
    register(repo, stale_after=2)
    clock.advance(1.5)
    repo.worker_seen("w1", running=2**31, completed=2**31 + 5, failed=2**40)
    clock.advance(1.5)
    (worker,) = repo.workers()
    assert (worker.completed, worker.failed, worker.state) == (2**31 + 5, 2**40, "running")
