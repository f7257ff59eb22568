"""The guide's rules for a job's life, as pure functions: statuses, retries, back-off and staleness.

No database here: ``store.repository`` applies these rules in its statements, and the worker, the API and
the console read them from here to agree with it (the console's stale marker is ``is_stale``, the same
test ``JobRepository.reap_stale`` runs in SQL).
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Protocol

# Plain strings, not an enum: database drivers differ in how they send enum members.
PENDING = "pending"
RUNNING = "running"
COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"
# Statuses a job never leaves by itself: only an operator retry (failed, cancelled) brings it back.
FINAL = (COMPLETED, FAILED, CANCELLED)
DEFAULT_QUEUE = "default"

# A worker's state in the registry (JobRepository.workers).
WORKER_RUNNING = "running"
WORKER_STOPPED = "stopped"
WORKER_LOST = "lost"

DEFAULT_MAX_RETRIES = 3
# Retry back-off: delay = min(max(CAP, base), base * 2**retry_count), then "equal jitter" (a random point
# in the upper half) so that jobs failing together do not come back together. base is the job's
# ``retry_backoff`` or DEFAULT_BACKOFF_BASE; 0 retries at once, as the guide does. A base above the cap is
# its own cap: retry_backoff=86400 waits about a day each time, not the cap's hour.
DEFAULT_BACKOFF_BASE = 2.0
BACKOFF_CAP = 3600.0


class Attempted(Protocol):
    """What the retry rule reads of a job (a ``Job`` row, or any object with these attributes)."""

    retry_count: int
    max_retries: int


class Claimed(Protocol):
    """What the staleness rule reads of a running job."""

    claimed_at: datetime | None
    heartbeat_at: datetime | None


def has_retries_left(job: Attempted) -> bool:
    """Whether a failed attempt of this job sends it back to pending (else it fails for good)."""
    return job.retry_count < job.max_retries


def backoff_delay(retry_count: int, base: float | None, rng: random.Random) -> float:
    """Seconds to wait before retry number ``retry_count + 1``."""
    base = DEFAULT_BACKOFF_BASE if base is None else base
    if base <= 0:
        return 0.0
    delay = min(max(BACKOFF_CAP, base), base * 2 ** min(retry_count, 64))
    return delay / 2 + rng.uniform(0, delay / 2)


def cutoff_before(now: datetime, age: timedelta) -> datetime:
    """``now - age``, clamped to the earliest representable time (nothing is older than that)."""
    try:
        return now - age
    except OverflowError:
        return datetime.min.replace(tzinfo=UTC)


def last_sign_of_life(job: Claimed) -> datetime:
    """When a running job last showed it is alive: its heartbeat, or its claim if it has none yet."""
    return job.heartbeat_at or job.claimed_at


def is_stale(job: Claimed, now: datetime, older_than: timedelta) -> bool:
    """Whether ``reap_stale(older_than)`` at ``now`` would take this running job back (the rule its query
    applies in SQL), for rows already read, e.g. the console's stale marker."""
    return last_sign_of_life(job) < cutoff_before(now, older_than)


def worker_state(stopped_at: datetime | None, last_seen_at: datetime, stale_after: float, now: datetime) -> str:
    """``stopped`` after a clean stop; ``lost`` when not seen for longer than the worker's own ``stale_after``
    seconds (it died, or hangs: the reaper takes its jobs back); else ``running``."""
    if stopped_at is not None:
        return WORKER_STOPPED
    if (now - last_seen_at).total_seconds() > stale_after:
        return WORKER_LOST
    return WORKER_RUNNING
