"""The worker pane's line for each event: a job's events from their fields and note, not the log's key=value line."""

from __future__ import annotations

from console.widgets.worker.pane import describe
from queue_core.worker.events import EventHub


class Job:
    id, type, attempt = 37, "sleep", 1


def event_of(kind: str, **fields):
    events = []
    hub = EventHub("w1")
    hub.subscribe(events.append)
    hub.emit(kind, **fields)
    return events[0]


def test_a_lost_job_reads_as_its_fields_and_why_not_the_log_line():
    event = event_of("lost", job=Job(), note="its claim was taken back while it ran")
    assert event.message.startswith("lost job=37 type=sleep")  # the log's line, which the pane showed after "lost"
    assert describe(event) == "job 37 sleep · attempt 1 · its claim was taken back while it ran"


def test_a_failed_attempt_says_when_it_is_retried():
    event = event_of("failed", job=Job(), duration=0.5, error="boom", note="retry 1/3 at 12:00:01.000")
    assert describe(event) == "job 37 sleep · attempt 1 · 0.50s · boom · retry 1/3 at 12:00:01.000"


def test_an_event_of_no_job_is_the_workers_own_words():
    event = event_of("stopped", message="stopped worker=w1 completed=3 failed=0")
    assert describe(event) == "stopped worker=w1 completed=3 failed=0"
