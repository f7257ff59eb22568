"""Hypothesis: random sequences of operations give the same outcomes as a small model of the rules.

The model is the guide's rules written as plainly as possible; the repository must agree with it on
every claim, complete, fail, reap, retry and create, and keep the invariants after each step.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import timedelta

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from support import FakeClock, fresh_repository

from queue_core.errors import IdempotencyConflict
from queue_core.rules import BACKOFF_CAP, DEFAULT_BACKOFF_BASE

WORKERS = ("w1", "w2", "w3")
TYPES = ("a", "b")
KEYS = (None, None, "k1", "k2")
STALE = timedelta(seconds=60)


@dataclass
class ModelJob:
    id: int
    type: str
    payload: dict
    priority: int
    max_retries: int
    backoff: float
    key: str | None
    status: str = "pending"
    retry_count: int = 0
    worker: str | None = None
    run_at: object = None
    last_sign: object = None  # heartbeat, or claim time
    error: str | None = None


class RepositoryMachine(RuleBasedStateMachine):
    db_url: str

    @initialize()
    def setup(self):
        self.clock = FakeClock()
        self.repo = fresh_repository(self.db_url, self.clock, random.Random(7))
        self.jobs: dict[int, ModelJob] = {}

    def teardown(self):
        repo = getattr(self, "repo", None)
        if repo is not None:
            repo.db.close()

    def due(self, types=None):
        now = self.clock.now
        due = [j for j in self.jobs.values() if j.status == "pending" and j.run_at <= now]
        if types is not None:
            due = [j for j in due if j.type in types]
        return sorted(due, key=lambda j: (-j.priority, j.run_at, j.id))

    # --- operations -------------------------------------------------------------------------------

    @rule(
        type_=st.sampled_from(TYPES),
        payload=st.dictionaries(st.text(max_size=3), st.integers() | st.text(max_size=5), max_size=2),
        priority=st.sampled_from([0, 5, 10, 20, 30, "high", "low"]),
        max_retries=st.integers(0, 3),
        backoff=st.sampled_from([0.0, 1.0]),
        key=st.sampled_from(KEYS),
    )
    def create(self, type_, payload, priority, max_retries, backoff, key):
        existing = next((j for j in self.jobs.values() if key is not None and j.key == key), None)
        try:
            job, created = self.repo.create(
                type_, payload, priority=priority, max_retries=max_retries, idempotency_key=key, retry_backoff=backoff
            )
        except IdempotencyConflict as exc:
            assert existing is not None and (existing.type, existing.payload) != (type_, payload)
            assert exc.existing.id == existing.id
            return
        if existing is not None:
            assert not created and job.id == existing.id
            assert (existing.type, existing.payload) == (type_, payload)
            return
        assert created and job.id not in self.jobs
        level = {"high": 20, "low": 0}.get(priority, priority)
        self.jobs[job.id] = ModelJob(
            job.id, type_, payload, level, max_retries, backoff, key, run_at=self.clock.now, last_sign=None
        )

    @rule(worker=st.sampled_from(WORKERS), types=st.sampled_from([None, ("a",), ("b",), ("a", "b")]))
    def claim(self, worker, types):
        expected = self.due(types)
        job = self.repo.claim(worker, types=types)
        if not expected:
            assert job is None
            return
        assert job is not None and job.id == expected[0].id
        model = self.jobs[job.id]
        model.status, model.worker, model.last_sign = "running", worker, self.clock.now
        assert job.status == "running" and job.worker_id == worker and job.retry_count == model.retry_count

    def pick(self, data_index, worker_choice, statuses=("running",)):
        candidates = sorted(j for j in self.jobs if self.jobs[j].status in statuses) or sorted(self.jobs) or [999]
        job_id = candidates[data_index % len(candidates)]
        model = self.jobs.get(job_id)
        worker = worker_choice if worker_choice != "holder" else (model.worker if model else "w1")
        return job_id, model, worker

    @rule(i=st.integers(0, 50), worker=st.sampled_from([*WORKERS, "holder"]))
    def complete(self, i, worker):
        job_id, model, worker = self.pick(i, worker)
        ok = model is not None and model.status == "running" and model.worker == worker
        result = self.repo.complete(job_id, worker_id=worker)
        assert (result is not None) == ok
        if ok:
            model.status = "completed"
            assert result.status == "completed"

    @rule(i=st.integers(0, 50), worker=st.sampled_from([*WORKERS, "holder"]), error=st.text(min_size=1, max_size=20))
    def fail(self, i, worker, error):
        job_id, model, worker = self.pick(i, worker)
        ok = model is not None and model.status == "running" and model.worker == worker
        result = self.repo.fail(job_id, error, worker_id=worker)
        assert (result is not None) == ok
        if not ok:
            return
        model.error = error
        if model.retry_count < model.max_retries:
            full = min(BACKOFF_CAP, model.backoff * 2**model.retry_count) if model.backoff else 0
            delay = (result.run_at - self.clock.now).total_seconds()
            assert full / 2 <= delay <= full + 1e-6
            model.status, model.retry_count, model.worker, model.run_at = (
                "pending",
                model.retry_count + 1,
                None,
                result.run_at,
            )
        else:
            model.status = "failed"
        assert result.status == model.status and result.retry_count == model.retry_count

    @rule(i=st.integers(0, 50), worker=st.sampled_from(["holder", *WORKERS]))
    def heartbeat(self, i, worker):
        job_id, model, worker = self.pick(i, worker)
        held = self.repo.heartbeat([job_id], worker_id=worker)
        ok = model is not None and model.status == "running" and model.worker == worker
        assert held == ([job_id] if ok else [])
        if ok:
            model.last_sign = self.clock.now

    @rule(seconds=st.sampled_from([1, 30, 61, 120, DEFAULT_BACKOFF_BASE * 10]))
    def advance(self, seconds):
        self.clock.advance(seconds)

    @rule()
    def reap(self):
        cutoff = self.clock.now - STALE
        stale = [j for j in self.jobs.values() if j.status == "running" and j.last_sign < cutoff]
        assert self.repo.reap_stale(STALE) == len(stale)
        for model in stale:
            assert model.worker in (self.repo.find_by_id(model.id).error or "")
            if model.retry_count < model.max_retries:
                model.status, model.retry_count, model.worker, model.run_at = (
                    "pending",
                    model.retry_count + 1,
                    None,
                    self.clock.now,
                )
            else:
                model.status = "failed"

    @precondition(lambda self: any(j.status == "failed" for j in self.jobs.values()))
    @rule(i=st.integers(0, 50))
    def retry(self, i):
        job_id, model, _ = self.pick(i, "w1", statuses=("failed",))
        result = self.repo.retry(job_id)
        assert result is not None and result.status == "pending" and result.retry_count == 0
        model.status, model.retry_count, model.worker, model.run_at = "pending", 0, None, self.clock.now

    # --- invariants -------------------------------------------------------------------------------

    @invariant()
    def agrees_with_model(self):
        if not hasattr(self, "repo"):
            return
        counts = {"pending": 0, "running": 0, "completed": 0, "failed": 0, "cancelled": 0}
        for model in self.jobs.values():
            counts[model.status] += 1
        assert self.repo.counts() == counts
        for job in self.repo.list(limit=1000):
            model = self.jobs[job.id]
            assert (job.status, job.retry_count, job.worker_id if job.status == "running" else None) == (
                model.status,
                model.retry_count,
                model.worker if model.status == "running" else None,
            )
            assert 0 <= job.retry_count <= job.max_retries + 1
            if job.status == "running":
                assert job.worker_id and job.claimed_at is not None
            if job.status == "pending":
                assert job.worker_id is None and job.claimed_at is None


def test_repository_agrees_with_the_model(db_url):
    machine = type("Machine", (RepositoryMachine,), {"db_url": db_url})
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=60, stateful_step_count=40, deadline=None, suppress_health_check=list(HealthCheck)
        ),
    )
