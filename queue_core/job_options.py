"""Job options that the task API and the scheduler take: validated where the developer writes them.

Every option is a keyword of ``create`` (``JobRepository``'s and ``HttpQueue``'s alike), passed as it is.
"""

from __future__ import annotations

from collections.abc import Mapping

from .errors import ValidationError
from .store.models import parse_priority
from .validation import validate_max_retries, validate_new_queue_name, validate_retry_backoff, validate_timeout

# Options a task or a schedule may set as defaults and an enqueue may override. None means "not set": the
# repository's default applies (priority 0, 3 retries, the default queue, no timeout, the default back-off).
JOB_OPTIONS = ("priority", "max_retries", "queue", "timeout", "retry_backoff")


_VALIDATORS = {
    "priority": parse_priority,
    "max_retries": validate_max_retries,
    "queue": validate_new_queue_name,
    "timeout": validate_timeout,
    "retry_backoff": validate_retry_backoff,
}


def validate_job_options(options: Mapping) -> dict:
    """The options that are set (not None), checked and normalised (priority labels become integers).

    Every name must be one of JOB_OPTIONS.
    """
    unknown = sorted(set(options) - set(JOB_OPTIONS))
    if unknown:
        raise ValidationError(unknown[0], f"unknown job option; the options are {', '.join(JOB_OPTIONS)}")
    return {name: _VALIDATORS[name](value) for name, value in options.items() if value is not None}
