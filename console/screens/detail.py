"""Everything about one job: its fields, the payload pretty-printed, and every attempt's error."""

from __future__ import annotations

import json
from typing import ClassVar

from rich.markup import escape
from rich.syntax import Syntax
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ..formatting import timestamp


class JobDetailScreen(ModalScreen):
    BINDINGS: ClassVar[list[Binding]] = [
        Binding("escape,q,enter", "close", "Close", id="close-detail"),
    ]

    def __init__(self, job, errors: list) -> None:
        super().__init__()
        self.job = job
        self.errors = errors

    def compose(self) -> ComposeResult:
        job = self.job
        with VerticalScroll(id="dialog", classes="detail") as scroll:
            scroll.border_title = f"Job {job.id}"
            yield Static(
                f"[b]{escape(job.type)}[/]  ·  [b]{job.status}[/]  ·  {job.priority_label} ({job.priority})"
                f"  ·  retries {job.retry_count}/{job.max_retries}",
                classes="dialog-title",
            )
            yield Static(self.fields(), classes="fields")
            yield Static("Payload", classes="section")
            yield Static(Syntax(json.dumps(job.payload, indent=2, sort_keys=True), "json", theme="ansi_dark"))
            yield Static(f"Errors ({len(self.errors)} failed attempts)", classes="section")
            yield Static(self.error_history(), classes="errors")
            yield Static("[dim]escape[/] close", classes="hint")

    def fields(self) -> str:
        job = self.job
        rows = [
            ("worker", job.worker_id or "—"),
            ("idempotency key", job.idempotency_key or "—"),
            ("created", timestamp(job.created_at)),
            ("updated", timestamp(job.updated_at)),
            ("run at", timestamp(job.run_at)),
            ("claimed", timestamp(job.claimed_at)),
            ("heartbeat", timestamp(job.heartbeat_at)),
        ]
        return "\n".join(f"[dim]{name:>16}[/]  {escape(str(value))}" for name, value in rows)

    def error_history(self) -> str:
        if not self.errors:
            return "[dim]none: this job has not failed[/]"
        return "\n\n".join(
            f"[b red]attempt {error.attempt}[/]  [dim]{timestamp(error.created_at)}"
            f"  worker {escape(error.worker_id or '—')}[/]\n{escape(error.error)}"
            for error in self.errors
        )

    def action_close(self) -> None:
        self.dismiss(None)
