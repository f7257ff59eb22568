"""The worker's settings: one table of defaults, and the checks every setting passes.

The ``Worker`` signature, the headless CLI's flags and the console's options all read ``DEFAULTS``, so a
default changed here changes everywhere at once (the console and the workers must agree on what "stale"
means). This module imports nothing from the worker, so the CLI and the console can read it cheaply.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ValidationError
from ..validation import validate_queue_name

MAX_CONCURRENCY = 256
MAX_PROCESSES = 256  # --processes


@dataclass(frozen=True)
class WorkerDefaults:
    concurrency: int = 1  # claim threads, one job each
    poll_interval: float = 0.5  # seconds: the first wait after an empty claim
    # Seconds: idle waits double up to this; None: IDLE_CEILING, or poll_interval when that is longer (a long
    # poll interval alone is not an error). Given below poll_interval, it is refused (``idle_ceiling``).
    max_poll_interval: float | None = None
    stale_after: float = 300.0  # seconds without a heartbeat before a claim is reaped
    shutdown_timeout: float = 30.0  # seconds running jobs get to finish on a stop
    prune_after: float | None = None  # seconds after which finished jobs are deleted; None keeps them
    # Slots per named queue ({"mail": 2, "default": 4}); None: every queue shares ``concurrency`` slots.
    queues: dict[str, int] | None = None
    # Seconds a completion may wait to be written with others (one statement per batch); a crash loses at
    # most these, and their jobs run again. 0: each is written as soon as its slot is done. At most
    # ``stale_after * ACK_DELAY_SHARE`` (``check_ack_delay``). Also how long a slot waits, after a job
    # shorter than this, for the other slots' short jobs to end so that one claim serves them all.
    ack_delay: float = 0.005


DEFAULTS = WorkerDefaults()

# The idle back-off's ceiling when none is given (seconds), unless poll_interval is longer.
IDLE_CEILING = 5.0

# The largest ack delay, as a share of stale_after. A completion waiting in the batch is no longer
# heartbeated, and the job's last beat may be a heartbeat interval (up to stale_after / 3) old: a delay at or
# above stale_after would let the reaper take a finished job back and run it again. Half leaves at least
# stale_after / 6 for the write itself.
ACK_DELAY_SHARE = 0.5


def check_ack_delay(
    ack_delay: float, stale_after: float, *, names: tuple[str, str] = ("ack_delay", "stale_after")
) -> float:
    """``ack_delay``, checked: a ``ValidationError`` naming ``names[0]`` unless it is at most
    ``stale_after * ACK_DELAY_SHARE``."""
    if ack_delay > stale_after * ACK_DELAY_SHARE:
        delay, stale = names
        limit = stale_after * ACK_DELAY_SHARE
        raise ValidationError(
            delay,
            f"{ack_delay:g}s is more than half of {stale} ({stale_after:g}s): a finished job whose completion "
            f"waits that long to be written could be reaped as stale and run again; give {delay} at most "
            f"{limit:g}s, or a longer {stale}",
        )
    return ack_delay


def idle_ceiling(
    poll_interval: float,
    max_poll_interval: float | None,
    *,
    names: tuple[str, str] = ("poll_interval", "max_poll_interval"),
) -> float:
    """The longest idle wait: ``max_poll_interval``, or when None the longer of ``IDLE_CEILING`` and
    ``poll_interval``; a ``ValidationError`` naming ``names[1]`` if it is given below ``poll_interval``, where
    the back-off would start above its ceiling and one of the two settings would be silently ignored."""
    if max_poll_interval is None:
        return max(IDLE_CEILING, poll_interval)
    if max_poll_interval < poll_interval:
        first, longest = names
        raise ValidationError(
            longest,
            f"{max_poll_interval:g}s is shorter than {first} ({poll_interval:g}s), the first idle wait it caps; "
            f"give {longest} at least {poll_interval:g}s (or leave it out), or a {first} of at most "
            f"{max_poll_interval:g}s",
        )
    return max_poll_interval


def positive_seconds(field: str, value, *, allow_zero: bool = False) -> float:
    """``value`` as float seconds, or a ``ValidationError`` naming ``field`` (bools, NaN and inf are refused)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationError(field, f"must be a finite number of seconds, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValidationError(field, f"must be {'>= 0' if allow_zero else '> 0'} seconds, got {value!r}")
    return float(value)


def valid_queue_slots(value) -> dict[str, int] | None:
    """``{queue name: slots}`` checked (names as ``validate_queue_name``, slots as ``concurrency``), or None."""
    if value is None:
        return None
    if not isinstance(value, dict) or not value:
        raise ValidationError("queues", f"must be a non-empty mapping of queue name to slots, got {value!r}")
    slots = {validate_queue_name(name): _slots(name, count) for name, count in value.items()}
    if sum(slots.values()) > MAX_CONCURRENCY:
        raise ValidationError("queues", f"at most {MAX_CONCURRENCY} slots in all, got {sum(slots.values())}")
    return slots


def _slots(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_CONCURRENCY:
        raise ValidationError("queues", f"slots of {name!r} must be from 1 to {MAX_CONCURRENCY}, got {value!r}")
    return value


def valid_concurrency(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_CONCURRENCY:
        raise ValidationError("concurrency", f"must be an integer from 1 to {MAX_CONCURRENCY}, got {value!r}")
    return value


def valid_slots(queues, concurrency) -> tuple[dict[str, int] | None, int]:
    """(queues, concurrency) checked: with ``queues`` the slots are theirs, and ``concurrency`` their sum."""
    queues, count = valid_queue_slots(queues), valid_concurrency(concurrency)
    if queues is None:
        return None, count
    total = sum(queues.values())
    if count not in (DEFAULTS.concurrency, total):
        raise ValidationError("queues", f"with queues the slots are theirs; concurrency={concurrency} too")
    return queues, total
