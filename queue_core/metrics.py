"""Prometheus metrics of the queue, read from the repository on each scrape (issue 14, item 7).

``QueueCollector`` is a custom collector: nothing is counted in memory, so every server process answers
the same numbers, the database's. ``GET /metrics`` on the HTTP server serves it (``metrics_text``);
a worker's own counters and handler durations are ``queue_core.worker.metrics``.
"""

from __future__ import annotations

from datetime import timedelta

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from .store.models import JobStatus
from .worker.defaults import DEFAULTS

__all__ = ["CONTENT_TYPE_LATEST", "QueueCollector", "metrics_text"]

WORKER_STATES = ("running", "stopped", "lost")


class QueueCollector:
    """Jobs per queue and status, the oldest due pending job's age per queue, paused queues, stale claims
    (no sign of life for ``stale_after``), workers per state, and completed/failed per minute."""

    def __init__(self, repo, *, stale_after: float = DEFAULTS.stale_after):
        self.repo = repo
        self.stale_after = stale_after

    def collect(self):
        queues = self.repo.queues()
        jobs = GaugeMetricFamily("queue_jobs", "Jobs per queue and status", labels=["queue", "status"])
        age = GaugeMetricFamily(
            "queue_oldest_pending_age_seconds",
            "Seconds since the oldest due pending job of the queue became due (absent when none is due)",
            labels=["queue"],
        )
        paused = GaugeMetricFamily("queue_paused", "1 if the queue is paused", labels=["queue"])
        for state in queues:
            for status in JobStatus:
                jobs.add_metric([state.name, status.value], state.counts.get(status.value, 0))
            if state.latency is not None:
                age.add_metric([state.name], state.latency)
            paused.add_metric([state.name], 1 if state.paused else 0)
        yield from (jobs, age, paused)

        stale = self.repo.count_stale(timedelta(seconds=self.stale_after))
        yield GaugeMetricFamily(
            "queue_stale_claims", f"Running jobs with no sign of life for {self.stale_after:g}s", value=stale
        )
        workers = GaugeMetricFamily("queue_workers", "Workers in the registry per state", labels=["state"])
        states = [worker.state for worker in self.repo.workers()]
        for name in WORKER_STATES:
            workers.add_metric([name], states.count(name))
        yield workers

        rates = self.repo.throughput()
        per_minute = GaugeMetricFamily(
            "queue_jobs_per_minute", "Jobs completed and attempts failed per minute, last 5 minutes", labels=["outcome"]
        )
        for outcome in ("completed", "failed"):
            per_minute.add_metric([outcome], rates[outcome])
        yield per_minute


def metrics_text(repo, *, stale_after: float = DEFAULTS.stale_after) -> bytes:
    """One scrape in the Prometheus text format."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(QueueCollector(repo, stale_after=stale_after))
    return generate_latest(registry)
