"""Jobs a claim took for this worker though its reply was lost: found and given back.

A claim that raises may have committed (the connection dropped between COMMIT and its reply): its jobs are
then running for this worker, which does not know them. Nothing heartbeats them and nothing runs them; the
reaper would take them back counting a retry, so a job without retries left would end failed without having
run. After such an error the next claim of the worker (or its stop) first asks the queue which jobs the
worker holds and releases those it does not track, back to pending without counting a retry.

That is done while no claim of this worker is under way, and no claim starts meanwhile (``Session.recovering``
holds them back): every job a claim that worked took is then tracked (``Session.running``, from its
registration until its outcome is written), so only the jobs of claims whose reply was lost are released.
The queue names only the claims made since this worker registered (``held_claims``): the jobs of an earlier
run under the same worker id, which crashed, are left to the reaper, which counts their retry.
"""

from __future__ import annotations

from .acks import ErrorReporter
from .events import EventHub
from .protocol import JobQueue
from .session import Session

NOTE = "back to pending, no retry counted: a claim took it for this worker, but its reply was lost to an error"


class Orphans:
    """Releases the jobs of a worker's claims whose reply was lost (``recover``)."""

    def __init__(self, queue: JobQueue, worker_id: str, *, events: EventHub, on_error: ErrorReporter, lock):
        self.queue = queue
        self.worker_id = worker_id
        self._events = events
        self._on_error = on_error
        self._lock = lock  # the worker's: it guards the session's claims and running jobs

    def recover(self, session: Session, *, on_look_error: ErrorReporter | None = None) -> Exception | None:
        """After a claim raised (``session.orphans``) and while no claim is under way: release the jobs the
        queue says this worker holds that it does not track. Tried again at the next claim if it fails; what
        the queue raised then is returned (reported already, the look's through ``on_look_error`` if given),
        so that the caller does not claim too."""
        if not session.orphans:
            # Every claim comes here, and almost never with anything to do: the flag is read without the lock
            # (it is only set under it, and looked at again under it below). A claim whose error sets it while
            # this reads it is as if it had raised a moment later: the next claim recovers.
            return None
        with self._lock:
            if not session.orphans or session.recovering or session.claiming:
                return None
            session.recovering = True  # no claim starts until this is over
            known = self._tracked(session)
        try:
            look = lambda: self.queue.held_claims(self.worker_id)  # noqa: E731
            failed, held = self._call("held_claims", look, on_look_error)
            if failed is not None:
                return failed
            with self._lock:
                known |= self._tracked(session)  # a completion taken by the flusher since is tracked by then
            for job_id, attempt in held:
                if (job_id, attempt) in known:
                    continue
                failed, job = self._call("release", lambda j=job_id, a=attempt: self._release(j, a))
                if failed is not None:
                    return failed  # the database is away again: the next claim tries again
                if job is not None:  # None: finished or taken back meanwhile
                    self._events.emit("released", job, note=NOTE)
            session.orphans = False
            return None
        finally:
            with self._lock:
                session.recovering = False
                held_back, session.held_back = session.held_back, set()
            # The slots this recovery held back claim now if it was done, else after their poll wait. Woken
            # after a failure (and the slot that ran it with them), each went straight back to a claim that
            # failed and a recovery that woke them again: with the database away, thousands of claims and
            # error lines a second until it came back.
            if not session.orphans:
                for slot in held_back:
                    session.slot_wakes[slot].set()

    def _release(self, job_id: int, attempt: int):
        return self.queue.release(job_id, worker_id=self.worker_id, attempt=attempt)

    def _tracked(self, session: Session) -> set[tuple[int, int]]:
        """The (id, attempt) of the jobs this worker knows it holds (caller holds the lock): running, or their
        outcome not yet written."""
        _, gave_up, writing = session.ledger.unwritten()
        return {*session.running, *session.batch.unwritten(), *writing, *gave_up}

    def _call(self, action: str, call, on_error: ErrorReporter | None = None) -> tuple[Exception | None, object]:
        """(None, the answer of ``call()``), or (what it raised, None); an error is reported."""
        try:
            return None, call()
        except Exception as exc:
            (on_error or self._on_error)(action, exc)
            return exc, None
