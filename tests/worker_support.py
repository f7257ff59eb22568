"""What worker tests share: a recorder of a worker's events (its fixtures live in conftest.py)."""

from __future__ import annotations

import threading

from queue_core.worker import WorkerEvent

WAIT = 20  # seconds a test waits for something that should take milliseconds; only a guard against hangs


class Recorder:
    """Collects events; ``wait_for`` blocks until one of a kind (matching ``where``) arrived."""

    def __init__(self):
        self.events: list[WorkerEvent] = []
        self.changed = threading.Condition()

    def __call__(self, event: WorkerEvent) -> None:
        with self.changed:
            self.events.append(event)
            self.changed.notify_all()

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]

    def of(self, kind: str) -> list[WorkerEvent]:
        return [e for e in self.events if e.kind == kind]

    def wait_for(self, kind: str, count: int = 1, *, timeout: float = WAIT) -> list[WorkerEvent]:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.of(kind)) >= count, timeout), (kind, self.kinds())
        return self.of(kind)
