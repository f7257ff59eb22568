"""A worker's own Prometheus metrics (``--metrics-port N``): jobs it finished by type and outcome, and a
histogram of handler durations per type, served by ``prometheus_client`` on 127.0.0.1.

Fed by the worker's events, so it costs nothing when not asked for. The queue-wide view (jobs per queue,
stale claims, workers) is the HTTP server's ``GET /metrics``.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from .events import WorkerEvent

# How a claim ended: one of these per claimed job. An "overrun" is not one (its attempt is also reported
# "failed"), so it is counted apart: as an outcome, a timed-out job counted twice.
OUTCOMES = ("completed", "failed", "cancelled", "lost", "unconfirmed", "released")
# Handlers run from milliseconds to many minutes: buckets up to an hour.
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)


class WorkerMetrics:
    """Counters and a duration histogram of one worker, in a registry of its own."""

    def __init__(self):
        self.registry = CollectorRegistry()
        self.jobs = Counter(
            "queue_worker_jobs",
            "Jobs this worker finished, by type and outcome",
            ["type", "outcome"],
            registry=self.registry,
        )
        self.duration = Histogram(
            "queue_worker_handler_duration_seconds",
            "Seconds a handler ran, per job type",
            ["type"],
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )
        self.claimed = Counter(
            "queue_worker_claimed", "Jobs this worker claimed, by type", ["type"], registry=self.registry
        )
        self.overruns = Counter(
            "queue_worker_overruns",
            "Handlers still running past their job's timeout (its attempt failed; the thread or event loop runs on)",
            ["type"],
            registry=self.registry,
        )
        # What the worker's log says: an outcome write retried through an outage is reported at its 1st, 2nd,
        # 4th, 8th... try and its last (worker.acks), so this counts reports, not every try.
        self.errors = Counter(
            "queue_worker_queue_errors",
            "Failed queue calls the worker reported (a write retried through an outage: its 1st, 2nd, 4th... try)",
            registry=self.registry,
        )
        self.up = Gauge("queue_worker_up", "1 while the worker runs", registry=self.registry)
        self._server = None

    def on_event(self, event: WorkerEvent) -> None:
        """A worker subscriber: count the event; thread-safe (prometheus_client's metrics are)."""
        if event.kind == "claimed":
            self.claimed.labels(event.job_type).inc()
        elif event.kind == "overrun":
            if event.job_type is not None:  # the stop's summary of the threads still running names no job
                self.overruns.labels(event.job_type).inc()
        elif event.kind == "error":
            self.errors.inc()
        elif event.kind == "started":
            self.up.set(1)
        elif event.kind == "stopped":
            self.up.set(0)
        elif event.kind in OUTCOMES and event.job_type is not None:
            self.jobs.labels(event.job_type, event.kind).inc()
            if event.duration is not None and event.kind in ("completed", "failed", "cancelled"):
                self.duration.labels(event.job_type).observe(event.duration)

    def serve(self, port: int, addr: str = "127.0.0.1") -> None:
        """Serve ``/metrics`` on ``addr:port`` from a daemon thread until ``close()``."""
        self._server, _thread = start_http_server(port, addr=addr, registry=self.registry)

    @property
    def port(self) -> int | None:
        """The port served (useful after ``serve(0)``, which picks a free one)."""
        return None if self._server is None else self._server.server_port

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
