"""Metrics (issue 14, item 7): GET /metrics in the Prometheus text format, and a worker's own metrics."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from datetime import timedelta

import httpx
import peewee as pw
import pytest
from fastapi.testclient import TestClient
from prometheus_client import generate_latest
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
    clock.advance(61)  # w1 not seen for 61 s: lost, and its running claim stale (past w1's own 30 s)
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
    assert samples[("queue_stale_claims", ())] == 1
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


def scrape(repo) -> dict:
    response = TestClient(create_app(repo)).get("/metrics")
    assert response.status_code == 200, response.text
    return parse(response.text)


def test_stale_claims_are_judged_by_each_workers_own_stale_after(repo, clock):
    """A claim is stale once silent for longer than its worker's registered --stale-after, as the worker is
    judged lost: the server's one 300 s counted a dead --stale-after 30 worker's claim as healthy for 300 s,
    and a --stale-after 3600 worker's as stale at 301 s, which no reaper of it would take back."""
    for worker_id, stale_after in (("fast", 30), ("slow", 3600)):
        repo.register_worker(worker_id, host="h", pid=1, queues="*", concurrency=1, stale_after=stale_after)
    for worker_id in ("fast", "slow", "unregistered"):
        repo.create("nap")
        assert repo.claim(worker_id) is not None

    clock.advance(61)
    assert scrape(repo)[("queue_stale_claims", ())] == 1  # fast's only: past its 30 s
    clock.advance(300)
    # fast's, and the unregistered holder's past the default 300 s; slow's is within its 3600 s
    assert scrape(repo)[("queue_stale_claims", ())] == 2
    clock.advance(3600)
    assert scrape(repo)[("queue_stale_claims", ())] == 3


def test_failed_attempts_per_minute_by_queue_and_type(repo, clock):
    """Which jobs fail, not only how many: failed attempts of the last 5 minutes per (queue, type), a reaped
    claim included, summing to queue_jobs_per_minute{outcome="failed"}."""
    for _ in range(3):
        repo.create("invoice", queue="billing", retry_backoff=0)
    repo.create("invoice", queue="mail")
    repo.create("welcome", queue="mail")
    for _ in range(3):
        job = repo.claim("w1", queues=["billing"])
        repo.fail(job.id, "boom", worker_id="w1", attempt=job.attempt)
    job = repo.claim("w1", queues=["billing"])  # the first job again, retried at once
    repo.fail(job.id, "boom again", worker_id="w1", attempt=job.attempt)
    old = repo.claim("w1", queues=["mail"], types=["invoice"])
    repo.fail(old.id, "long ago", worker_id="w1", attempt=old.attempt)
    clock.advance(301)  # that failure is now outside the 5 minutes
    repo.claim("w1", queues=["mail"], types=["welcome"])
    clock.advance(400)
    assert repo.reap_stale(timedelta(seconds=300)) == 1  # welcome's claim: a failed attempt too

    samples = scrape(repo)
    failed = {
        dict(labels)["queue"] + "/" + dict(labels)["type"]: value
        for (name, labels), value in samples.items()
        if name == "queue_failed_attempts_per_minute"
    }
    assert failed == {"mail/welcome": pytest.approx(1 / 5)}  # billing's 4 failures were 700 s ago
    for _ in range(2):
        job = repo.claim("w1", queues=["billing"])
        repo.fail(job.id, "boom", worker_id="w1", attempt=job.attempt)
    samples = scrape(repo)
    assert samples[("queue_failed_attempts_per_minute", (("queue", "billing"), ("type", "invoice")))] == 2 / 5
    assert samples[("queue_failed_attempts_per_minute", (("queue", "mail"), ("type", "welcome")))] == 1 / 5
    total = sum(v for (name, _), v in samples.items() if name == "queue_failed_attempts_per_minute")
    assert total == pytest.approx(samples[("queue_jobs_per_minute", (("outcome", "failed"),))])


@pytest.mark.backends("sqlite")
def test_overlapping_scrapes_share_one_read_of_the_jobs(repo, monkeypatch):
    """A scrape that arrives while another reads waits for it and answers the same text: a slow scrape (every
    job counted) given up on by Prometheus and sent again, or a second scraper, no longer starts another full
    read in the server's thread pool, which also serves the workers' acks over --api."""
    import queue_core.metrics as metrics_module

    repo.create("nap", queue="mail")
    second_arrived, reads = threading.Event(), []
    real_queues = repo.queues

    def queues():
        reads.append(threading.current_thread().name)
        if len(reads) == 1:
            second_arrived.wait(timeout=30)  # hold the first read until the second scrape is in
        else:
            second_arrived.set()  # a second read of its own (what the fix avoids)
        return real_queues()

    class WaitingFuture(Future):
        def result(self, timeout=None):
            second_arrived.set()  # the second scrape waits for the first's answer
            return super().result(timeout)

    monkeypatch.setattr(repo, "queues", queues)
    monkeypatch.setattr(metrics_module, "Future", WaitingFuture)
    app = create_app(repo)
    answers = {}

    def get(name):
        answers[name] = TestClient(app).get("/metrics")

    first = threading.Thread(target=get, args=("first",), name="first")
    first.start()
    while not reads:  # the first scrape is reading
        time.sleep(0.01)
    second = threading.Thread(target=get, args=("second",), name="second")
    second.start()
    first.join(timeout=30)
    second.join(timeout=30)

    assert len(reads) == 1
    assert answers["first"].status_code == answers["second"].status_code == 200
    assert answers["first"].text == answers["second"].text
    assert ("queue_jobs", (("queue", "mail"), ("status", "pending"))) in parse(answers["second"].text)


@pytest.mark.backends("sqlite")
def test_a_scrape_while_the_database_fails_is_a_503_and_the_next_reads_again(repo, monkeypatch):
    """No partial exposition: a read that fails answers 503 (Prometheus records the target down), and the
    shared read is not kept, so the scrape after it reads the database again."""
    real_queues = repo.queues
    monkeypatch.setattr(repo, "queues", lambda: (_ for _ in ()).throw(pw.OperationalError("database is locked")))
    client = TestClient(create_app(repo))
    failed = client.get("/metrics")
    assert failed.status_code == 503
    assert "queue_jobs" not in failed.text
    monkeypatch.setattr(repo, "queues", real_queues)
    assert client.get("/metrics").status_code == 200


def test_a_timed_out_attempt_is_one_finished_job_and_one_overrun(live_repo):
    """Every claim ends in one outcome: a plain handler past its timeout is a failed attempt, and its thread
    running on is an overrun, counted apart. Counted as an outcome as well, the one job showed twice in
    queue_worker_jobs_total (failed and overrun), one more than queue_worker_claimed_total."""
    release = threading.Event()
    handlers = HandlerRegistry(with_builtins=False)
    handlers.register("stuck", lambda payload: release.wait(30))
    live_repo.create("stuck", timeout=0.05, max_retries=0)
    metrics = WorkerMetrics()
    try:
        worker = Worker(live_repo, registry=handlers, poll_interval=0.01, shutdown_timeout=0.1)
        worker.subscribe(metrics.on_event)
        worker.run(burst=True)
    finally:
        release.set()
    samples = parse(generate_latest(metrics.registry).decode())
    jobs_total = {labels: v for (name, labels), v in samples.items() if name == "queue_worker_jobs_total"}
    finished = {dict(labels)["outcome"]: v for labels, v in jobs_total.items()}
    assert finished == {"failed": 1}
    assert samples[("queue_worker_claimed_total", (("type", "stuck"),))] == 1
    assert samples[("queue_worker_overruns_total", (("type", "stuck"),))] == 1
