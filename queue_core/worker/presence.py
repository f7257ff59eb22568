"""The worker's row in the registry (``workers``): registered at start, seen on every beat, stopped at the end.

Operators read the registry to tell a live worker from a dead one: ``lost`` is a row not seen for longer
than the ``stale_after`` it registered with. None of these calls may stop the work itself: a registry that
cannot be written (a database hiccup, an older server) is an ``error`` event, and the jobs go on running. A
registration that failed (the database locked or away as the worker started) is tried again at each beat
until it is written: ``worker_seen`` only updates a row, so without it the worker stayed out of the registry
for its whole run, invisible to ``workers``, the API and the console. A row that went away while the worker
ran (an operator's prune of workers silent that long, after a pause) is written again at the next beat.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterable

from .acks import ErrorReporter, RecoveryReporter, Streak
from .protocol import JobQueue

FAILED = object()  # a registry call that raised (its error reported), told apart from any answer it gives


def default_worker_id(pid: int | None = None) -> str:
    """``host-pid``: this process's, or that of process ``pid`` on this host (the registry's id of a worker
    started without ``--worker-id``)."""
    return f"{socket.gethostname()}-{os.getpid() if pid is None else pid}"


class Presence:
    """Registry calls of one worker; ``stats()`` gives its running / completed / failed counts."""

    def __init__(
        self,
        queue: JobQueue,
        worker_id: str,
        *,
        queues: list[str] | None,
        concurrency: int,
        stale_after: float,
        types: Callable[[], Iterable[str]],
        stats: Callable[[], object],
        on_error: ErrorReporter,
        on_recovered: RecoveryReporter | None = None,
    ):
        self.queue = queue
        self.worker_id = worker_id
        self.queues = queues
        self.concurrency = concurrency
        self.stale_after = stale_after
        self.types = types  # the job types it has handlers for, read at each registration
        self.stats = stats
        self.on_error = on_error
        self.registered = False  # the row is written; until then each beat registers instead
        self.failing = Streak(on_recovered)  # registry calls failed in a row: one a beat while the queue is away

    def register(self) -> None:
        self.registered = FAILED is not self._try(
            "register_worker",
            lambda: self.queue.register_worker(
                self.worker_id,
                host=socket.gethostname(),
                pid=os.getpid(),
                queues=self.queues,
                concurrency=self.concurrency,
                stale_after=self.stale_after,
                types=list(self.types()),
            ),
        )

    def seen(self) -> bool:
        """Refresh the registry row (register first if it is not written yet); False if the queue raised."""
        if not self.registered:
            self.register()
            if not self.registered:
                return False  # no row to refresh: one error per beat, as a failed refresh is
        stats = self.stats()
        counts = {"running": stats.running, "completed": stats.completed, "failed": stats.failed}
        answer = self._try("worker_seen", lambda: self.queue.worker_seen(self.worker_id, **counts))
        if answer is False:  # the repository has no row any more (pruned while this worker was silent)
            self.register()  # HttpQueue does the same on the server's 404 and answers None
        return answer is not FAILED

    def stopped(self) -> None:
        self.seen()  # the final counts first: the row outlives the worker
        if not self.registered:
            return  # never written: nothing to mark stopped
        self._try("worker_stopped", lambda: self.queue.worker_stopped(self.worker_id))

    def _try(self, action: str, call: Callable[[], object]) -> object:
        """``call()``'s answer; FAILED (and an error event) if it raised."""
        try:
            answer = call()
        except Exception as exc:
            if action == "worker_stopped":
                self.on_error(action, exc)  # the last word of a stop, said whatever came before
            else:
                self.failing.report(self.on_error, action, exc)
            return FAILED
        self.failing.ended()
        return answer
