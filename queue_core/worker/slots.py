"""The claim slots of a running worker: each runs one job at a time, and idle slots claim together.

A slot that is idle claims for every idle slot of its queues at once (``complete_and_claim_many``: up to
k jobs for k free slots, in one statement) and hands the extra jobs to the others. The same transaction
writes the completions waiting in the ack batch (``acks.AckBatch``), so a busy worker pays one commit per
round of jobs, not two per job. Never more jobs than idle slots: a job is marked running only when a slot
is free to start it (no prefetch), so none waits behind another while charged an attempt.

While one slot claims for its queues, the others that fall idle wait for it: it feeds them from its claim
or, if it found as many jobs as it asked for (there may be more), wakes them to claim again. And a slot
whose job was short waits a moment for the others' short jobs to end (``gather``), so that the round's
claim serves them all rather than the first to finish alone.

A claim wakes the first slot it fed, and each wakes the next as it takes its job. A slot that finished its
own job before a slot of its queues took the job handed to it runs that job itself (``Session.steal_mail``).
A claim made right after a short job wakes nobody (``worker.dispatch``): with jobs shorter than a thread's
wake-up, the slot that claimed runs the round, and the others stay idle for the next claim to feed; a
dispatcher thread wakes the first slot fed if its job still waits a millisecond later. A job claimed for a
free slot starts at once, or within ~2 ms when it was handed so, on whichever thread is free first.
"""

from __future__ import annotations

import logging
import threading
import time

from .dispatch import DELAY as DISPATCH_DELAY
from .orphans import Orphans
from .protocol import ClaimedJob, close_thread_connection
from .session import Running, Session

logger = logging.getLogger(__name__)


def next_idle_delay(delay: float, max_poll_interval: float) -> float:
    """The wait after one more empty claim: doubles, up to the bound."""
    return min(max_poll_interval, delay * 2)


class Slots:
    """The claim threads' work, for one ``Worker`` (its queue, acks, outcomes, lock and events)."""

    def __init__(self, worker):
        self.worker = worker  # the loop.Worker (not imported: it imports this module)
        self.orphans = Orphans(
            worker.queue, worker.worker_id, events=worker._events, on_error=worker._error, lock=worker._lock
        )

    def run(self, session: Session, slot: int) -> None:
        """A claim thread: run the jobs this slot claims or is handed until the worker stops."""
        worker = self.worker
        wake = session.slot_wakes[slot]
        delay = worker.poll_interval
        try:
            ran = None  # how long this slot's last job ran (None: it has not run one since it last waited)
            last = None  # how long the last job it ran took, kept through a gather (None: none since its claim)
            alone = session.slot_queues.count(session.slot_queues[slot]) == 1  # no other slot to wait for
            while True:
                entry = session.take_mail(slot)
                if entry is None and ran is not None and not alone:
                    entry = session.steal_mail(slot)  # free again before the slot it was handed to woke
                if entry is not None:
                    ran = last = self.execute(session, entry)
                    delay = worker.poll_interval
                    continue
                if session.stopping.is_set():
                    session.batch.nudge()  # no claim will take this slot's last completion along
                    break
                wake.clear()
                if ran is not None and not alone and self.gather(session, slot, ran):
                    ran = None
                    continue  # fed by a claim another slot made for the group, or claims for it now
                quick = last is not None and last < DISPATCH_DELAY
                entry, nobody_busy, claim_ok, others_claiming = self.claim(session, slot, quick=quick)
                ran = last = None
                if entry is not None:
                    ran = last = self.execute(session, entry)
                    continue
                if session.burst and nobody_busy and claim_ok:
                    session.request_stop(None)
                    break
                if not claim_ok and session.give_up(worker.stale_after, worker._acks.claim_error):
                    break
                wake.wait(delay)
                if not others_claiming:
                    delay = worker.poll_interval if wake.is_set() else next_idle_delay(delay, worker.max_poll_interval)
        finally:
            close_thread_connection(worker.queue)

    def gather(self, session: Session, slot: int, ran: float) -> bool:
        """After a short job, wait for the group's busy slots to fall idle too, so that one claim serves them all.

        A slot whose job ran under ``ack_delay`` (its completion may wait that long anyway) waits up to
        ``ack_delay`` among the idle slots while another slot of its queues runs a job claimed within that
        time: the last of those to fall idle claims for every idle slot at once (or this one does when the
        time is up). Short jobs claimed together end close together, and claiming each alone cost a
        statement a job where one could carry the round (no-op jobs, 4 slots: 2.5 jobs a claim, then 4).
        A slot whose job ran longer claims at once, and a job running longer than the wait is not waited
        for: neither is likely to end within it. True if this slot waited (the caller looks for mail,
        then claims).
        """
        window = self.worker.ack_delay
        if ran >= window:
            return False
        group = session.slot_queues[slot]
        with self.worker._lock:
            idle = session.idle.setdefault(group, [])
            if group in session.claiming or slot in idle or not session.ending_soon(group, slot, window):
                return False  # a claim under way feeds this slot (claim() waits for it), or none is worth waiting for
            idle.append(slot)  # taken along by the claim of the slot that falls idle last
        session.slot_wakes[slot].wait(window)
        return True

    def _recovered(self, session: Session) -> bool:
        """Recover the jobs of a claim whose reply was lost (once no claim is under way); False when the look
        for them failed (reported): the database is away, and a claim now would fail the same way, a second
        error line at every poll of an outage, so that counts as the failed claim instead."""
        failed = self.orphans.recover(session, on_look_error=self.worker._acks.claim_failed)
        if failed is None:
            return True
        with self.worker._lock:
            session.claimed(False)
        self.worker._acks.claim_error = failed
        return False

    def claim(self, session: Session, slot: int, *, quick: bool = False) -> tuple[Running | None, bool, bool, bool]:
        """Claim for ``slot`` and the other idle slots of its queues; returns (this slot's entry or None,
        nothing is left for a burst, the claim worked, another slot is claiming for us). ``quick``: this
        slot's last job was short, so the jobs it hands to others go to the dispatcher rather than waking
        the first of them (``worker.dispatch``)."""
        worker = self.worker
        group = session.slot_queues[slot]
        if not self._recovered(session):
            return None, False, False, False
        with worker._lock:
            mailed = session.take_mail(slot)
            if mailed is not None:
                # Fed by a claim that ended after this slot last looked for mail: run that job, claim none.
                return mailed, False, True, False
            idle = session.idle.setdefault(group, [])
            waiting = group in session.claiming or session.recovering
            if waiting:
                session.wait_on(slot, idle)
            else:
                session.claiming.add(group)
                others = [other for other in idle if other != slot]  # every idle slot of these queues
                idle.clear()
                n = 1 + len(others)
                session.in_flight += n  # counted before the acks are written, so a burst cannot end meanwhile
                finished_before = session.finished  # a job that finishes during the claim may not be seen by it
        if waiting:
            session.batch.nudge()  # that claim may have taken the batch before this slot's completion
            return None, False, True, True
        items = session.batch.take()
        done, jobs, ok = worker._acks.complete_and_claim_many(items, n, worker.registry.claim_types(), group)
        worker._outcomes.completions(items, done)
        entries = [self.register(session, job, s) for job, s in zip(jobs, [slot, *others], strict=False)]
        fed = [(other, entry) for other, entry in zip(others, entries[1:], strict=False) if entry is not None]
        with worker._lock:
            # Fed before the claim is over: a slot that stops waiting now finds its job, not a claim of its own.
            session.mail.update(fed)
            handed = quick and session.dispatcher is not None and bool(fed)
            if handed:
                session.dispatcher.hand([other for other, _ in fed], time.monotonic())
            session.orphans |= not ok  # before the claim is over: no recovery runs before it is tracked
            session.claimed(ok)
            session.claiming.discard(group)
            session.in_flight -= n - len(jobs)
            latecomers = [other for other in idle if other not in others]  # fell idle while this claim ran
            # Still idle: the slots this claim could not feed (and this one, if it got nothing).
            idle[:] = [*others[max(len(jobs) - 1, 0) :], *([] if jobs else [slot]), *latecomers]
            nobody_left = not jobs and session.nothing_left(slot, finished_before)
            # A burst's empty claim that a job finished during proves nothing (that job may have gone back
            # to pending unseen): this slot claims again at once rather than after a poll interval.
            again = session.burst and not jobs and session.finished != finished_before
        # The first slot fed is woken (it wakes the next: Session.wake_next), unless the dispatcher wakes it if
        # this slot's job runs long. A claim that got all it asked for may have left more: the latecomers
        # claim at once.
        for other in [
            *(other for other, _ in fed[:1] if not handed),
            *(latecomers if len(jobs) == n else ()),
            *([slot] if again else ()),
        ]:
            session.slot_wakes[other].set()
        return (entries[0] if entries else None), nobody_left, ok, False

    def register(self, session: Session, job: ClaimedJob, slot: int) -> Running | None:
        """Track a job just claimed for ``slot`` (``in_flight`` already counts it); one that raced a stop
        goes back."""
        worker = self.worker
        with worker._lock:
            entry = Running(job=job, started=time.monotonic(), thread=session.threads[slot], slot=slot)
            session.running[entry.key] = entry
            # Marked under the lock, so a stop's release of leftovers never takes this one too.
            entry.released = session.stopping.is_set()
        if entry.released:
            # The claim raced a stop: give the job straight back rather than start it.
            worker._release(session, entry, "claimed while the worker was stopping")
            worker._done(session, entry)
            return None
        return entry

    def execute(self, session: Session, entry: Running) -> float | None:
        """Run the job and record its outcome (a completion joins the ack batch); how long its handler ran
        (None if it did not run)."""
        worker = self.worker
        job = entry.job
        with worker._lock:
            if entry.released:
                # A stop gave it back before this slot started it (mailed, or its own claim, not yet taken up):
                # it is pending again, maybe claimed elsewhere, so its handler must not run here too.
                return None
        worker._events.emit("claimed", job)  # returns at once when nobody wants it
        fn = worker.registry.get(job.type)
        if fn is None:
            # Unregistered since the claim: leave the job for a worker that has its handler.
            with worker._lock:
                entry.released = True
            worker._release(session, entry, "no handler registered for this type any more")
            worker._done(session, entry)
            return None
        result, error, duration, exc = worker._runner.attempt(fn, job)
        with worker._lock:
            if entry.released:
                logger.debug("job %s finished after it was released; its outcome is discarded", job.id)
                return None
            entry.acking = True
            cancelled = entry.cancel_requested  # seen while the handler ran: it stopped because of it, or may have
        try:
            if cancelled:
                worker._outcomes.cancel(entry, duration, error)
            elif error is not None:
                worker._outcomes.fail(entry, duration, error, exc)
            else:
                session.batch.add((entry, result, duration))
        finally:
            worker._done(session, entry)
        return duration


def slot_threads(slots: Slots, session: Session, worker_id: str, count: int) -> list[threading.Thread]:
    return [
        threading.Thread(target=slots.run, args=(session, slot), name=f"worker-{worker_id}-{slot}", daemon=True)
        for slot in range(count)
    ]
