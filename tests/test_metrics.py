"""Metrics (issue 14, item 7): GET /metrics in the Prometheus text format, and a worker's own metrics."""

from __future__ import annotations

import time

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from queue_core.handlers import HandlerRegistry
from queue_core.server.app import create_app
from queue_core.worker import Worker
from queue_core.worker.metrics import WorkerMetrics


def parse(text: str) -> dict:
    """{(metric sample name, labels as a sorted tuple): value}"""
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def jobs_by_status(samples: dict) -> dict[str, int]:
    totals: dict[str, int] = {}
    for (name, labels), value in samples.items():
        if name == "queue_jobs":
            status = dict(labels)["status"]
            totals[status] = totals.get(status, 0) + int(value)
    return totals


def test_metrics_parse_and_job_counts_equal_counts(repo, clock):
    for n in range(5):
        repo.create("mail", {"n": n}, queue="mail")
    for n in range(3):
        repo.create("report", {"n": n})
    done = repo.claim("w1", queues=["mail"])
    repo.complete(done.id, worker_id="w1", attempt=done.attempt, result={"ok": True})
    failing = repo.claim("w1", queues=["default"])
    repo.fail(failing.id, "boom", worker_id="w1", attempt=failing.attempt)  # retried: pending again
    repo.claim("w1", queues=["mail"])  # running
    repo.cancel(repo.create("mail", queue="mail")[0].id)
    repo.pause_queue("report-archive")
    repo.register_worker("w1", host="h", pid=1, queues="*", concurrency=1, stale_after=30)
    clock.advance(61)  # w1 not seen for 61 s: lost; its running claim is stale only after 300 s
    response = TestClient(create_app(repo)).get("/metrics")

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    samples = parse(response.text)
    assert jobs_by_status(samples) == repo.counts()
    assert samples[("queue_jobs", (("queue", "mail"), ("status", "running")))] == 1
    assert samples[("queue_jobs", (("queue", "mail"), ("status", "cancelled")))] == 1
    assert samples[("queue_oldest_pending_age_seconds", (("queue", "mail"),))] == pytest.approx(61, abs=1)
    assert samples[("queue_paused", (("queue", "report-archive"),))] == 1
    assert samples[("queue_workers", (("state", "lost"),))] == 1
    assert samples[("queue_workers", (("state", "running"),))] == 0
    assert samples[("queue_stale_claims", ())] == 0
    clock.advance(300)
    assert parse(TestClient(create_app(repo)).get("/metrics").text)[("queue_stale_claims", ())] == 1
    assert ("queue_jobs_per_minute", (("outcome", "completed"),)) in samples


def test_metrics_follow_the_token_rule(repo):
    client = TestClient(create_app(repo, token="s3cret"))
    assert client.get("/metrics").status_code == 401
    response = client.get("/metrics", headers={"Authorization": "Bearer s3cret"})
    assert response.status_code == 200 and "queue_jobs" in response.text


def test_a_worker_serves_its_counters_and_handler_durations_per_type(live_repo):
    handlers = HandlerRegistry(with_builtins=False)
    handlers.register("nap", lambda payload: time.sleep(0.02))

    def boom(payload):
        raise RuntimeError("boom")

    handlers.register("boom", boom)
    for _ in range(3):
        live_repo.create("nap")
    live_repo.create("boom", max_retries=0)
    metrics = WorkerMetrics()
    metrics.serve(0)
    try:
        worker = Worker(live_repo, registry=handlers, poll_interval=0.01)
        worker.subscribe(metrics.on_event)
        worker.run(burst=True)
        text = httpx.get(f"http://127.0.0.1:{metrics.port}/metrics").text
    finally:
        metrics.close()
    samples = parse(text)
    assert samples[("queue_worker_jobs_total", (("outcome", "completed"), ("type", "nap")))] == 3
    assert samples[("queue_worker_jobs_total", (("outcome", "failed"), ("type", "boom")))] == 1
    assert samples[("queue_worker_handler_duration_seconds_count", (("type", "nap"),))] == 3
    assert samples[("queue_worker_handler_duration_seconds_sum", (("type", "nap"),))] >= 0.06
    assert samples[("queue_worker_claimed_total", (("type", "boom"),))] == 1
