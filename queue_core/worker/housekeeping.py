"""The heartbeat thread of a worker: keep its claims alive, pass on cancel requests, keep its registry row
fresh, take back other workers' stale claims, prune.

Every ``heartbeat_interval`` (``min(stale_after / 3, 10)`` seconds) it refreshes the jobs this worker runs,
notices those taken back from it, marks those an operator asked to cancel (so a cancel reaches a handler
within about one interval), and tells the registry it is alive; every
``stale_after / 2`` seconds it reaps claims with no sign of life for ``stale_after``. With ``prune_after``
it deletes finished jobs older than that, one batch per tick while a backlog lasts, then hourly: a long
prune on this thread would delay the beats that keep this worker's own jobs from looking stale. Every
``STATISTICS_INTERVAL`` it has PostgreSQL's planner statistics of the jobs table refreshed if they are stale
(``store/statistics.py``: the claim's plan depends on them).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import timedelta

from ..clock import utc_now
from ..store.repository import PRUNE_BATCH
from .acks import ErrorReporter, Streak
from .events import EventHub
from .presence import Presence
from .protocol import close_thread_connection
from .session import Running, Session

logger = logging.getLogger(__name__)

# Beat at least this often whatever stale_after is, so a worker with a short threshold does not reap the
# live jobs of a worker configured with a long one.
MAX_HEARTBEAT_INTERVAL = 10.0
# A worker with prune_after prunes at start and then this often; several workers doing it is harmless.
PRUNE_INTERVAL = 3600.0
# How often a worker checks the planner's statistics (one catalog row; an ANALYZE only when they are stale).
# Autovacuum, where it runs, looks once a minute; a backlog that arrives should not wait that long.
STATISTICS_INTERVAL = 15.0


class Housekeeping:
    """Beats, reaps and prunes for one worker; ``run(session)`` is the heartbeat thread's body."""

    def __init__(
        self,
        presence: Presence,
        *,
        prune_after: float | None,
        events: EventHub,
        on_error: ErrorReporter,
        on_reaped: Callable[[], None],
    ):
        # The worker's queue, id and stale_after are its registry row's: one place holds them.
        self.queue, self.worker_id, self.stale_after = presence.queue, presence.worker_id, presence.stale_after
        self.prune_after = prune_after
        self.heartbeat_interval = min(self.stale_after / 3, MAX_HEARTBEAT_INTERVAL)
        self.reap_interval = self.stale_after / 2
        self._events = events
        self._on_error = on_error
        self._on_reaped = on_reaped  # reaped jobs are pending again: wake idle claim threads
        self.presence = presence
        # Heartbeats failed in a row: said at the 1st, 2nd, 4th... of an outage, and once when one works again.
        self.beats_failed = Streak(events.recovered)

    def run(self, session: Session) -> None:
        next_reap = time.monotonic() + (self.reap_interval if session.burst else 0.0)  # a burst reaped at start
        next_prune = time.monotonic()
        next_statistics = time.monotonic() + STATISTICS_INTERVAL  # checked at start (Worker._start)
        try:
            while True:
                if self.file_gone(session):
                    return  # stopping: nothing this thread writes would reach the file at --db
                # Beat first: on a loaded machine a late beat must not make our own live jobs look stale.
                # A beat or registry refresh that failed (the database away) ends this round: the reap, prune
                # and statistics would fail the same way, each one more error line a beat for the whole
                # outage. They keep their turn, taken at the first round that gets through.
                if not (self.beat(session) and self.presence.seen()):
                    if session.heartbeat_stop.wait(self.heartbeat_interval):
                        return
                    continue
                if time.monotonic() >= next_reap and not session.stopping.is_set():
                    self.reap()
                    next_reap = time.monotonic() + self.reap_interval
                if self.prune_after is not None and time.monotonic() >= next_prune:
                    more = self.prune_batch()
                    next_prune = time.monotonic() + (0.0 if more else PRUNE_INTERVAL)
                if time.monotonic() >= next_statistics:
                    self.refresh_statistics()
                    next_statistics = time.monotonic() + STATISTICS_INTERVAL
                # A full pause after each tick's work, so a slow prune or reap never runs back to back.
                if session.heartbeat_stop.wait(self.heartbeat_interval):
                    return
        finally:
            close_thread_connection(self.queue)

    def file_gone(self, session: Session) -> bool:
        """A SQLite file moved, deleted or replaced under the worker (``JobRepository.file_gone``): the worker
        stops as a burst that gave up does (``run()`` raises ``WorkerGaveUp``; the command exits 1) and says
        why. Its connections stay on the file it opened, so it went on claiming from the unlinked or renamed
        file while jobs enqueued at the path waited, and nothing said so. One ``os.stat`` a beat; True if
        it stopped the worker. Over the API, or on PostgreSQL, there is no file to lose."""
        check = getattr(self.queue, "file_gone", None)
        gone = None if check is None else check()
        if gone is None:
            return False
        session.gave_up = (
            f"stopped: {gone}; jobs enqueued at that path since went into a new file this worker does not see. Put "
            "the file back (with its -wal and -shm files) and start the worker again"
        )
        # Said now: the stop lets running jobs finish first (--shutdown-timeout), and its last line comes after.
        logger.error("%s: stopping worker=%s; running jobs get the shutdown timeout", gone, self.worker_id)
        session.request_stop(None)
        return True

    def beat(self, session: Session) -> bool:
        """Heartbeat the running jobs and pass on cancel requests; False if the queue raised."""
        with session.lock:
            entries = session.live_entries()
        if not entries:
            return True
        held = self._refresh(session, entries)
        if held is None:
            return False
        return not held or self._pass_on_cancels(session, [entry for entry in entries if entry.key in held])

    def _refresh(self, session: Session, entries: list[Running]) -> set[tuple[int, int]] | None:
        """Heartbeat the running jobs; mark the claims taken back from us lost; the (id, attempt) still held
        (None if the queue raised)."""
        try:
            # Each at its attempt: a job reaped and claimed again by this same worker is held at the newer
            # attempt only, so the stale run learns it lost the job (and its handler is told to stop).
            keys = sorted({r.key for r in entries})
            answer = self.queue.heartbeat([k[0] for k in keys], worker_id=self.worker_id, attempts=[k[1] for k in keys])
            held = {(job_id, attempt) for job_id, attempt in answer}
        except Exception as exc:
            self.beats_failed.report(self._on_error, "heartbeat", exc)
            return None
        self.beats_failed.ended()
        for entry in entries:
            with session.lock:
                # Finished or released since the snapshot: not held any more, and not lost either.
                done = entry.acking or entry.released or session.running.get(entry.key) is not entry
                if entry.key in held or done:
                    continue
                entry.lost = True
                # Another worker may be running it now: the handler is told to stop as for a cancel (a
                # coroutine is cancelled at its next await; a plain function sees current_job().cancel_requested).
                if entry.job.cancel_requested_at is None:
                    object.__setattr__(entry.job, "cancel_requested_at", utc_now())
            # Said here, once: the slot looks idle to nobody, so an operator sees why it takes no job meanwhile.
            note = (
                "its claim was taken back while it ran (reaped, or failed by an operator): its handler is told to "
                "stop (a coroutine is cancelled; current_job().cancel_requested is True); a plain function runs on "
                "until it returns, holding its slot, and its outcome will be discarded"
            )
            self._events.emit("lost", entry.job, note=note)
        return held

    def _pass_on_cancels(self, session: Session, entries: list[Running]) -> bool:
        """Mark the running jobs an operator asked to cancel, so their handlers can see it and stop; False if
        the queue raised."""
        try:
            requested = set(self.queue.cancel_requests(sorted({r.job.id for r in entries}), worker_id=self.worker_id))
        except Exception as exc:
            self._on_error("cancel_requests", exc)
            return False
        for entry in entries:
            with session.lock:
                if entry.job.id not in requested or entry.cancel_requested or entry.acking:
                    continue  # not asked, told already, or finished first: a finished handler completes as usual
                entry.cancel_requested = True
                # The handler reads this very object through current_job(), so it is updated in place; a
                # RemoteJob is a frozen dataclass (plain data from the wire), hence object.__setattr__.
                object.__setattr__(entry.job, "cancel_requested_at", utc_now())
            note = "an operator asked to cancel it: current_job().cancel_requested is now True"
            self._events.emit("cancel-requested", entry.job, note=note)
        return True

    def reap(self) -> None:
        reaped = self._count("reap", lambda: self.queue.reap_stale(timedelta(seconds=self.stale_after)))
        if reaped:
            self._events.emit(
                "reaped",
                message=f"reaped {reaped} stale job(s) worker={self.worker_id} "
                f"(no heartbeat for {self.stale_after:g}s): back to pending, or failed without retries left",
            )
            self._on_reaped()

    def prune_batch(self) -> bool:
        """Delete one batch of old finished jobs; True if it was full, so more may be waiting."""
        age = timedelta(seconds=self.prune_after)
        pruned = self._count("prune", lambda: self.queue.prune(age, batch=PRUNE_BATCH, max_batches=1))
        if pruned:
            logger.info("pruned %d finished job(s) older than %gs worker=%s", pruned, self.prune_after, self.worker_id)
        return pruned >= PRUNE_BATCH

    def refresh_statistics(self) -> None:
        """Have the planner's statistics refreshed if stale; a database error is an event, never fatal."""
        if self._count("refresh_statistics", lambda: int(self.queue.refresh_statistics())):
            logger.info("analyzed the jobs table: its planner statistics were stale worker=%s", self.worker_id)

    def _count(self, action: str, call: Callable[[], int]) -> int:
        """A periodic queue call: how many jobs it took; a database error is an event, and 0."""
        try:
            return call()
        except Exception as exc:
            self._on_error(action, exc)
            return 0
