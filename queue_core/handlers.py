"""Handlers moved to ``queue_core.worker.handlers``; this name stays so existing imports keep working.

``from queue_core.handlers import handler, current_job, HandlerRegistry`` is in users' handler modules and in
the README's examples; the registry object is the same one, so handlers registered through either path run.
"""

from .worker.handlers import (
    BUILTINS,
    DemoFailure,
    Handler,
    HandlerRegistry,
    call_handler,
    current_job,
    default_registry,
    handler,
    registry,
)

__all__ = [
    "BUILTINS",
    "DemoFailure",
    "Handler",
    "HandlerRegistry",
    "call_handler",
    "current_job",
    "default_registry",
    "handler",
    "registry",
]
