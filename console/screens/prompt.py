"""A one-line question in a modal: the reason to fail a job, the type to filter by."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.suggester import SuggestFromList
from textual.widgets import Input, Static

from .dialog import Dialog

HINT = "[dim]enter[/] confirm   [dim]escape[/] cancel"  # constant markup; everything else here is text


class PromptScreen(Dialog):
    """Dismisses with the text entered (stripped) on Enter, ``None`` on Escape.

    ``title`` and ``explanation`` are shown as text, never markup: they carry job types and ids.
    """

    BINDINGS: ClassVar[list[Binding]] = [
        Binding("escape", "cancel", "Cancel", id="cancel-prompt", tooltip="close it, write nothing")
    ]

    def __init__(
        self, title: str, explanation: str, *, value: str = "", placeholder: str = "", suggestions=(), id=None
    ) -> None:
        super().__init__(id=id)
        self.title_text = title
        self.explanation = explanation
        self.value = value
        self.placeholder = placeholder
        self.suggestions = list(suggestions)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="prompt"):
            yield Static(Text(self.title_text), classes="dialog-title")
            yield Static(Text(self.explanation), classes="explanation")
            suggester = SuggestFromList(self.suggestions, case_sensitive=True) if self.suggestions else None
            yield Input(value=self.value, placeholder=self.placeholder, suggester=suggester, id="answer")
            yield Static(HINT, classes="hint")

    def on_mount(self) -> None:
        self.query_one("#answer", Input).focus()

    @on(Input.Submitted)
    def confirm(self, event: Input.Submitted) -> None:
        self.accept(event.value)

    def accept(self, value: str) -> None:
        """The answer to give for ``value``; a subclass may check it first (the query line does)."""
        self.answer(value.strip())

    def action_cancel(self) -> None:
        self.answer(None)
