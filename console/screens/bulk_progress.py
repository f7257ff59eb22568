"""A bulk action under way: a progress bar over its batches; ``escape`` stops after the current batch."""

from __future__ import annotations

import threading
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import ProgressBar, Static

from .dialog import Dialog

PROGRESSIVE = {"retry": "Retrying", "cancel": "Cancelling", "delete": "Deleting"}


class BulkProgressScreen(Dialog):
    """Closed by the app when the action is done (``answer``); escape only asks it to stop."""

    BINDINGS: ClassVar[list[Binding]] = [
        Binding("escape", "stop", "Stop", id="bulk-stop", tooltip="stop after the current batch")
    ]

    def __init__(self, plan, stop: threading.Event) -> None:
        super().__init__(id="bulk-progress")
        self.plan = plan
        self.stop = stop

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="confirm"):
            # Text, not markup: the description quotes the query ("type:[/]oops" crashed the console).
            yield Static(Text(f"{PROGRESSIVE[self.plan.action]} {self.plan.describe()}"), classes="dialog-title")
            yield ProgressBar(total=self.plan.count, show_eta=False, id="bulk-bar")
            yield Static("", id="bulk-counts", classes="explanation")
            yield Static("[b]escape[/] stop after this batch", id="bulk-hint", classes="hint")

    def show_progress(self, progress) -> None:
        self.query_one(ProgressBar).update(progress=progress.done)
        skipped = f", {progress.skipped:,} skipped (changed meanwhile)" if progress.skipped else ""
        self.query_one("#bulk-counts", Static).update(f"{progress.done:,} of {progress.planned:,} done{skipped}")

    def action_stop(self) -> None:
        self.stop.set()
        self.query_one("#bulk-hint", Static).update("stopping after this batch…")
