"""The API's routes, one module per resource: ``jobs`` (enqueue, read, retry, cancel), ``acks`` (a worker's
claim and acknowledgements), ``controls`` (queues and the worker registry), ``ops`` (reap, stats, health).
``create_app`` includes ``ROUTERS`` in this order."""

from . import acks, controls, jobs, ops

ROUTERS = (jobs.router, acks.router, controls.router, ops.router)

__all__ = ["ROUTERS"]
