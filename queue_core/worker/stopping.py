"""A stop's own queue calls (the release of running jobs, the batch's last flush, the registry's "stopped"),
each on a thread of its own with a deadline: a database that never answers (a hung server, a connection a
network device blackholes: no error, only silence) held the stop, and the process, for ever."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from .events import EventHub
from .protocol import JobQueue, close_thread_connection

logger = logging.getLogger(__name__)

# How long a stop's own last writes (the batch's final flush, the registry's "stopped") may take past the grace.
# Longer than SQLite's default busy timeout (10 s), so that a database locked that long says so itself.
FINAL_WRITE_WAIT = 12.0


def bounded(action: str, call: Callable[[], None], deadline: float, *, queue: JobQueue, events: EventHub) -> bool:
    """``call()`` on a thread of its own, waited for until ``deadline`` (monotonic): True if it returned. One that
    gets no answer is reported as an ``error`` event and left running, a daemon, to end on its own."""
    done = threading.Event()

    def run() -> None:
        try:
            call()
        except Exception:  # each step reports its own errors; this is a bug's last net, not a stop's end
            logger.exception("the stop's %s raised", action)
        finally:
            close_thread_connection(queue)
            done.set()

    threading.Thread(target=run, name=f"stop-{action}", daemon=True).start()
    waited = max(0.0, deadline - time.monotonic())
    if done.wait(waited):
        return True
    events.error(action, TimeoutError(f"no answer from the queue within {waited:.3g}s; stopping without it"))
    return False
