"""A one-line question in a modal: the reason to fail a job, the type to filter by."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Input, Static


class PromptScreen(ModalScreen):
    """Dismisses with the text entered (stripped) on Enter, ``None`` on Escape."""

    BINDINGS: ClassVar[list[Binding]] = [Binding("escape", "cancel", "Cancel", id="cancel-prompt")]

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
            yield Static(self.title_text, classes="dialog-title")
            yield Static(self.explanation, classes="explanation")
            suggester = SuggestFromList(self.suggestions, case_sensitive=True) if self.suggestions else None
            yield Input(value=self.value, placeholder=self.placeholder, suggester=suggester, id="answer")
            yield Static("[dim]enter[/] confirm   [dim]escape[/] cancel", classes="hint")

    def on_mount(self) -> None:
        self.query_one("#answer", Input).focus()

    @on(Input.Submitted)
    def confirm(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)
