"""The benchmark's handler module: ``python -m queue_core.worker --handlers tests.bench.noop_handlers``."""

from __future__ import annotations

from queue_core.handlers import handler


@handler("bench-noop")
def noop(payload: dict) -> None:
    """Does nothing: the benchmark measures the queue, not the work."""
