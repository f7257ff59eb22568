"""``Worker``: claim -> execute -> complete or fail, on N threads, with heartbeats, a reaper and graceful stop.

The headless CLI (``python -m queue_core.worker``, see ``worker_cli``) and the console's worker pane both run
this class. It talks to the queue only through the repository's methods (claim, heartbeat, complete, fail,
release, reap_stale), so any object with those methods (e.g. an HTTP client) can stand in for a repository.
"""

from __future__ import annotations

import json
import logging
import math
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from functools import partial

from ..errors import QueueError, ValidationError
from .handlers import HandlerRegistry, call_handler, default_registry
from ..store.models import Job
from ..store.repository import FAILED
from ..validation import validate_worker_id

logger = logging.getLogger(__name__)

EVENT_KINDS = ("started", "claimed", "completed", "failed", "released", "lost", "reaped", "error", "stopped")
MAX_CONCURRENCY = 256
# Beat at least this often whatever stale_after is, so a worker with a short threshold does not reap the
# live jobs of a worker configured with a long one.
MAX_HEARTBEAT_INTERVAL = 10.0
# Waits between attempts to record a job's outcome after a database error, doubling up to the cap. The
# worker keeps trying for as long as the claim can still be its own (``stale_after``: after that the
# reaper takes it back, and a late ack would be refused anyway); then the job is left to the reaper and
# may run again (delivery is at least once).
ACK_FIRST_WAIT, ACK_MAX_WAIT = 0.1, 2.0
# After a stop releases the unfinished jobs, how long threads that were writing an outcome get to finish.
ACK_GRACE = 15.0
# A worker with prune_after prunes at start and then this often; several workers doing it is harmless.
PRUNE_INTERVAL = 3600.0


@dataclass(frozen=True)
class WorkerEvent:
    """Something a worker did, for logs and for the console's worker pane."""

    kind: str  # one of EVENT_KINDS
    worker_id: str
    job_id: int | None = None
    job_type: str | None = None
    attempt: int | None = None  # 1-based
    duration: float | None = None  # seconds the handler ran
    error: str | None = None
    message: str = ""  # one human-readable line: what the log prints


@dataclass(frozen=True)
class WorkerStats:
    completed: int  # jobs completed since the worker was created
    failed: int  # failed attempts (retried or final) since the worker was created
    running: int  # jobs running now


def default_worker_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


def next_idle_delay(delay: float, max_poll_interval: float) -> float:
    """The wait after one more empty claim: doubles, up to the bound."""
    return min(max_poll_interval, delay * 2)


@dataclass
class _Running:
    job: Job
    started: float
    thread: threading.Thread
    released: bool = False  # given back by a stop; the handler's late outcome is discarded
    acking: bool = False  # its outcome is being written; a stop leaves it alone
    lost: bool = False  # the heartbeat found the claim taken back

    @property
    def key(self) -> tuple[int, int]:
        # A reaped job may be claimed again by this same worker while the stale run still executes: keyed
        # by (id, attempt), the stale run's clean-up can never drop the newer attempt (and its heartbeat).
        return (self.job.id, self.job.attempt)


class _Session:
    """The state of one start() .. stop(): threads left behind by an old session never touch a new one."""

    def __init__(self, concurrency: int, burst: bool):
        self.burst = burst
        self.stopping = threading.Event()  # no more claims
        self.stopped = threading.Event()  # stop() finished
        self.wake_main = threading.Event()  # run() has something to look at
        self.heartbeat_stop = threading.Event()
        self.slot_wakes = [threading.Event() for _ in range(concurrency)]
        self.threads: list[threading.Thread] = []
        self.heartbeat_thread: threading.Thread | None = None
        self.running: dict[tuple[int, int], _Running] = {}  # by _Running.key: (job id, attempt)
        self.abandoned: set[threading.Thread] = set()  # slots stuck in a handler whose job a stop released
        self.in_flight = 0  # slots claiming or running a job (burst ends when none is)
        self.deadline: float | None = None  # monotonic time by which running jobs must be done
        self.stop_requested: float | None = None  # monotonic time of the first stop request
        self.timeout: float | None = None  # the grace the first stop request gave running jobs
        self.hurried = False  # a later request (a second signal) moved the deadline closer
        self.stopper: int | None = None  # thread running stop()


def _positive_seconds(field: str, value, *, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationError(field, f"must be a finite number of seconds, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValidationError(field, f"must be {'>= 0' if allow_zero else '> 0'} seconds, got {value!r}")
    return float(value)


class Worker:
    """Runs registered handlers for jobs claimed from ``queue`` on ``concurrency`` threads.

    Each thread claims one job at a time, only of types the registry has handlers for; idle threads poll
    with a back-off from ``poll_interval`` doubling to ``max_poll_interval`` (``wakeup()`` cuts it short).
    A heartbeat thread refreshes running jobs every ``min(stale_after / 3, 10)`` seconds and reaps other
    workers' claims older than ``stale_after`` every ``stale_after / 2`` seconds. With ``prune_after``, the same
    thread deletes finished jobs older than that many seconds at start and then hourly.
    """

    def __init__(
        self,
        queue,
        *,
        worker_id: str | None = None,
        concurrency: int = 1,
        registry: HandlerRegistry | None = None,
        poll_interval: float = 0.5,
        max_poll_interval: float = 5.0,
        stale_after: float = 300.0,
        shutdown_timeout: float = 30.0,
        on_event: Callable[[WorkerEvent], None] | None = None,
        prune_after: float | None = None,
    ):
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or not 1 <= concurrency <= MAX_CONCURRENCY:
            raise ValidationError("concurrency", f"must be an integer from 1 to {MAX_CONCURRENCY}, got {concurrency!r}")
        self.queue = queue
        self.worker_id = validate_worker_id(default_worker_id() if worker_id is None else worker_id)
        self.concurrency = concurrency
        self.registry = default_registry() if registry is None else registry
        self.poll_interval = _positive_seconds("poll_interval", poll_interval)
        # Never below poll_interval, so a long poll interval alone is not an error.
        self.max_poll_interval = max(self.poll_interval, _positive_seconds("max_poll_interval", max_poll_interval))
        self.stale_after = _positive_seconds("stale_after", stale_after)
        self.shutdown_timeout = _positive_seconds("shutdown_timeout", shutdown_timeout, allow_zero=True)
        self.heartbeat_interval = min(self.stale_after / 3, MAX_HEARTBEAT_INTERVAL)
        self.reap_interval = self.stale_after / 2
        self.prune_after = None if prune_after is None else _positive_seconds("prune_after", prune_after)
        self._lock = threading.RLock()  # re-entrant: stop() may run in a signal handler on a thread holding it
        self._subscribers: list[Callable[[WorkerEvent], None]] = []
        self._session: _Session | None = None
        self._completed = 0
        self._failed = 0
        # A repository completes a job and claims the next in one transaction; other queues (the HTTP
        # client) take two calls.
        self._chain = callable(getattr(queue, "complete_and_claim", None))
        if on_event is not None:
            self.subscribe(on_event)

    # --- public interface ------------------------------------------------------------------------

    def subscribe(self, callback: Callable[[WorkerEvent], None]) -> None:
        """Call ``callback(event)`` for every event; it runs on worker threads, so be quick and thread-safe."""
        with self._lock:
            self._subscribers.append(callback)

    @property
    def is_running(self) -> bool:
        session = self._session
        return session is not None and not session.stopped.is_set()

    @property
    def stats(self) -> WorkerStats:
        with self._lock:
            session = self._session
            running = 0 if session is None else sum(not r.released for r in session.running.values())
            return WorkerStats(completed=self._completed, failed=self._failed, running=running)

    def start(self) -> None:
        """Start the claim threads and the heartbeat thread; returns at once."""
        self._start(burst=False)

    def run(self, *, burst: bool = False) -> None:
        """Start, then block until ``stop()``/``request_stop()`` or, with ``burst``, until nothing is claimable
        and nothing runs; the worker is stopped (jobs finished or released) when this returns."""
        session = self._start(burst=burst)
        try:
            while not session.stopping.is_set():
                session.wake_main.wait(1.0)
                session.wake_main.clear()
        finally:
            self.stop()

    def request_stop(self, timeout: float | None = None) -> None:
        """Begin a stop without waiting for it (safe in a signal handler); ``run()`` returns once it is done.

        Called again with a shorter timeout (e.g. ``0`` on a second signal), it moves the deadline closer.
        """
        session = self._session
        if session is not None:
            self._request_stop(session, timeout)

    def stop(self, timeout: float | None = None) -> None:
        """Stop claiming; let running jobs finish within ``timeout`` (default ``shutdown_timeout``), release
        the rest back to pending without counting a retry; returns when done. Idempotent."""
        session = self._session
        if session is None or session.stopped.is_set():
            return
        self._request_stop(session, timeout)
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

    def _start(self, *, burst: bool) -> _Session:
        with self._lock:
            if self.is_running:
                raise QueueError(f"worker {self.worker_id} is already running; stop() it first")
            session = self._session = _Session(self.concurrency, burst)
        self._emit(
            "started",
            message=f"started worker={self.worker_id} concurrency={self.concurrency} "
            f"burst={burst} types={','.join(self.registry.names()) or '(none)'}",
        )
        if burst:
            # A dead worker's stale claims are work this burst should do, not a reason to keep waiting.
            self._reap()
        for slot in range(self.concurrency):
            name = f"worker-{self.worker_id}-{slot}"
            session.threads.append(threading.Thread(target=self._claim_loop, args=(session, slot), name=name))
        session.heartbeat_thread = threading.Thread(target=self._heartbeat_loop, args=(session,), name="heartbeat")
        # Daemons: a handler stuck past a released stop must not keep the process alive.
        for thread in [*session.threads, session.heartbeat_thread]:
            thread.daemon = True
            thread.start()
        return session

    def _request_stop(self, session: _Session, timeout: float | None) -> None:
        # No lock here: this runs in signal handlers; a float assignment is atomic under the GIL.
        timeout = self.shutdown_timeout if timeout is None else max(0.0, timeout)
        now = time.monotonic()
        if session.deadline is None:
            session.stop_requested, session.timeout, session.deadline = now, timeout, now + timeout
        elif now + timeout < session.deadline:
            session.deadline = now + timeout
            session.hurried = True
        session.stopping.set()
        session.wake_main.set()
        for wake in session.slot_wakes:
            wake.set()

    def _finish(self, session: _Session) -> None:
        # 1. Running jobs get until the deadline (which a second signal may move to now).
        self._join_slots(session, lambda: session.deadline)
        # 2. Whatever still runs goes back to pending, without counting a retry.
        with self._lock:
            leftovers = [r for r in session.running.values() if not r.acking and not r.released]
            for entry in leftovers:
                entry.released = True
                session.abandoned.add(entry.thread)
        reason = self._release_reason(session)
        for entry in leftovers:
            self._release(session, entry, reason)
        # 3. Threads that were writing an outcome finish it; those stuck in a released handler are abandoned.
        grace_deadline = time.monotonic() + ACK_GRACE
        self._join_slots(session, lambda: grace_deadline)
        session.heartbeat_stop.set()
        if session.heartbeat_thread is not None:
            session.heartbeat_thread.join(ACK_GRACE)
        stats = self.stats
        self._emit(
            "stopped",
            message=f"stopped worker={self.worker_id} completed={stats.completed} failed={stats.failed}",
        )
        session.stopped.set()
        session.wake_main.set()

    @staticmethod
    def _release_reason(session: _Session) -> str:
        """Why a stop released the jobs still running: the timeout ran out, or a second request cut it short."""
        if session.hurried:
            waited = time.monotonic() - session.stop_requested
            return f"released by a second stop request {waited:.1f}s into the {session.timeout:g}s shutdown timeout"
        return f"still running after the shutdown timeout ({session.timeout:g}s)"

    def _join_slots(self, session: _Session, deadline: Callable[[], float]) -> None:
        current = threading.current_thread()
        while True:
            with self._lock:
                alive = [t for t in session.threads if t.is_alive() and t is not current and t not in session.abandoned]
            remaining = deadline() - time.monotonic()
            if not alive or remaining <= 0:
                return
            alive[0].join(min(remaining, 0.05))

    # --- claim threads -----------------------------------------------------------------------------

    def _claim_loop(self, session: _Session, slot: int) -> None:
        wake = session.slot_wakes[slot]
        delay = self.poll_interval
        entry = None  # a job claimed along with the previous one's completion, to run next
        try:
            while entry is not None or not session.stopping.is_set():
                if entry is not None:
                    entry = self._execute(session, entry)
                    delay = self.poll_interval
                    continue
                wake.clear()
                entry, nobody_busy, claim_ok = self._claim(session)
                if entry is not None:
                    continue
                if session.burst and nobody_busy and claim_ok:
                    self._request_stop(session, None)
                    break
                wake.wait(delay)
                delay = self.poll_interval if wake.is_set() else next_idle_delay(delay, self.max_poll_interval)
        finally:
            self._close_thread_connection()

    def _claim(self, session: _Session) -> tuple[_Running | None, bool, bool]:
        """Claim one job; returns (entry or None, no slot is claiming or running, the claim query worked)."""
        with self._lock:
            session.in_flight += 1
        job, ok = None, True
        try:
            job = self.queue.claim(self.worker_id, types=self.registry.names())
        except Exception as exc:
            ok = False
            self._emit_error("claim", exc)
        if job is None:
            with self._lock:
                session.in_flight -= 1
                return None, session.in_flight == 0, ok
        return self._register(session, job), False, ok

    def _register(self, session: _Session, job: Job) -> _Running | None:
        """Track a job just claimed (``in_flight`` already counts it); one that raced a stop goes back."""
        with self._lock:
            entry = _Running(job=job, started=time.monotonic(), thread=threading.current_thread())
            session.running[entry.key] = entry
            # Marked under the lock, so a stop's release of leftovers never takes this one too.
            entry.released = session.stopping.is_set()
        if entry.released:
            # The claim raced a stop: give the job straight back rather than start it.
            self._release(session, entry, "claimed while the worker was stopping")
            self._done(session, entry)
            return None
        return entry

    def _execute(self, session: _Session, entry: _Running) -> _Running | None:
        """Run the job and record its outcome; returns the next job if one was claimed with the outcome."""
        job = entry.job
        self._emit("claimed", job)
        fn = self.registry.get(job.type)
        if fn is None:
            # Unregistered since the claim: leave the job for a worker that has its handler.
            with self._lock:
                entry.released = True
            self._release(session, entry, "no handler registered for this type any more")
            self._done(session, entry)
            return None
        started = time.monotonic()
        error = None
        try:
            call_handler(fn, job)
        except BaseException as exc:  # a handler must never take its worker thread down
            error = exception_message(exc)
            logger.debug("job %s (%s) raised", job.id, job.type, exc_info=True)
        duration = time.monotonic() - started
        with self._lock:
            if entry.released:
                logger.debug("job %s finished after it was released; its outcome is discarded", job.id)
                return None
            entry.acking = True
        try:
            return self._record_outcome(session, entry, duration, error)
        finally:
            self._done(session, entry)

    def _ack(self, action: str, entry: _Running, *args, once: bool = False):
        """``queue.complete/fail/release`` for the claim this worker holds, retried on database errors
        (``once``: a single try, then ``_GAVE_UP``)."""
        method = getattr(self.queue, action)
        job = entry.job
        call = partial(method, job.id, *args, worker_id=self.worker_id, attempt=job.attempt)
        return self._retrying(action, call, patience=0.0 if once else self.stale_after)

    def _record_outcome(
        self, session: _Session, entry: _Running, duration: float, error: str | None
    ) -> _Running | None:
        """Write the outcome (claiming the slot's next job with a success, if it can); returns that job."""
        next_entry = None
        if error is not None:
            result = self._ack("fail", entry, error)
        elif self._chain and not session.stopping.is_set():
            result, next_entry = self._complete_and_claim(session, entry)
        else:
            result = self._ack("complete", entry)
        if result is not _GAVE_UP:
            self._report_outcome(entry, result, duration, error)
        return next_entry

    def _report_outcome(self, entry: _Running, result: Job | None, duration: float, error: str | None) -> None:
        job = entry.job
        if result is None:
            if not entry.lost:  # the heartbeat has not said so already
                outcome = "completed" if error is None else f"failed ({error})"
                note = f"{outcome} but the claim was taken back (reaped, maybe claimed again); outcome discarded"
                self._emit("lost", job, duration=duration, note=note)
            return
        with self._lock:
            if error is None:
                self._completed += 1
            else:
                self._failed += 1
        if error is None:
            self._emit("completed", job, duration=duration)
            return
        if result.status == FAILED:
            note = f"no retries left after {job.attempt} attempts"
        else:
            retry_at = result.run_at.isoformat(timespec="milliseconds")
            note = f"retry {result.retry_count}/{result.max_retries} at {retry_at}"
        self._emit("failed", job, duration=duration, error=error, note=note)

    def _complete_and_claim(self, session: _Session, entry: _Running) -> tuple[object, _Running | None]:
        """Complete ``entry`` and claim the slot's next job in one statement: (completed job, next entry)."""
        with self._lock:
            session.in_flight += 1  # the next job, counted before this one is done so a burst cannot end
        job = entry.job
        try:
            done, next_job = self.queue.complete_and_claim(
                job.id, self.registry.names(), worker_id=self.worker_id, attempt=job.attempt
            )
        except Exception as exc:
            # Not again: had that try committed unseen, another would claim a second job and orphan the
            # first. A plain completion is safe to repeat (a done job is simply no longer held).
            self._emit_error("complete_and_claim", exc, retrying=True)
            done, next_job = self._ack("complete", entry), None
        if next_job is None:
            with self._lock:
                session.in_flight -= 1
            return done, None
        return done, self._register(session, next_job)

    def _release(self, session: _Session, entry: _Running, reason: str) -> None:
        job = entry.job
        # Stopping: one try (the reaper takes back what a database outage keeps us from releasing), so
        # that a stop never waits stale_after per job on a dead database.
        result = self._ack("release", entry, once=session.stopping.is_set())
        if result is _GAVE_UP:
            return
        if result is None:
            self._emit("lost", job, note=f"could not release: the claim was already taken back ({reason})")
        else:
            self._emit("released", job, note=f"back to pending, no retry counted: {reason}")
        with self._lock:
            session.running.pop(entry.key, None)

    def _done(self, session: _Session, entry: _Running) -> None:
        with self._lock:
            session.running.pop(entry.key, None)
            session.in_flight -= 1

    def _retrying(self, action: str, call: Callable[[], object], *, patience: float):
        """``call()``, tried again after database errors for up to ``patience`` seconds."""
        give_up_at = time.monotonic() + patience
        wait = ACK_FIRST_WAIT
        while True:
            try:
                return call()
            except Exception as exc:
                retrying = time.monotonic() + wait < give_up_at
                self._emit_error(action, exc, retrying=retrying)
                if not retrying:
                    return _GAVE_UP
                time.sleep(wait)
                wait = min(wait * 2, ACK_MAX_WAIT)

    # --- heartbeat and reaper ----------------------------------------------------------------------

    def _heartbeat_loop(self, session: _Session) -> None:
        next_reap = time.monotonic() + (self.reap_interval if session.burst else 0.0)  # a burst reaped at start
        next_prune = time.monotonic()
        try:
            while True:
                if time.monotonic() >= next_reap and not session.stopping.is_set():
                    # Beat first: on a loaded machine a late beat must not make our own live jobs look stale.
                    self._beat(session)
                    self._reap()
                    next_reap = time.monotonic() + self.reap_interval
                if self.prune_after is not None and time.monotonic() >= next_prune:
                    self._prune()
                    next_prune = time.monotonic() + PRUNE_INTERVAL
                if session.heartbeat_stop.wait(self.heartbeat_interval):
                    return
                self._beat(session)
        finally:
            self._close_thread_connection()

    def _beat(self, session: _Session) -> None:
        with self._lock:
            entries = [r for r in session.running.values() if not (r.released or r.lost or r.acking)]
        if not entries:
            return
        try:
            # Ids only, once each: a stale attempt and the newer one of the same job share the row, and both
            # count as held while this worker holds the newer one (the stale run's ack is refused anyway).
            job_ids = sorted({r.job.id for r in entries})
            held = set(self.queue.heartbeat(job_ids, worker_id=self.worker_id))
        except Exception as exc:
            self._emit_error("heartbeat", exc)
            return
        for entry in entries:
            with self._lock:
                # Finished since the snapshot: a completed job is not held any more, and not lost either.
                if entry.job.id in held or entry.acking or session.running.get(entry.key) is not entry:
                    continue
                entry.lost = True
            self._emit("lost", entry.job, note="claim taken back while running (reaped); its outcome will be discarded")

    def _reap(self) -> None:
        reaped = self._housekeeping("reap", lambda: self.queue.reap_stale(timedelta(seconds=self.stale_after)))
        if reaped:
            self._emit(
                "reaped",
                message=f"reaped {reaped} stale job(s) worker={self.worker_id} "
                f"(no heartbeat for {self.stale_after:g}s): back to pending, or failed without retries left",
            )
            self.wakeup()

    def _prune(self) -> None:
        pruned = self._housekeeping("prune", lambda: self.queue.prune(timedelta(seconds=self.prune_after)))
        if pruned:
            logger.info("pruned %d finished job(s) older than %gs worker=%s", pruned, self.prune_after, self.worker_id)

    def _housekeeping(self, action: str, call: Callable[[], int]) -> int:
        """A periodic repository call: how many jobs it took; a database error is an event, and 0."""
        try:
            return call()
        except Exception as exc:
            self._emit_error(action, exc)
            return 0

    # --- helpers -----------------------------------------------------------------------------------

    def _close_thread_connection(self) -> None:
        # peewee keeps one connection per thread; close this thread's when it ends.
        db = getattr(self.queue, "db", None)
        close = getattr(db, "close", None)
        if close is not None:
            try:
                close()
            except Exception:
                logger.debug("closing a worker thread's connection failed", exc_info=True)

    def _emit_error(self, action: str, exc: Exception, *, retrying: bool = False) -> None:
        # The connection may be the trouble (a server restart, pg_terminate_backend): drop this thread's
        # so that its next query reconnects instead of failing on a dead socket forever.
        self._close_thread_connection()
        then = "; retrying" if retrying else ""
        error = f"{type(exc).__name__}: {exception_message(exc)}"
        self._emit(
            "error",
            error=error,
            message=f"error worker={self.worker_id} during={action} error={json.dumps(error)}{then}",
        )

    def _emit(
        self,
        kind: str,
        job: Job | None = None,
        *,
        duration: float | None = None,
        error: str | None = None,
        note: str = "",
        message: str = "",
    ) -> None:
        if not message:
            message = describe(kind, self.worker_id, job, duration, error, note)
        event = WorkerEvent(
            kind=kind,
            worker_id=self.worker_id,
            job_id=None if job is None else job.id,
            job_type=None if job is None else job.type,
            attempt=None if job is None else job.attempt,
            duration=duration,
            error=error,
            message=message,
        )
        with self._lock:
            subscribers = list(self._subscribers)
        for callback in subscribers:
            try:
                callback(event)
            except Exception:
                logger.exception("worker event subscriber %r failed on a %s event", callback, kind)


_GAVE_UP = object()


def exception_message(exc: BaseException) -> str:
    """``str(exc)``, or the exception's type name when that is empty, not a string, or raises.

    A handler's exception is arbitrary code: its ``__str__`` raising (or returning a non-string, which makes
    ``str()`` raise) must still end as a failed attempt, never take the worker thread down.
    """
    try:
        message = str(exc)
    except Exception:
        message = ""
    return message or type(exc).__name__


def describe(kind: str, worker_id: str, job: Job | None, duration: float | None, error: str | None, note: str) -> str:
    """One log line: ``completed job=7 type=echo attempt=1 worker=w duration=0.012s``, then error and note."""
    parts = [kind]
    if job is not None:
        parts += [f"job={job.id}", f"type={job.type}", f"attempt={job.attempt}"]
    parts.append(f"worker={worker_id}")
    if duration is not None:
        parts.append(f"duration={duration:.3f}s")
    if error is not None:
        parts.append(f"error={json.dumps(error, ensure_ascii=False)}")
    line = " ".join(parts)
    return f"{line}: {note}" if note else line
