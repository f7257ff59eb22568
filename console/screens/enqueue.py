"""The enqueue form: type, payload JSON, priority, max_retries and an idempotency key.

The repository validates; its error is shown in the form and nothing is written until the input is valid.
"""

from __future__ import annotations

import json
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical
from textual.suggester import SuggestFromList
from textual.widgets import Button, Input, Label, Select, Static

from queue_core.errors import IdempotencyConflict, ValidationError
from queue_core.store.database import DATABASE_ERRORS
from queue_core.store.models import Priority
from queue_core.store.repository import DEFAULT_MAX_RETRIES

from .dialog import Dialog

PRIORITY_OPTIONS = [(p.name.lower(), p.name.lower()) for p in Priority]


class EnqueueScreen(Dialog):
    """Dismisses with ``(job, created)`` after a successful create, ``None`` on cancel.

    Creates at most one job: once answered, a late Enter does nothing (see ``Dialog``).
    """

    BINDINGS: ClassVar[list[Binding]] = [Binding("escape", "cancel", "Cancel", id="cancel-enqueue")]

    def __init__(self, repo, known_types: list[str]) -> None:
        super().__init__()
        self.repo = repo
        self.known_types = known_types

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="form"):
            yield Static("Enqueue a job", classes="dialog-title")
            with Grid(id="enqueue-fields"):
                yield Label("type")
                yield Input(
                    placeholder="e.g. echo, send-invoice",
                    id="type",
                    suggester=SuggestFromList(self.known_types, case_sensitive=True),
                )
                yield Label("payload")
                yield Input(value="{}", placeholder='JSON object, e.g. {"to": "ann@example.com"}', id="payload")
                yield Label("priority")
                yield Select(PRIORITY_OPTIONS, value="low", allow_blank=False, id="priority")
                yield Label("max retries")
                yield Input(value=str(DEFAULT_MAX_RETRIES), id="max_retries")
                yield Label("idempotency key")
                yield Input(placeholder="optional: the same key never enqueues twice", id="idempotency_key")
            yield Static(id="form-error", classes="form-error")
            with Horizontal(classes="buttons"):
                yield Button("Enqueue", variant="primary", id="submit")
                yield Button("Cancel", id="cancel")
            yield Static("[dim]enter[/] enqueue   [dim]escape[/] cancel   [dim]tab[/] next field", classes="hint")

    def on_mount(self) -> None:
        self.query_one("#type", Input).focus()

    @on(Input.Submitted)
    @on(Button.Pressed, "#submit")
    def submit(self) -> None:
        if self.answered:
            return
        self.clear_error()
        try:
            job, created = self.repo.create(
                self.query_one("#type", Input).value.strip(),
                self.payload(),
                priority=self.query_one("#priority", Select).value,
                max_retries=self.max_retries(),
                idempotency_key=self.query_one("#idempotency_key", Input).value.strip() or None,
            )
        except ValidationError as exc:
            self.show_error(str(exc), exc.field)
        except IdempotencyConflict as exc:
            self.show_error(str(exc), "idempotency_key")
        except DATABASE_ERRORS as exc:  # nothing was written; the form stays, so the operator can try again
            self.show_error(f"database error: {exc}", "type")
        else:
            self.answer((job, created))

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.answer(None)

    def payload(self):
        text = self.query_one("#payload", Input).value.strip() or "{}"
        try:
            return json.loads(text)
        except ValueError as exc:
            raise ValidationError("payload", f'not valid JSON ({exc}); e.g. {{"to": "ann@example.com"}}') from None

    def max_retries(self):
        text = self.query_one("#max_retries", Input).value.strip()
        try:
            return int(text)
        except ValueError:  # not a number ("--1", "²", "three"): the repository's error says what it accepts
            return text

    def show_error(self, message: str, field: str) -> None:
        # The message quotes what was typed ("[/x" in max retries): text, never markup.
        self.query_one("#form-error", Static).update(Text.assemble(("✗", "bold"), " ", message))
        for widget in self.query(f"#{field}"):
            widget.add_class("-invalid")
            widget.focus()

    def clear_error(self) -> None:
        self.query_one("#form-error", Static).update("")
        for widget in self.query(".-invalid"):
            widget.remove_class("-invalid")
