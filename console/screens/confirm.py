"""A yes / no question before an action that changes what workers do: pause a queue, cancel a job."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Static

from .dialog import Dialog

HINT = "[b]y[/] or [b]enter[/] yes   [b]n[/] or [b]escape[/] no"


class ConfirmScreen(Dialog):
    """Dismisses with True on y / enter, False on n / escape. Title and question are text, never markup."""

    BINDINGS: ClassVar[list[Binding]] = [
        Binding("y,enter", "yes", "Yes", id="confirm-yes", tooltip="do it"),
        Binding("n,escape", "no", "No", id="confirm-no", tooltip="write nothing"),
    ]

    def __init__(self, title: str, question: str, *, id=None) -> None:
        super().__init__(id=id)
        self.title_text = title
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="confirm"):
            yield Static(Text(self.title_text), classes="dialog-title")
            yield Static(Text(self.question), classes="explanation")
            yield Static(HINT, classes="hint")

    def action_yes(self) -> None:
        self.answer(True)

    def action_no(self) -> None:
        self.answer(False)
