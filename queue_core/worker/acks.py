"""Acknowledgements: writing a job's outcome (complete, fail, release, cancelled) for the claim the worker holds.

A database error while writing an outcome is not the job's fault: the write is tried again, waiting
``ACK_FIRST_WAIT`` doubling up to ``ACK_MAX_WAIT``, for as long as the claim can still be the worker's
(``stale_after``: after that the reaper takes it back, and a late ack would be refused anyway), or until a
stopping worker's grace is over (``Ledger.cutoff``). Then the job is left to the reaper and may run
again: delivery is at least once.

An error does not say the write failed: a connection dropped after COMMIT raises though the outcome is
stored. The fencing makes the re-sent ack harmless (the job is no longer held, so nothing is applied
twice), but it answers "not held" for it, just as for a claim the reaper took back. Such an answer after
an error is therefore reported as *unconfirmed*, never as lost (``UNCONFIRMED``, ``Held.unsure``).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable

from .protocol import ClaimedJob, JobQueue

ACK_FIRST_WAIT, ACK_MAX_WAIT = 0.1, 2.0
# Outcomes not written that a report names one by one (it counts them all).
SHOWN = 20

# The answer of an acknowledgement that never got through: unlike None (the claim was taken back), it says
# nothing about the job, so nothing is reported or counted for it (the stop reports it as unwritten).
GAVE_UP = object()
# The answer "not held" to an ack re-sent after an error: the first try may have been written (its reply
# lost), or the claim was taken back meanwhile; which, the queue cannot tell any more.
UNCONFIRMED = object()

# A completion waiting in the batch: (the running entry, the handler's result, seconds the handler ran).
Completion = tuple  # (session.Running, object, float)

# on_error(action, exception, retrying=..., tries=...): reports a failed queue call (the worker logs it as an
# event); ``tries``, how many tries of it failed so far (``retrying`` reports only some of them).
ErrorReporter = Callable[..., None]
# on_recovered(action, tries): a queue call worked after ``tries`` failed in a row.
RecoveryReporter = Callable[[str, int], None]


def said(tries: int) -> bool:
    """Whether the ``tries``-th failure in a row is said: the 1st, 2nd, 4th, 8th... (an outage of minutes is
    a few lines, not one at every try)."""
    return tries & (tries - 1) == 0


class Streak:
    """Failures in a row of one kind of queue call, which may come from several threads. ``on_recovered(action,
    tries)``: told when a call works after ``tries`` failed in a row (the worker says so in a ``recovered``
    line: the error lines stop at a power of two, and silence after them did not say whether the outage was
    over or the worker stuck)."""

    def __init__(self, on_recovered: RecoveryReporter | None = None):
        self._lock = threading.Lock()
        self.count = 0
        self.action = ""  # the call whose failure was the last
        self.on_recovered = on_recovered

    def report(self, on_error: ErrorReporter, action: str, exc: Exception) -> None:
        """One more failure: reported (with how many in a row) if it is one of those ``said``."""
        with self._lock:
            self.count += 1
            tries = self.count
            self.action = action
        if said(tries):
            on_error(action, exc, tries=tries)

    def ended(self) -> None:
        """The call worked: the next failure is the first again."""
        if not self.count:  # every job's claim passes here: no lock while nothing failed
            return
        with self._lock:
            tries, self.count = self.count, 0
        if tries and self.on_recovered is not None:
            self.on_recovered(self.action, tries)


class Held(frozenset):
    """The (id, attempt) pairs a batch write found held. ``unsure``: a try of this write raised first, so a
    pair left out may have been completed by that try (its reply lost) rather than taken back."""

    unsure = False

    @classmethod
    def of(cls, pairs, *, unsure: bool = False) -> Held:
        """From the queue's answer (tuples, or lists over the HTTP API)."""
        held = cls((job_id, attempt) for job_id, attempt in pairs)
        held.unsure = unsure
        return held


class Ledger:
    """The outcome writes of one run of a worker (``start()`` .. ``stop()``): when they stop trying again,
    and which have not been written (under way, or given up). Writes keep the ledger of the run they began
    in, so a restart never lets an old run's retries go on (or be counted) as the new one's."""

    def __init__(self):
        self.lock = threading.Lock()
        self.cutoff: float | None = None  # monotonic time after which no write is tried again
        self._writing: dict[int, list[tuple[int, int]]] = {}  # per write under way: its (id, attempt) pairs
        self._ids = itertools.count()
        self.gave_up = 0  # outcomes whose write was given up
        self._gave_up_keys: list[tuple[int, int]] = []  # the first SHOWN of them, (id, attempt)

    def cut_off(self, at: float) -> None:
        """No write of this run is tried again after ``at`` (a stopping worker's grace)."""
        self.cutoff = at

    def begin(self, keys: list[tuple[int, int]]) -> int:
        with self.lock:
            token = next(self._ids)
            self._writing[token] = keys
        return token

    def end(self, token: int, *, gave_up: bool) -> None:
        with self.lock:
            keys = self._writing.pop(token)
            if gave_up:
                self.gave_up += len(keys)
                self._gave_up_keys += keys[: SHOWN - len(self._gave_up_keys)]

    def unwritten(self) -> tuple[int, list[tuple[int, int]], list[tuple[int, int]]]:
        """(outcomes given up, the first ``SHOWN`` of them, the outcomes whose write is under way), each
        outcome as its job's (id, attempt)."""
        with self.lock:
            return self.gave_up, list(self._gave_up_keys), [key for keys in self._writing.values() for key in keys]


def retrying(
    action: str,
    call: Callable[[], object],
    *,
    patience: float,
    on_error: ErrorReporter,
    ledger: Ledger | None = None,
    failed_before: int = 0,
) -> tuple[object, bool]:
    """``call()``, tried again after errors for up to ``patience`` seconds (and not after ``ledger.cutoff``):
    (its answer or ``GAVE_UP`` when it never worked, whether a try raised first). ``failed_before``: tries of
    the same write that failed (and were reported) before this call, which its reports count on from."""
    give_up_at = time.monotonic() + patience
    wait = ACK_FIRST_WAIT
    tries = failed_before
    while True:
        try:
            return call(), tries > 0
        except Exception as exc:
            tries += 1
            cutoff = None if ledger is None else ledger.cutoff  # read each time: a stop may set it meanwhile
            last = give_up_at if cutoff is None else min(give_up_at, cutoff)
            again = time.monotonic() + wait < last
            if not again or said(tries):
                # The 1st, 2nd, 4th, 8th... failed try and the last: every one (one every ACK_MAX_WAIT for as long
                # as stale_after, per outcome) made an outage of a minute ~50 error lines a worker.
                on_error(action, exc, retrying=again, tries=tries)
            if not again:
                return GAVE_UP, True
            time.sleep(wait)
            wait = min(wait * 2, ACK_MAX_WAIT)


class Acks:
    """The outcome writes of one worker, each fenced by the claim it holds (worker id and attempt)."""

    def __init__(
        self,
        queue: JobQueue,
        worker_id: str,
        *,
        patience: float,
        on_error: ErrorReporter,
        on_recovered: RecoveryReporter | None = None,
    ):
        self.queue = queue
        self.worker_id = worker_id
        self.patience = patience  # stale_after: how long the claim can still be ours
        self.on_error = on_error
        self.ledger = Ledger()
        self.claim_error: Exception | None = None  # what the last claim that failed raised
        self.claims_failed = Streak(on_recovered)  # claims failed in a row, by any slot (``claim_failed``)

    def claim_failed(self, action: str, exc: Exception) -> None:
        """A claim (or the look for a lost claim's jobs that comes before one) raised: reported at the 1st,
        2nd, 4th, 8th... failure in a row of the worker's claims, whichever slot made it. Each idle slot claims
        at every poll wait, so the queue away for a minute was an error line every 5 s per slot (100 a minute
        from an idle --concurrency 8 worker over --api); a claim that works starts the count again."""
        self.claim_error = exc
        self.claims_failed.report(self.on_error, action, exc)

    def begin(self) -> Ledger:
        """A new run's ledger: the writes of the run before keep theirs (and its cutoff)."""
        self.ledger = Ledger()
        return self.ledger

    def fail(self, job: ClaimedJob, error: str, traceback: str | None = None, *, final: bool = False):
        """The job after a failed attempt (pending for a retry, or failed; failed at once when ``final``), None,
        ``UNCONFIRMED`` or ``GAVE_UP``; ``traceback``, the handler's, is kept with the attempt's error."""
        options = {"traceback": traceback, **({"final": True} if final else {})}  # a JobQueue of old: no final
        call = lambda: self.queue.fail(job.id, error, **options, **self._claim(job))  # noqa: E731
        return self._outcome("fail", job, call)

    def release(self, job: ClaimedJob, *, once: bool = False):
        """The job back to pending, None, ``UNCONFIRMED`` or ``GAVE_UP``; ``once``: a single try (a stopping
        worker)."""
        call = lambda: self.queue.release(job.id, **self._claim(job))  # noqa: E731
        answer, raised = retrying(
            "release", call, patience=0.0 if once else self.patience, on_error=self.on_error, ledger=self.ledger
        )
        return UNCONFIRMED if answer is None and raised else answer

    def mark_cancelled(self, job: ClaimedJob):
        """The job ended ``cancelled`` on an operator's request, None if the claim was taken back,
        ``UNCONFIRMED`` or ``GAVE_UP``."""
        return self._outcome("mark_cancelled", job, lambda: self.queue.mark_cancelled(job.id, **self._claim(job)))

    def complete_many(self, items: list[Completion]):
        """Write a batch of completions in one statement: the ``Held`` (id, attempt) of those whose claim was
        still held, or ``GAVE_UP``. Safe to try again: a completed job is no longer held."""
        ledger = self.ledger
        token = ledger.begin(_keys(items))
        done = GAVE_UP
        try:
            done = self._complete_many(items, ledger, unsure=False)
        finally:
            ledger.end(token, gave_up=done is GAVE_UP)
        return done

    def complete_and_claim_many(
        self, items: list[Completion], n: int, types: list[str], queues: list[str] | None
    ) -> tuple[object, list[ClaimedJob], bool]:
        """Write ``items`` and claim up to ``n`` jobs in one transaction: (as ``complete_many``, the jobs
        claimed, the claim worked)."""
        acks = [(entry.job.id, entry.job.attempt, result) for entry, result, _ in items]
        ledger = self.ledger
        token = ledger.begin(_keys(items)) if items else None
        done = GAVE_UP
        try:
            try:
                pairs, jobs = self.queue.complete_and_claim_many(
                    acks, n, types, worker_id=self.worker_id, queues=queues
                )
            except Exception as exc:
                # Not again: had that try committed unseen, another would claim more jobs and orphan these.
                # The completions alone are safe to repeat (and unsure: that try may have written them).
                if not items:
                    self.claim_failed("claim", exc)
                    return Held(), [], False
                self.claim_error = exc
                self.on_error("complete_and_claim", exc, retrying=True)  # each, as the completions' first try
                done = self._complete_many(items, ledger, unsure=True)  # the ledger's end reads it
                return done, [], False
            self.claims_failed.ended()
            done = Held.of(pairs)
            return done, jobs, True
        finally:
            if token is not None:
                ledger.end(token, gave_up=done is GAVE_UP)

    def _complete_many(self, items: list[Completion], ledger: Ledger, *, unsure: bool):
        acks = [(entry.job.id, entry.job.attempt, result) for entry, result, _ in items]
        call = lambda: self.queue.complete_many(acks, worker_id=self.worker_id)  # noqa: E731
        failed = int(unsure)  # the complete-and-claim that raised was this write's first try
        answer, raised = retrying(
            "complete", call, patience=self.patience, on_error=self.on_error, ledger=ledger, failed_before=failed
        )
        if answer is GAVE_UP:
            return GAVE_UP
        return Held.of(answer, unsure=unsure or raised)

    def _claim(self, job: ClaimedJob) -> dict:
        return {"worker_id": self.worker_id, "attempt": job.attempt}

    def _outcome(self, action: str, job: ClaimedJob, call: Callable[[], object]):
        ledger = self.ledger
        token = ledger.begin([(job.id, job.attempt)])
        answer = GAVE_UP
        try:
            answer, raised = retrying(action, call, patience=self.patience, on_error=self.on_error, ledger=ledger)
        finally:
            ledger.end(token, gave_up=answer is GAVE_UP)
        return UNCONFIRMED if answer is None and raised else answer


def _keys(items: list[Completion]) -> list[tuple[int, int]]:
    return [(entry.job.id, entry.job.attempt) for entry, _, _ in items]


class AckBatch:
    """Completions waiting to be written: the next claim takes them along (one transaction), and a flusher
    thread writes what no claim took within ``delay`` seconds, or at once when ``size`` are waiting.

    A crash loses only what waits here (at most ``delay`` seconds of completions); their claims are
    reaped and the jobs run again: at least once, as before. ``flush`` writes what waits (a stopping
    worker's last step before it reports stopped). One batch per run of a worker: once stopped, its
    flusher ends as soon as the write it may be stuck in returns, whatever run comes next.
    """

    def __init__(self, acks: Acks, report: Callable[[list, object], None], *, delay: float, size: int):
        self.acks = acks
        self.report = report  # report(items, done): count and tell what became of each
        self.delay = delay
        self.size = size
        self._ready = threading.Condition(threading.Lock())
        self._items: list[Completion] = []
        self._oldest = 0.0  # monotonic time the first of the waiting completions was added
        self._idle = False  # the flusher sleeps until a completion arrives
        self._stopping = False
        self._sending: list[list[Completion]] = []  # taken by the flusher, not yet reported

    def add(self, item: Completion) -> None:
        """Queue a completion. The flusher is not woken for it: the slot that adds one claims next and
        takes it along, or calls ``nudge`` when it does not (waking a thread per job cost a GIL hand-off,
        14 % of a busy worker's time in py-spy); a full batch wakes it."""
        with self._ready:
            if not self._items:
                self._oldest = time.monotonic()
            self._items.append(item)
            if len(self._items) >= self.size:
                self._ready.notify()

    def nudge(self) -> None:
        """Have the flusher write what waits within ``delay`` (a slot that will not claim next)."""
        with self._ready:
            if self._items and self._idle:
                self._ready.notify()

    def take(self) -> list[Completion]:
        with self._ready:
            items, self._items = self._items, []
        return items

    def waiting(self) -> list[tuple[int, int]]:
        """The (id, attempt) of the completions waiting to be written."""
        with self._ready:
            return _keys(self._items)

    def unwritten(self) -> list[tuple[int, int]]:
        """The (id, attempt) of the completions waiting, or being written by ``flush``: jobs still held."""
        with self._ready:
            return _keys([*self._items, *(item for items in self._sending for item in items)])

    def flush(self) -> None:
        with self._ready:
            items, self._items = self._items, []
            self._sending.append(items)
        try:
            if items:
                self.report(items, self.acks.complete_many(items))
        finally:
            with self._ready:
                self._sending.remove(items)

    def run(self) -> None:
        """The flusher thread: until ``stop()``, write what waited ``delay`` seconds or filled a batch.

        In a busy worker the claims take the completions along first, so this rarely writes: it wakes
        once per ``delay`` at most, and not at all while nothing waits.
        """
        while True:
            with self._ready:
                while not self._stopping:
                    if not self._items:
                        self._idle = True
                        self._ready.wait()
                        self._idle = False
                        continue
                    due = self._oldest + self.delay - time.monotonic()
                    if due <= 0 or len(self._items) >= self.size:
                        break
                    self._ready.wait(due)
                if self._stopping:
                    return
            self.flush()

    def stop(self) -> None:
        """End the flusher thread for good (the caller flushes what is left, once no slot adds more)."""
        with self._ready:
            self._stopping = True
            self._ready.notify_all()
