"""The API's routes, one module per resource: ``jobs`` (enqueue, read, retry), ``acks`` (a worker's claim
and acknowledgements), ``ops`` (reap, stats, health). ``create_app`` includes ``ROUTERS`` in this order."""

from . import acks, jobs, ops

ROUTERS = (jobs.router, acks.router, ops.router)

__all__ = ["ROUTERS"]
