"""Time for the queue: the host's UTC clock, and a clock that moves only when told to."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

# What a repository, a worker pane or a test takes as its clock: a call that returns an aware UTC time.
Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


class ManualClock:
    """A clock that moves only when told to: tests, demos and screenshots need times that never drift."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float = 0, **kwargs) -> datetime:
        self.now += timedelta(seconds=seconds, **kwargs)
        return self.now
