"""Handing a claim's jobs to slots without waking them, while jobs are short.

A claim for k idle slots hands k-1 of its jobs to other slots (``Slots.claim``), and so far it woke the
first of them at once. With jobs shorter than a thread's wake-up that wake is wasted: the claiming slot
runs its own job and takes over the others (``Session.steal_mail``) before the woken thread runs, which
then finds nothing, and on a 2-vCPU virtual machine each such wake (another CPU leaving idle, a GIL
hand-off) cost a four-slot SQLite worker ~25 % of its drain of no-op jobs (``python -m tests.bench.ab``).

So a claim made right after a job that ran under ``DELAY`` hands its jobs without a wake, and this
thread wakes the first slot whose job is still waiting after ``DELAY`` (the claiming slot's own job ran
long this time; that slot then wakes the next, as a woken slot always does). A job handed so starts at
most ~2 x ``DELAY`` later than at once, and only when the job before it on the claiming slot was short.
The thread polls every ``DELAY`` while such jobs were handed in the last ``LINGER`` seconds (a drain of
short jobs), and sleeps otherwise: an idle worker, or one running long jobs, never wakes it.
"""

from __future__ import annotations

import threading
import time

DELAY = 0.001  # seconds a job handed without a wake may wait for its slot before the slot is woken
LINGER = 0.05  # seconds of polling after the last such job, before the thread sleeps until the next


class Dispatcher:
    """Wakes the slots whose handed jobs wait too long; one per run of a worker with slots that share queues.

    ``hand`` and ``tick`` are called with the session's lock held.
    """

    def __init__(self, session):
        self.session = session  # worker.session.Session (its mail, slot wakes, lock and stopping event)
        self.kick = threading.Event()  # set by ``hand`` when the thread sleeps, and by a stop
        self.asleep = True
        self.handed: dict[int, float] = {}  # slot -> monotonic time a job was handed to it without a wake
        self.last = 0.0  # monotonic time a handed job was last seen waiting

    def hand(self, slots: list[int], now: float) -> None:
        """Jobs were just handed to ``slots`` without waking them."""
        for slot in slots:
            self.handed[slot] = now
        self.last = now
        if self.asleep:
            self.asleep = False
            self.kick.set()

    def tick(self, now: float) -> bool:
        """Wake the first slot whose job has waited ``DELAY``; False once nothing was handed for ``LINGER``."""
        mail = self.session.mail
        for slot in [slot for slot in self.handed if slot not in mail]:
            del self.handed[slot]  # taken by its slot, or taken over by one that was free first
        due = next((slot for slot, since in self.handed.items() if now - since >= DELAY), None)
        if due is not None:
            del self.handed[due]
            self.session.slot_wakes[due].set()
        if self.handed:
            self.last = now
        elif now - self.last >= LINGER:
            self.asleep = True
        return not self.asleep

    def run(self) -> None:
        """The thread: sleep until jobs are handed, then poll every ``DELAY`` until ``tick`` says enough."""
        session = self.session
        while not session.stopping.is_set():
            self.kick.wait()
            self.kick.clear()
            while not session.stopping.wait(DELAY):
                with session.lock:
                    if not self.tick(time.monotonic()):
                        break
