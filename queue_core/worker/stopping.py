"""A run's new-job listener, started with the run and stopped by its stop; and a stop's own queue calls (the
release of running jobs, the batch's last flush, the registry's "stopped"), each on a thread of its own with a
deadline: a database that never answers (a hung server, a connection a network device blackholes: no error,
only silence) held the stop, and the process, for ever."""

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
# How long a start waits for the new-job listener to listen, and a stop for its thread (a daemon, which may be
# stuck reconnecting to a database that is gone) to end.
LISTEN_WAIT = LISTENER_STOP_WAIT = 2.0


def start_listener(queue: JobQueue, wakeup: Callable[[], None], *, listen: bool, burst: bool):
    """A wake-up on each new job (store.notify: PostgreSQL's NOTIFY, SQLite's data_version watch), for a database
    queue outside a burst, stopped by the run's stop; None: the slots only poll (the CLI's, the console's and an
    embedded worker's alike: before, each program had to start one beside the worker)."""
    db = getattr(queue, "db", None)  # a JobRepository's; an HttpQueue has none and polls its server
    if not listen or burst or db is None:
        return None
    from ..store.notify import listen_for_jobs

    listener = listen_for_jobs(db, wakeup)
    # Before the first claim: a job enqueued once start() has returned is heard (and one before, claimed).
    # Bounded: a PostgreSQL that does not answer leaves the slots polling while the listener keeps trying.
    if listener is not None:
        listener.wait_listening(LISTEN_WAIT)
    return listener


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


def report_unreleased(events: EventHub, unanswered: list, reason: str, *, grace: float, stale_after: float) -> None:
    """Say which jobs a stop could not release because the queue did not answer (still running for it)."""
    note = (
        f"not released ({reason}): the queue did not answer within {grace:g}s; it stays running until the "
        f"reaper takes it back after stale_after ({stale_after:g}s), then runs again"
    )
    for entry in unanswered:
        events.emit("unwritten", entry.job, note=note)
