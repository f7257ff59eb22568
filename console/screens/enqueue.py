"""The enqueue form: type, payload JSON, queue, delay, priority, max_retries and an idempotency key.

The input is checked on the UI thread with the repository's own rules (pure functions, no database), so a
typo is answered at once; the job is then written on a thread worker, and the form stays open, showing any
error the repository or the database gives, until the write's answer arrives.
"""

from __future__ import annotations

import json
import math
import re
from datetime import timedelta
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, VerticalScroll
from textual.suggester import SuggestFromList
from textual.widgets import Button, Input, Label, Select, Static

from queue_core.cli.args import whole_number
from queue_core.errors import IdempotencyConflict, ValidationError
from queue_core.rules import DEFAULT_MAX_RETRIES
from queue_core.store.database import DATABASE_ERRORS
from queue_core.store.models import Priority, parse_priority
from queue_core.validation import (
    MAX_RETRIES_LIMIT,
    encode_payload,
    validate_idempotency_key,
    validate_max_retries,
    validate_new_queue_name,
    validate_type,
)

from ..formatting import write_error
from ..messages import EnqueueRefused, JobEnqueued
from .dialog import Dialog

PRIORITY_OPTIONS = [(p.name.lower(), p.name.lower()) for p in Priority]
DELAY_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_DELAY = timedelta(days=3650)
# ASCII digits, an optional fraction: float() alone also reads "１" (full-width), "1_0" and "1e3".
DELAY_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")


def parse_delay(text: str) -> timedelta | None:
    """``""`` -> None (run now); ``"90"``, ``"90s"``, ``"5m"``, ``"2h"``, ``"1d"`` -> that long from now."""
    text = text.strip().lower()
    if not text:
        return None
    unit = DELAY_UNITS.get(text[-1])
    number = text[:-1].rstrip() if unit else text
    seconds = float(number) * (unit or 1) if DELAY_NUMBER.fullmatch(number) else math.nan
    if not math.isfinite(seconds) or seconds < 0 or seconds > MAX_DELAY.total_seconds():
        raise ValidationError("delay", f"{text!r} is not a delay; use seconds or 90s, 5m, 2h, 1d (up to 10 years)")
    return timedelta(seconds=seconds)


class EnqueueScreen(Dialog):
    """Dismisses with ``(job, created)`` after a successful create, ``None`` on cancel.

    Creates at most one job: while its write is on the way, and once answered, a late Enter does nothing.
    """

    BINDINGS: ClassVar[list[Binding]] = [
        Binding("escape", "cancel", "Cancel", id="cancel-enqueue", tooltip="close it, write nothing")
    ]

    def __init__(self, repo, known_types: list[str]) -> None:
        super().__init__()
        self.repo = repo
        self.known_types = known_types
        self.writing = False  # a create is on its thread; the form waits for its answer

    def compose(self) -> ComposeResult:
        # Scrolls when the terminal is short (80x24 showed the fields down to the idempotency key only, and
        # neither the buttons nor an error line): tab scrolls to the field it focuses.
        with VerticalScroll(id="dialog", classes="form"):
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
                yield Label("queue")
                yield Input(value="default", id="queue")
                yield Label("delay")
                yield Input(placeholder="optional: run later, e.g. 90s, 5m, 2h", id="delay")
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
        if self.answered or self.writing:
            return
        self.clear_error()
        try:
            request = self.request()
        except ValidationError as exc:
            self.show_error(str(exc), exc.field)
            return
        self.writing = True
        self.show_note("enqueueing…")
        self.create(request)

    def request(self) -> dict:
        """The fields as ``create``'s arguments, checked as the repository checks them, in its order (its
        first complaint is the one shown); the repository checks again when it writes and is the authority."""
        request = {
            "type": self.query_one("#type", Input).value.strip(),
            "payload": self.payload(),
            "queue": self.query_one("#queue", Input).value.strip(),
            "delay": parse_delay(self.query_one("#delay", Input).value),
            "priority": self.query_one("#priority", Select).value,
            "max_retries": self.max_retries(),
            "idempotency_key": self.query_one("#idempotency_key", Input).value.strip() or None,
        }
        validate_type(request["type"])
        encode_payload(request["payload"])
        validate_new_queue_name(request["queue"])
        parse_priority(request["priority"])
        validate_max_retries(request["max_retries"])
        validate_idempotency_key(request["idempotency_key"])
        return request

    @work(thread=True, group="enqueue")
    def create(self, request: dict) -> None:
        # On the worker thread: only post. Any other exception is a bug and crashes the app, as before.
        try:
            with self.repo.db.connection_context():
                delay = request.pop("delay")
                # The queue's clock (the database's on PostgreSQL), read here on the thread, never on the UI's.
                run_at = None if delay is None else self.repo.now() + delay
                job, created = self.repo.create(**request, run_at=run_at)
        except ValidationError as exc:
            self.post_message(EnqueueRefused(str(exc), exc.field))
        except IdempotencyConflict as exc:
            self.post_message(EnqueueRefused(str(exc), "idempotency_key"))
        except DATABASE_ERRORS as exc:  # nothing was written; the form stays, so the operator can try again
            self.post_message(EnqueueRefused(f"database error: {write_error(exc)}", "type"))
        else:
            self.post_message(JobEnqueued(job, created))

    def on_job_enqueued(self, message: JobEnqueued) -> None:
        message.stop()  # the form's own answer; the app hears of it through the dismiss callback
        self.answer((message.job, message.created))

    def on_enqueue_refused(self, message: EnqueueRefused) -> None:
        message.stop()
        self.writing = False
        self.show_error(message.error, message.field)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        if self.writing:  # closing now would hide whether the job was written: wait for the answer
            self.show_note("still enqueueing: the form closes when the database answers")
            return
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
            return whole_number(text)
        except ValueError:
            pass
        try:
            int(text)
        except ValueError:  # not a number ("--1", "²", "three"): the repository's error says what it accepts
            return text
        # int() reads it ("１", "1_000", "+3"), the admin CLI does not: refused, not read as a number never typed
        raise ValidationError(
            "max_retries", f"must be a whole number from 0 to {MAX_RETRIES_LIMIT} in ASCII digits, got {text!r}"
        )

    def show_error(self, message: str, field: str) -> None:
        # The message quotes what was typed ("[/x" in max retries): text, never markup.
        line = self.query_one("#form-error", Static)
        line.update(Text.assemble(("✗", "bold"), " ", message))
        line.remove_class("-waiting")
        for widget in self.query(f"#{field}"):
            widget.add_class("-invalid")
            widget.focus()
        line.scroll_visible()  # on a short terminal the error line is below the fold

    def show_note(self, message: str) -> None:
        """Not an error: the write is on its way (the line the error would take)."""
        line = self.query_one("#form-error", Static)
        line.update(Text(message))
        line.add_class("-waiting")

    def clear_error(self) -> None:
        line = self.query_one("#form-error", Static)
        line.update("")
        line.remove_class("-waiting")
        for widget in self.query(".-invalid"):
            widget.remove_class("-invalid")
