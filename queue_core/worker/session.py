"""The state of one ``Worker.start()`` .. ``stop()``, shared by its claim threads and its heartbeat thread.

A new session per start: threads left behind by an old session (stuck in a handler past a stop) only ever
touch their own session's state, never a newer one's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from .dispatch import Dispatcher
from .protocol import ClaimedJob


def slot_queues(queues: dict[str, int] | None, concurrency: int) -> list[tuple[str, ...] | None]:
    """The queues each claim slot claims from: every queue (None) on each, or each named queue on its own N."""
    if queues is None:
        return [None] * concurrency
    return [(name,) for name, slots in queues.items() for _ in range(slots)]


@dataclass
class Running:
    """A job a claim thread holds, from its claim until its outcome is written (or it is released)."""

    job: ClaimedJob
    started: float
    thread: threading.Thread
    slot: int  # the slot running it (the one it was handed to, or one of the same queues that took it over)
    released: bool = False  # given back by a stop; the handler's late outcome is discarded
    acking: bool = False  # its outcome is being written; a stop leaves it alone
    lost: bool = False  # the heartbeat found the claim taken back
    cancel_requested: bool = False  # the heartbeat saw an operator's cancel: the outcome is "cancelled"

    @property
    def key(self) -> tuple[int, int]:
        # A reaped job may be claimed again by this same worker while the stale run still executes: keyed
        # by (id, attempt), the stale run's clean-up can never drop the newer attempt (and its heartbeat).
        return (self.job.id, self.job.attempt)


class Session:
    """Events, threads and running jobs of one start() .. stop(), and the steps of its stop.

    ``lock`` is the worker's (it also guards the worker's counters); it guards ``running``, ``in_flight``,
    ``abandoned`` and each entry's flags.
    """

    def __init__(self, slot_queues: list, burst: bool, shutdown_timeout: float, lock: threading.RLock):
        self.slot_queues = slot_queues  # per slot: the queues it claims from (None: every queue)
        self.burst = burst
        self.shutdown_timeout = shutdown_timeout
        self.lock = lock
        self.stopping = threading.Event()  # no more claims
        self.stopped = threading.Event()  # stop() finished
        self.wake_main = threading.Event()  # run() has something to look at
        self.heartbeat_stop = threading.Event()
        self.slot_wakes = [threading.Event() for _ in slot_queues]
        self.threads: list[threading.Thread] = []
        self.heartbeat_thread: threading.Thread | None = None
        self.scheduler_thread: threading.Thread | None = None  # enqueues periodic jobs until ``stopping``
        self.flusher_thread: threading.Thread | None = None  # writes the completions no claim took along
        self.listener = None  # store.notify: wakes idle slots on each new job (a database queue, not a burst)
        self.batch = None  # acks.AckBatch: this run's completions waiting to be written
        self.ledger = None  # acks.Ledger: this run's outcome writes, and those not written
        self.running: dict[tuple[int, int], Running] = {}  # by Running.key: (job id, attempt)
        self.abandoned: set[threading.Thread] = set()  # slots stuck in a handler whose job a stop released
        self.in_flight = 0  # slots claiming or running a job (burst ends when none is)
        self.deadline: float | None = None  # monotonic time by which running jobs must be done
        self.stop_requested: float | None = None  # monotonic time of the first stop request
        self.timeout: float | None = None  # the grace the first stop request gave running jobs
        self.hurried = False  # a later request (a second signal) moved the deadline closer
        self.stopper: int | None = None  # thread running stop()
        # For a burst's end: jobs finished so far, and the count when each set of queues last claimed nothing.
        self.finished = 0
        self.found_nothing: dict[tuple[str, ...] | None, int] = {}
        # Since when every claim has failed (None: the last one worked), and why a burst gave up (None: it did not).
        self.failing_since: float | None = None
        self.gave_up: str | None = None
        # Claiming for free slots (worker.slots): the queue sets a claim is under way for, the slots waiting
        # on it, and the jobs a claim handed to a slot that has not picked them up yet.
        self.claiming: set[tuple[str, ...] | None] = set()
        self.idle: dict[tuple[str, ...] | None, list[int]] = {}  # every slot is idle at the start
        for slot, queues in enumerate(slot_queues):
            self.idle.setdefault(queues, []).append(slot)
        self.mail: dict[int, Running] = {}
        # A claim raised (its reply lost, maybe after it committed): the jobs it may have taken are looked
        # for before the next claim (worker.orphans), which waits while ``recovering``.
        self.orphans = False
        self.recovering = False
        self.held_back: set[int] = set()  # slots that came to claim during that recovery, woken when it is done
        # Wakes the slots fed by a claim after a short job whose jobs wait too long (worker.dispatch); None
        # when no two slots share queues (no claim feeds another slot).
        self.dispatcher = Dispatcher(self) if len(set(slot_queues)) < len(slot_queues) else None
        self.dispatch_thread: threading.Thread | None = None

    def take_mail(self, slot: int) -> Running | None:
        """The job a claim handed to ``slot``, if it is still there; the next slot it fed is woken."""
        if not self.mail:  # read without the lock: an empty box read as full is looked at again under it
            return None
        with self.lock:
            entry = self.mail.pop(slot, None)
            if entry is not None:
                self.wake_next(slot)
            return entry

    def wake_next(self, slot: int) -> None:
        """Wake one slot of ``slot``'s queues with a job waiting for it (caller holds the lock).

        A claim wakes the first slot it fed and each wakes the next as it takes its job, rather than the
        claim waking them all: a thread woken on another (idle) CPU runs tens of microseconds later, three
        woken at once fought for the GIL, and a slot that finishes a short job first meanwhile runs the
        jobs still waiting (``steal_mail``): with no-op jobs, a four-slot worker drained 1.85x as fast.
        """
        group = self.slot_queues[slot]
        for other in self.mail:
            if self.slot_queues[other] == group:
                self.slot_wakes[other].set()
                return

    def steal_mail(self, slot: int) -> Running | None:
        """A job a claim handed to another slot of ``slot``'s queues that has not taken it yet, now ``slot``'s
        to run; that slot is idle again, for the group's next claim to feed.

        The job starts sooner than it would have (its slot was not running yet), and no job waits behind
        another: ``slot`` is free, as the slot it was handed to is. The last one handed is taken, the
        first being the one the claim woke.
        """
        if not self.mail:
            return None
        group = self.slot_queues[slot]
        with self.lock:
            other = next((o for o in reversed(self.mail) if self.slot_queues[o] == group), None)
            if other is None:
                return None
            entry = self.mail.pop(other)
            entry.slot, entry.thread = slot, self.threads[slot]
            idle = self.idle.setdefault(group, [])
            if other not in idle:
                idle.append(other)
            return entry

    def ending_soon(self, group: tuple[str, ...] | None, slot: int, within: float) -> bool:
        """Does another slot claiming from ``group`` run a job claimed less than ``within`` seconds ago (one
        that may well end within as much again)? (caller holds the lock)"""
        since = time.monotonic() - within
        queues = self.slot_queues
        return any(
            entry.slot != slot and queues[entry.slot] == group and entry.started > since and not entry.released
            for entry in self.running.values()
        )

    def nothing_left(self, slot: int, finished_before: int) -> bool:
        """``slot`` just claimed nothing, in a claim that began when ``finished`` was ``finished_before``: is
        the burst over? (caller holds the lock)

        Only if no slot is claiming or running, and every set of queues the slots claim from came up empty
        in a claim that began after the last job finished (a job may enqueue another, and a failed attempt
        goes back to pending: a claim that was under way while that was written may not have seen it): with
        per-queue slots, one empty queue says nothing of the others.
        """
        key = self.slot_queues[slot]
        self.found_nothing[key] = finished_before
        return self.in_flight == 0 and all(self.found_nothing.get(q) == self.finished for q in set(self.slot_queues))

    def wait_on(self, slot: int, idle: list[int]) -> None:
        """``slot`` waits for the claim or the recovery of orphans under way for its queues (caller holds the
        lock): fed, or woken to claim, when it is over."""
        if slot not in idle:
            idle.append(slot)
        if self.recovering:
            self.held_back.add(slot)

    def claimed(self, ok: bool) -> None:
        """A claim answered (``ok``) or raised (caller holds the lock)."""
        if ok:
            self.failing_since = None
        elif self.failing_since is None:
            self.failing_since = time.monotonic()

    def give_up(self, patience: float, error: BaseException | None) -> bool:
        """A burst whose claims have all failed for ``patience`` seconds (the worker's ``stale_after``) stops,
        as at a signal, and its ``run()`` raises ``WorkerGaveUp``: True if it did.

        Without this a burst run by cron or CI waited for ever on a database that had gone away. A burst
        waits out a shorter outage (a restart, a fail-over): a claim that works resets the clock. After
        ``stale_after`` the claims it holds are the reaper's to take back anyway.
        """
        since = self.failing_since
        if not self.burst or since is None or time.monotonic() - since < patience:
            return False
        why = "" if error is None else f", the last with {type(error).__name__}: {error}"
        self.gave_up = (
            f"gave up on the burst: every claim failed for {patience:g}s (the stale-after time){why}; jobs still "
            "pending wait for the next run, and a job whose outcome could not be written is reaped and runs again"
        )
        self.request_stop(None)
        return True

    def live_entries(self) -> list[Running]:
        """The jobs still ours to beat for: not released, not lost, not being acknowledged (caller holds the lock)."""
        return [r for r in self.running.values() if not (r.released or r.lost or r.acking)]

    def request_stop(self, timeout: float | None) -> None:
        """No more claims; running jobs get ``timeout`` (default: the shutdown timeout). A later, shorter
        request (a second signal) moves the deadline closer."""
        # No lock here: this runs in signal handlers; a float assignment is atomic under the GIL.
        timeout = self.shutdown_timeout if timeout is None else max(0.0, timeout)
        now = time.monotonic()
        if self.deadline is None:
            self.stop_requested, self.timeout, self.deadline = now, timeout, now + timeout
        elif now + timeout < self.deadline:
            self.deadline = now + timeout
            self.hurried = True
        self.stopping.set()
        self.wake_main.set()
        for wake in self.slot_wakes:
            wake.set()
        if self.dispatcher is not None:
            self.dispatcher.kick.set()

    def join_slots(self, deadline: Callable[[], float]) -> None:
        """Wait until every claim thread (but this one and the abandoned) ended, or ``deadline()`` passed."""
        current = threading.current_thread()
        while True:
            with self.lock:
                alive = [t for t in self.threads if t.is_alive() and t is not current and t not in self.abandoned]
            remaining = deadline() - time.monotonic()
            if not alive or remaining <= 0:
                return
            alive[0].join(min(remaining, 0.05))

    def join_helpers(self, timeout: float) -> None:
        """Wait up to ``timeout`` each for the heartbeat, scheduler and dispatch threads (told to stop already)."""
        for thread in (self.heartbeat_thread, self.scheduler_thread, self.dispatch_thread):
            if thread is not None:
                thread.join(timeout)

    def take_leftovers(self) -> list[Running]:
        """Mark the jobs still running (not being acknowledged) released, their threads abandoned; return them."""
        with self.lock:
            leftovers = [r for r in self.running.values() if not r.acking and not r.released]
            for entry in leftovers:
                entry.released = True
                self.abandoned.add(entry.thread)
        return leftovers

    def left_running(self, leftovers: list[Running]) -> int:
        """How many of ``leftovers`` (``take_leftovers``) a stop's release left held: its one try failed, or got
        no answer in time. Still running in the queue, they are reaped and run again."""
        with self.lock:
            return sum(1 for entry in leftovers if self.running.get(entry.key) is entry)

    def release_reason(self) -> str:
        """Why a stop released the jobs still running: the timeout ran out, or a second request cut it short."""
        if self.hurried:
            waited = time.monotonic() - self.stop_requested
            return f"released by a second stop request {waited:.1f}s into the {self.timeout:g}s shutdown timeout"
        return f"still running after the shutdown timeout ({self.timeout:g}s)"
