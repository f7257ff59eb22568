"""Prometheus metrics of the queue, read from the repository on each scrape (issue 14, item 7).

``QueueCollector`` is a custom collector: nothing is counted in memory, so every server process answers
the same numbers, the database's. ``GET /metrics`` on the HTTP server serves it (``metrics_text``);
a worker's own counters and handler durations are ``queue_core.worker.metrics``.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from datetime import datetime

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from .store.models import JobStatus
from .store.overview import RATE_PERIOD, recent_failures, stale_claims
from .worker.defaults import DEFAULTS

__all__ = ["CONTENT_TYPE_LATEST", "QueueCollector", "SharedScrape", "metrics_text"]

WORKER_STATES = ("running", "stopped", "lost")


class QueueCollector:
    """Jobs per queue and status, the oldest due pending job's age per queue, paused queues, stale claims
    (silent for longer than their worker's ``stale_after``), workers per state, completed/failed per minute,
    and failed attempts per minute by queue and type."""

    def __init__(self, repo, *, stale_after: float = DEFAULTS.stale_after):
        self.repo = repo
        self.stale_after = stale_after  # for a claim whose worker has no registry row

    def collect(self):
        yield from self._queues()
        now = self.repo.now()
        stale = stale_claims(self.repo, now=now, default_stale_after=self.stale_after)
        yield GaugeMetricFamily(
            "queue_stale_claims",
            "Running jobs with no sign of life for longer than their worker's --stale-after "
            f"({self.stale_after:g}s for a worker not in the registry)",
            value=stale,
        )
        workers = GaugeMetricFamily("queue_workers", "Workers in the registry per state", labels=["state"])
        states = [worker.state for worker in self.repo.workers()]
        for name in WORKER_STATES:
            workers.add_metric([name], states.count(name))
        yield workers
        yield from self._rates(now)

    def _queues(self):
        jobs = GaugeMetricFamily("queue_jobs", "Jobs per queue and status", labels=["queue", "status"])
        age = GaugeMetricFamily(
            "queue_oldest_pending_age_seconds",
            "Seconds since the oldest due pending job of the queue became due (absent when none is due)",
            labels=["queue"],
        )
        paused = GaugeMetricFamily("queue_paused", "1 if the queue is paused", labels=["queue"])
        for state in self.repo.queues():
            for status in JobStatus:
                jobs.add_metric([state.name, status.value], state.counts.get(status.value, 0))
            if state.latency is not None:
                age.add_metric([state.name], state.latency)
            paused.add_metric([state.name], 1 if state.paused else 0)
        yield from (jobs, age, paused)

    def _rates(self, now: datetime):
        rates = self.repo.throughput(RATE_PERIOD)
        per_minute = GaugeMetricFamily(
            "queue_jobs_per_minute", "Jobs completed and attempts failed per minute, last 5 minutes", labels=["outcome"]
        )
        for outcome in ("completed", "failed"):
            per_minute.add_metric([outcome], rates[outcome])
        yield per_minute
        # By queue and type: which jobs fail, not only how many (absent: none failed in the period).
        failed = GaugeMetricFamily(
            "queue_failed_attempts_per_minute",
            "Attempts failed per minute, last 5 minutes, by queue and job type (a reaped claim counts as one)",
            labels=["queue", "type"],
        )
        minutes = RATE_PERIOD.total_seconds() / 60
        for (queue, type_), n in sorted(recent_failures(self.repo, now - RATE_PERIOD).items()):
            failed.add_metric([queue, type_], n / minutes)
        yield failed


def metrics_text(repo, *, stale_after: float = DEFAULTS.stale_after) -> bytes:
    """One scrape in the Prometheus text format."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(QueueCollector(repo, stale_after=stale_after))
    return generate_latest(registry)


class SharedScrape:
    """``metrics_text`` of one repository (not kept here: a server keeps one per app), read by one scrape at
    a time: a scrape that arrives while another reads waits for that one and answers the same text (or its
    error).

    A scrape reads every job (``JobRepository.queues()`` counts them exactly: ~0.3 s at a million jobs).
    When one takes longer than the scrape interval, Prometheus gives up on it and scrapes again while the
    server's thread still reads; each scraper added (an HA pair, a curl) adds another. Unshared, those reads
    piled up in the server's thread pool, which also answers the workers' claims and acks over ``--api``.
    """

    def __init__(self, *, stale_after: float = DEFAULTS.stale_after):
        self.stale_after = stale_after
        self._lock = threading.Lock()
        self._reading: Future | None = None

    def text(self, repo) -> bytes:
        """One scrape of ``repo`` (always the same one: the answer of another's read is shared)."""
        with self._lock:
            reading = self._reading
            if reading is None:
                mine = self._reading = Future()
        if reading is not None:
            return reading.result()
        try:
            text = metrics_text(repo, stale_after=self.stale_after)
        except BaseException as exc:
            mine.set_exception(exc)
            raise
        else:
            mine.set_result(text)
            return text
        finally:
            with self._lock:
                self._reading = None
