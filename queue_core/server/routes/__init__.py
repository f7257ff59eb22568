"""The API's routes, one module per resource: ``jobs`` (enqueue, read, retry, cancel), ``bulk`` (retry,
cancel or delete many at once), ``acks`` (a worker's claim and acknowledgements), ``controls`` (queues and
the worker registry), ``schedules`` (a remote scheduler's ticks), ``ops`` (reap, stats, health), ``metrics``
(Prometheus). ``create_app`` includes ``ROUTERS`` in this order."""

from . import acks, bulk, controls, jobs, metrics, ops, schedules

ROUTERS = (jobs.router, bulk.router, acks.router, controls.router, schedules.router, ops.router, metrics.router)

__all__ = ["ROUTERS"]
