"""The embedded worker's pane: its state and counters, and a scrolling log of its job events.

Worker threads never touch widgets: they post ``WorkerEventReceived`` (thread-safe) and the pane
renders it on the UI thread.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from rich.text import Text
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static

from ...formatting import one_line, time_of_day
from ...messages import WorkerEventReceived
from .event_log import EventLog

KIND_STYLES = {
    "started": "bold green",
    "claimed": "cyan",
    "completed": "green",
    "failed": "red",
    "released": "yellow",
    "lost": "magenta",
    "reaped": "magenta",
    "error": "bold red",
    "stopped": "bold yellow",
}
LOG_LINES = 1000
NOTE_CHARS = 300  # a log line is one screen line; the detail view has the whole error


class WorkerPane(Vertical):
    def __init__(self, clock: Callable[[], datetime], **kwargs) -> None:
        super().__init__(**kwargs)
        self.clock = clock
        self.worker = None
        self.state = "stopped"
        self.border_title = "Worker"

    def compose(self):
        yield Static(id="worker-state")
        log = EventLog(id="worker-log", max_lines=LOG_LINES)
        log.can_focus = False  # tab moves between the job tables
        yield log

    def on_mount(self) -> None:
        self.show_state()

    def on_resize(self) -> None:
        self.show_state()  # what comes first on the state line depends on its width

    def set_state(self, state: str, worker=None) -> None:
        """``state``: stopped, running or stopping; ``worker`` is the one to read counters from."""
        self.state = state
        if worker is not None:
            self.worker = worker
        self.set_class(state != "stopped" or self.worker is not None, "-active")
        self.set_class(state == "running", "-running")
        self.show_state()

    def show_state(self) -> None:
        state = self.query_one("#worker-state", Static)
        if self.worker is None:
            if getattr(self.app, "read_only", False):  # console.read_only: a worker writes, so there is none
                state.update("[dim]○ stopped[/]  read-only: the embedded worker cannot start")
                return
            state.update("[dim]○ stopped[/]  press [b]w[/] to run jobs in this console with the embedded worker")
            return
        stats = self.worker.stats
        marks = {"running": ("● running", "bold green"), "stopping": ("◐ stopping…", "bold yellow")}
        # Content, not markup: the worker id comes from --worker-id ("web[/1" is a name, not a tag).
        mark = Content.assemble(marks.get(self.state, ("○ stopped", "dim")), "  ")
        name = Content.assemble(
            "id ", (self.worker.worker_id, "bold"), "  concurrency ", (str(self.worker.concurrency), "bold")
        )
        counters = Content.assemble(
            ("done", "green"),
            " ",
            (str(stats.completed), "bold"),
            "  ",
            ("failed", "red"),
            " ",
            (str(stats.failed), "bold"),
            "  ",
            ("running", "cyan"),
            " ",
            (str(stats.running), "bold"),
        )
        line = Content.assemble(mark, name, "  │  ", counters)
        if line.cell_length > state.content_size.width > 0:
            # Too narrow (60 columns): the counters first, the id cut ("…", console.tcss) rather than them.
            line = Content.assemble(mark, counters, "  │  ", name)
        state.update(line)

    def replay(self, worker, events) -> None:
        """Show a run that already happened (``console.demo.replay_worker_run``): pictures and tests."""
        self.set_state("running", worker)
        for event in events:
            self.log_event(event)
        self.show_state()

    def on_worker_event_received(self, message: WorkerEventReceived) -> None:
        # Not stopped: it bubbles on to the app, which refreshes the tables soon after a worker event.
        self.log_event(message.event)
        self.show_state()

    def log_event(self, event) -> None:
        style = KIND_STYLES.get(event.kind, "")
        when = (time_of_day(self.clock()), "dim")
        line = Text.assemble(when, " ", (f"{event.kind:<10}", style), " ", describe(event))
        self.query_one("#worker-log", EventLog).add(line)


# Job events read better as "job 7 echo · attempt 1 · 0.01s"; the rest carry a note only the message has.
JOB_EVENTS = ("claimed", "completed", "failed")


def describe(event) -> str:
    """One line for the log: a job's events from their fields and note, the others in the worker's words.

    Plain text (the log shows it as text), cut to ``NOTE_CHARS``.
    """
    if event.kind not in JOB_EVENTS and event.job_id is None and event.message:
        return one_line(event.message, NOTE_CHARS)
    parts = []
    if event.job_id is not None:
        parts.append(f"job {event.job_id}")
    if event.job_type:
        parts[-1:] = [f"{parts[-1]} {event.job_type}"] if parts else [event.job_type]
    if event.attempt is not None:
        parts.append(f"attempt {event.attempt}")
    if event.duration is not None:
        parts.append(f"{event.duration:.2f}s")
    if event.error:
        parts.append(one_line(event.error, NOTE_CHARS))
    if event.note:
        parts.append(one_line(event.note, NOTE_CHARS))
    return " · ".join(parts)
