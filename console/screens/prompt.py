"""A one-line question in a modal: the reason to fail a job, the type to filter by."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.suggester import SuggestFromList
from textual.widgets import Input, Static

from queue_core.errors import ValidationError

from .dialog import Dialog

HINT = "[dim]enter[/] confirm   [dim]escape[/] cancel"  # constant markup; everything else here is text


class PromptScreen(Dialog):
    """Dismisses with the text entered (stripped) on Enter, ``None`` on Escape.

    ``title`` and ``explanation`` are shown as text, never markup: they carry job types and ids. ``check``
    (a validation function) refuses an answer that is not empty: its ValidationError is said under the line
    and the prompt stays open.
    """

    BINDINGS: ClassVar[list[Binding]] = [
        Binding("escape", "cancel", "Cancel", id="cancel-prompt", tooltip="close it, write nothing")
    ]

    def __init__(
        self,
        title: str,
        explanation: str,
        *,
        value: str = "",
        placeholder: str = "",
        suggestions=(),
        check: Callable[[str], object] | None = None,
        id=None,
    ) -> None:
        super().__init__(id=id)
        self.title_text = title
        self.explanation = explanation
        self.value = value
        self.placeholder = placeholder
        self.suggestions = list(suggestions)
        self.check = check

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
        """The answer to give for ``value``, once ``check`` lets it through; a subclass may check it its own
        way (the query line does)."""
        value = value.strip()
        if value and self.check is not None:
            try:
                self.check(value)
            except ValidationError as exc:
                self.refuse(str(exc))
                return
        self.answer(value)

    def refuse(self, message: str) -> None:
        """Say under the line what is wrong with the answer (text, never markup: it quotes what was typed)."""
        lines = self.query("#prompt-error")
        line = lines.first(Static) if lines else Static("", id="prompt-error", classes="form-error")
        if not lines:
            self.query_one("#dialog").mount(line, after="#answer")
        line.update(Text.assemble(("✗ ", "bold"), message))
        self.query_one("#answer", Input).add_class("-invalid")

    def action_cancel(self) -> None:
        self.answer(None)
