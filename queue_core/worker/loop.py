"""``Worker``: claim -> execute -> complete or fail, on N threads, with a graceful stop.

The headless CLI (``python -m queue_core.worker``, see ``cli``) and the console's worker pane both run this
class. This module holds the start/stop protocol and the claim threads; the rest of a worker's roles live
beside it: ``acks`` (writing outcomes, retried), ``housekeeping`` (the heartbeat thread: beat, reap,
prune), ``events`` (what it reports), ``defaults`` (its settings). It talks to the queue only through
``JobQueue`` (``protocol``), which both ``JobRepository`` and the HTTP client satisfy.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..errors import QueueError, WorkerGaveUp
from ..validation import validate_worker_id
from . import stopping
from .acks import GAVE_UP, SHOWN, UNCONFIRMED, AckBatch, Acks
from .defaults import DEFAULTS, MAX_CONCURRENCY, check_ack_delay, idle_ceiling, positive_seconds, valid_slots
from .events import EVENT_KINDS, EventHub, WorkerEvent
from .handlers import HandlerRegistry, registry_or_default
from .housekeeping import Housekeeping
from .outcomes import Outcomes
from .presence import Presence, default_worker_id
from .protocol import JobQueue, check_job_queue, close_thread_connection
from .runner import HandlerRunner
from .scheduler import Scheduler, start_periodic
from .session import Running, Session, slot_queues
from .signals import ctrl_c
from .slots import Slots, next_idle_delay, slot_threads
from .stopping import start_listener

logger = logging.getLogger(__name__)

# EVENT_KINDS, MAX_CONCURRENCY and WorkerEvent stay importable from here, where they were before the split.
__all__ = [
    "EVENT_KINDS",
    "MAX_CONCURRENCY",
    "Worker",
    "WorkerEvent",
    "WorkerStats",
    "default_worker_id",
    "next_idle_delay",
]

# After a stop releases the unfinished jobs, how long threads that were writing an outcome get to finish.
ACK_GRACE = 15.0
# Completions written in one statement at most (a claim takes what waits along, whatever its count).
ACK_BATCH = 256


@dataclass(frozen=True)
class WorkerStats:
    completed: int  # jobs completed since the worker was created
    failed: int  # failed attempts (retried or final) since the worker was created
    running: int  # jobs running now
    cancelled: int = 0  # jobs ended "cancelled" on an operator's request since the worker was created
    # Outcomes re-sent after an error that found the claim no longer held: maybe written, maybe not.
    unconfirmed: int = 0


class Worker:
    """Runs registered handlers for jobs claimed from ``queue`` on ``concurrency`` threads.

    Each thread runs one job at a time, only of types the registry has handlers for; idle threads claim
    together, one statement for all of them (``slots``), and poll with a back-off from ``poll_interval``
    doubling to ``max_poll_interval`` (``wakeup()`` cuts it short; None: 5 s, or ``poll_interval`` if longer).
    A heartbeat thread refreshes running jobs every ``min(stale_after / 3, 10)`` seconds and reaps other
    workers' claims older than ``stale_after`` every ``stale_after / 2`` seconds. With ``prune_after``, the same
    thread deletes finished jobs older than that many seconds, a batch per beat, at start and then hourly.
    With ``scheduler``, a thread enqueues its periodic jobs while the worker runs (a burst: one tick at start).
    With ``listen`` (the default) and a database queue, a listener wakes idle slots as a job is enqueued
    (PostgreSQL's NOTIFY, SQLite's data_version watch): new work starts in milliseconds, not at the next poll.
    With ``queues`` ({"mail": 2, "default": 4}) each named queue gets its own slots, which claim from that
    queue only, so a flood on one cannot starve another; ``concurrency`` is then their sum.
    The worker keeps its row in the registry (``register_worker``, ``worker_seen`` on every beat,
    ``worker_stopped``) and hands an operator's cancel request to the handler (``current_job()
    .cancel_requested``); a job that was asked to stop ends ``cancelled`` whatever its handler did next.
    Defaults are ``defaults.DEFAULTS``.
    """

    def __init__(
        self,
        queue: JobQueue,
        *,
        worker_id: str | None = None,
        concurrency: int = DEFAULTS.concurrency,
        registry: HandlerRegistry | None = None,
        poll_interval: float = DEFAULTS.poll_interval,
        max_poll_interval: float | None = DEFAULTS.max_poll_interval,
        stale_after: float = DEFAULTS.stale_after,
        shutdown_timeout: float = DEFAULTS.shutdown_timeout,
        on_event: Callable[[WorkerEvent], None] | None = None,
        prune_after: float | None = DEFAULTS.prune_after,
        queues: dict[str, int] | None = DEFAULTS.queues,
        scheduler: Scheduler | None = None,
        ack_delay: float = DEFAULTS.ack_delay,
        listen: bool = True,
    ):
        self.queues, self.concurrency = valid_slots(queues, concurrency)
        self._slot_queues = slot_queues(self.queues, self.concurrency)
        self.queue, self.registry, self.listen = queue, registry_or_default(registry), bool(listen)
        self.worker_id = validate_worker_id(default_worker_id() if worker_id is None else worker_id)
        self.poll_interval = positive_seconds("poll_interval", poll_interval)
        ceiling = None if max_poll_interval is None else positive_seconds("max_poll_interval", max_poll_interval)
        self.max_poll_interval = idle_ceiling(self.poll_interval, ceiling)
        self.stale_after = positive_seconds("stale_after", stale_after)
        self.shutdown_timeout = positive_seconds("shutdown_timeout", shutdown_timeout, allow_zero=True)
        self.prune_after = None if prune_after is None else positive_seconds("prune_after", prune_after)
        self._lock = threading.RLock()  # re-entrant: stop() may run in a signal handler on a thread holding it
        self._session: Session | None = None
        self._events = EventHub(self.worker_id)
        self.scheduler, self._runner = scheduler, HandlerRunner(self._events)  # periodic jobs; handler calls
        recovered = self._events.recovered  # a queue call works again after failures: said once
        self._acks = Acks(
            queue, self.worker_id, patience=self.stale_after, on_error=self._error, on_recovered=recovered
        )
        self._outcomes = Outcomes(self._acks, self._events, self._lock)
        self.ack_delay = check_ack_delay(positive_seconds("ack_delay", ack_delay, allow_zero=True), self.stale_after)
        self._slots = Slots(self)
        self._presence = Presence(
            queue,
            self.worker_id,
            queues=None if self.queues is None else list(self.queues),
            concurrency=self.concurrency,
            stale_after=self.stale_after,
            types=self.registry.claim_types,
            stats=lambda: self.stats,
            on_error=self._error,
            on_recovered=recovered,
        )
        self._housekeeping = housekeeping = Housekeeping(
            self._presence,
            prune_after=self.prune_after,
            events=self._events,
            on_error=self._error,
            on_reaped=self.wakeup,
        )
        self.heartbeat_interval, self.reap_interval = housekeeping.heartbeat_interval, housekeeping.reap_interval
        if on_event is not None:
            self.subscribe(on_event)

    # --- public interface ------------------------------------------------------------------------

    def subscribe(self, callback: Callable[[WorkerEvent], None], kinds: Iterable[str] | None = None) -> None:
        """Call ``callback(event)`` for every event (or those of ``kinds``: the others are never built); it
        runs on worker threads, so be quick and thread-safe."""
        self._events.subscribe(callback, kinds)

    @property
    def is_running(self) -> bool:
        session = self._session
        return session is not None and not session.stopped.is_set()

    @property
    def listening(self) -> bool:
        """True while this run's listener hears of new jobs (``listen``, a database queue, not a burst)."""
        listener = None if self._session is None else self._session.listener
        return listener is not None and listener.is_alive() and listener.wait_listening(0)

    @property
    def stats(self) -> WorkerStats:
        with self._lock:
            session = self._session
            running = 0 if session is None else sum(not r.released for r in session.running.values())
            done = self._outcomes
            return WorkerStats(done.completed, done.failed, running, done.cancelled, done.unconfirmed)

    def start(self) -> None:
        """Start the claim threads and the heartbeat thread; returns at once."""
        self._start(burst=False)

    def run(self, *, burst: bool = False) -> None:
        """Start, then block until ``stop()``/``request_stop()`` or, with ``burst``, until nothing is claimable and
        nothing runs; stopped (jobs finished or released) when this returns or raises (a burst whose claims all
        failed for ``stale_after``: ``WorkerGaveUp``).

        On the main thread, while Ctrl-C raises KeyboardInterrupt (Python's default), Ctrl-C is taken as the
        worker program takes SIGINT: the first stops claiming and lets running jobs finish within
        ``shutdown_timeout``, the next releases them now, and once the stop is done this raises
        KeyboardInterrupt. (Raised in the middle of the stop, it left the stop half done.)"""
        interrupts = ctrl_c(self)
        try:
            # A Ctrl-C during the start stops the run as soon as it exists, before any slot claims.
            session = self._start(burst=burst, started=None if interrupts is None else interrupts.started)
            close_thread_connection(self.queue)  # it only waits now: no idle connection past README's count
            try:
                while not session.stopping.is_set():
                    session.wake_main.wait(1.0)
                    session.wake_main.clear()
            finally:
                self.stop()
        finally:
            if interrupts is not None:
                interrupts.restore()
        if interrupts is not None and interrupts.received:
            raise KeyboardInterrupt
        if session.gave_up is not None:
            raise WorkerGaveUp(session.gave_up)

    def request_stop(self, timeout: float | None = None) -> None:
        """Begin a stop without waiting for it (safe in a signal handler); ``run()`` returns once it is done.

        Called again with a shorter timeout (e.g. ``0`` on a second signal), it moves the deadline closer."""
        session = self._session
        if session is not None:
            session.request_stop(timeout)

    def stop(self, timeout: float | None = None) -> None:
        """Stop claiming; let running jobs finish within ``timeout`` (default ``shutdown_timeout``), release
        the rest back to pending without counting a retry; returns when done. Idempotent."""
        session = self._session
        if session is None or session.stopped.is_set():
            return
        session.request_stop(timeout)
        me = threading.get_ident()
        with self._lock:
            if session.stopper is None:
                session.stopper = me
            elif session.stopper == me:
                return  # re-entered from a signal handler: the deadline is moved, the outer stop() goes on
        if session.stopper != me:
            session.stopped.wait()
            return
        self._finish(session)

    def wakeup(self) -> None:
        """Wake idle claim threads now (e.g. on a PostgreSQL NOTIFY or right after an enqueue)."""
        session = self._session
        if session is not None:
            for wake in session.slot_wakes:
                wake.set()

    # --- lifecycle ---------------------------------------------------------------------------------

    def _start(self, *, burst: bool, started: Callable[[], None] | None = None) -> Session:
        """Start a run; ``started()`` is called once it exists (``request_stop`` reaches it), before any claim."""
        check_job_queue(self.queue)  # at the start: a Worker built only to check its settings runs nothing
        with self._lock:
            if self.is_running:
                raise QueueError(f"worker {self.worker_id} is already running; stop() it first")
            session = self._session = Session(self._slot_queues, burst, self.shutdown_timeout, self._lock)
        queues = "*" if self.queues is None else ",".join(f"{name}={n}" for name, n in self.queues.items())
        self._events.emit(
            "started",
            message=f"started worker={self.worker_id} concurrency={self.concurrency} queues={queues} "
            f"burst={burst} types={','.join(self.registry.names()) or '(none)'}",
        )
        if started is not None:
            started()
        # Here, not on the heartbeat thread: the row exists once start() returns, and the first beats are
        # not held up by it (a beat late by a write is a beat that can race an operator's reap).
        self._presence.register()
        # Before the first claim: a claim planned without statistics sorts the whole backlog.
        self._housekeeping.refresh_statistics()
        if burst:
            # A dead worker's stale claims are work this burst should do, not a reason to keep waiting.
            self._housekeeping.reap()
        session.scheduler_thread = start_periodic(self.scheduler, session.burst, session.stopping, self.wakeup)
        session.listener = start_listener(self.queue, self.wakeup, listen=self.listen, burst=burst)
        session.threads.extend(slot_threads(self._slots, session, self.worker_id, self.concurrency))
        session.heartbeat_thread = threading.Thread(target=self._housekeeping.run, args=(session,), name="heartbeat")
        # A ledger and a batch of this run's own: a flusher (or an ack retry) of an earlier run, stuck in a
        # write past its stop, ends when that write returns instead of serving this run beside its flusher.
        session.ledger = self._acks.begin()
        session.batch = AckBatch(self._acks, self._outcomes.completions, delay=self.ack_delay, size=ACK_BATCH)
        session.flusher_thread = threading.Thread(target=session.batch.run, name="ack-flusher")
        threads = [*session.threads, session.heartbeat_thread, session.flusher_thread]
        if session.dispatcher is not None:
            session.dispatch_thread = threading.Thread(target=session.dispatcher.run, name="dispatch")
            threads.append(session.dispatch_thread)
        # Daemons: a handler stuck past a released stop must not keep the process alive.
        for thread in threads:
            thread.daemon = True
            thread.start()
        return session

    def _finish(self, session: Session) -> None:
        if session.listener is not None:  # no claim follows; its thread must not outlive the run
            session.listener.stop(stopping.LISTENER_STOP_WAIT)
        # 1. Running jobs get until the deadline (which a second signal may move to now).
        session.join_slots(lambda: session.deadline)
        # 2. Whatever still runs goes back to pending, without counting a retry.
        leftovers = session.take_leftovers()
        reason = session.release_reason()

        answered: list[Running] = []

        def give_back() -> None:
            for entry in leftovers:
                self._release(session, entry, reason)
                answered.append(entry)
            self._slots.orphans.recover(session)  # the jobs of a claim whose reply was lost, if no claim is stuck

        if (leftovers or session.orphans) and not self._bounded("release", give_back, time.monotonic() + ACK_GRACE):
            unanswered = [entry for entry in leftovers if not any(entry is a for a in answered)]
            stopping.report_unreleased(self._events, unanswered, reason, grace=ACK_GRACE, stale_after=self.stale_after)
        # 3. Threads that were writing an outcome finish it within the grace (no write of this run is tried
        #    again after it); those stuck in a released handler are abandoned.
        grace_deadline = time.monotonic() + ACK_GRACE
        session.ledger.cut_off(grace_deadline)
        session.join_slots(lambda: grace_deadline)
        # 4. The completions still waiting in the batch are written (one try once the grace is over) before
        #    the worker says it stopped; what could not be is said, never passed off as a clean stop.
        session.batch.stop()
        session.flusher_thread.join(max(0.0, grace_deadline - time.monotonic()))
        self._bounded("flush", session.batch.flush, max(grace_deadline, time.monotonic() + stopping.FINAL_WRITE_WAIT))
        # Jobs it could not release count too (each said as "unwritten ... not released"): never a clean stop.
        unwritten = self._report_unwritten(session) + session.left_running(leftovers)
        session.heartbeat_stop.set()
        session.join_helpers(ACK_GRACE)
        self._runner.close()  # reports the handler threads it leaves running past their timeout
        self._bounded("worker_stopped", self._presence.stopped, time.monotonic() + stopping.FINAL_WRITE_WAIT)
        stats = self.stats
        message = f"stopped worker={self.worker_id} completed={stats.completed} failed={stats.failed}"
        if unwritten:
            message += f" unwritten={unwritten}"
        self._events.emit("stopped", message=message)
        session.stopped.set()
        session.wake_main.set()

    def _report_unwritten(self, session: Session) -> int:
        """Report this run's outcomes never written (given up, or a write still under way); how many."""
        gave_up, gave_up_keys, writing = session.ledger.unwritten()
        waiting = session.batch.waiting()  # added after the last flush by a slot past the grace
        count = gave_up + len(writing) + len(waiting)
        if not count:
            return 0
        keys = [*gave_up_keys, *writing, *waiting][:SHOWN]
        shown = ", ".join(f"{job_id}/{attempt}" for job_id, attempt in keys) + (" ..." if count > len(keys) else "")
        parts = [f"{gave_up} given up after database errors"] if gave_up else []
        parts += [f"{len(writing)} still being written as the {ACK_GRACE:g}s grace ran out"] if writing else []
        parts += [f"{len(waiting)} never sent"] if waiting else []
        self._events.emit(
            "unwritten",
            message=f"unwritten worker={self.worker_id} count={count}: {count} job outcome(s) of this run not "
            f"written when the worker stopped ({'; '.join(parts)}; job/attempt {shown}): unless a write under "
            f"way lands, those jobs stay running until the reaper takes them back after stale_after "
            f"({self.stale_after:g}s), then run again (at least once)",
        )
        return count

    def _bounded(self, action: str, call: Callable[[], None], deadline: float) -> bool:
        return stopping.bounded(action, call, deadline, queue=self.queue, events=self._events)

    # --- slots' helpers ---------------------------------------------------------------------------

    def _release(self, session: Session, entry: Running, reason: str) -> None:
        job = entry.job
        if entry.lost:
            # The heartbeat saw the claim taken back (fenced by attempt: never ours again), so a release
            # could only be refused: no write, and no "could not release" for a job known lost.
            note = f"left running ({reason}): its claim was taken back earlier, so there is nothing to release"
            self._events.emit("lost", job, note=note)
            with self._lock:
                session.running.pop(entry.key, None)
            return
        # Stopping: one try (the reaper takes back what a database outage keeps us from releasing), so
        # that a stop never waits stale_after per job on a dead database.
        result = self._acks.release(entry.job, once=session.stopping.is_set())
        if result is GAVE_UP:
            # The error was reported as it happened; this says which job it leaves running, and until when.
            note = (
                f"not released ({reason}): it stays running until the reaper takes it back after stale_after "
                f"({self.stale_after:g}s), then runs again"
            )
            self._events.emit("unwritten", job, note=note)
            return
        if result is UNCONFIRMED:
            note = f"released after an error, maybe by the try that raised, or its claim was taken back ({reason})"
            self._events.emit("unconfirmed", job, note=note)
        elif result is None:
            self._events.emit("lost", job, note=f"could not release: the claim was already taken back ({reason})")
        else:
            self._events.emit("released", job, note=f"back to pending, no retry counted: {reason}")
        with self._lock:
            session.running.pop(entry.key, None)

    def _done(self, session: Session, entry: Running) -> None:
        with self._lock:
            session.running.pop(entry.key, None)
            session.in_flight -= 1
            session.finished += 1

    # --- helpers -----------------------------------------------------------------------------------

    def _error(self, action: str, exc: Exception, *, retrying: bool = False, tries: int = 1) -> None:
        """A queue call failed: report it, and drop this thread's connection."""
        # The connection may be the trouble (a server restart, pg_terminate_backend): drop this thread's
        # so that its next query reconnects instead of failing on a dead socket forever.
        close_thread_connection(self.queue)
        self._events.error(action, exc, retrying=retrying, tries=tries)
