"""Every key of the console, from the app's own BINDINGS, so the help, the footer and the palette agree."""

from __future__ import annotations

import io
from typing import ClassVar

from rich.console import Console, Group
from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from .dialog import Dialog

MORE_KEYS = (
    ("↑ ↓ pgup pgdn", "move in the focused table; pgdn on a paged table's last row loads the next page"),
    ("ctrl+p", "command palette: every action above by name"),
    ("escape", "close a dialog; on the main screen, clear the selection, then the query"),
)


def key_grid(rows: list[tuple[str, str]]) -> Table:
    """Keys and names in a column of their own, the text beside them wrapping under itself (at 80 columns
    a wrapped line began under the key, where the next key was looked for)."""
    grid = Table.grid()
    grid.add_column(no_wrap=True)
    grid.add_column()
    for row in rows:
        grid.add_row(*row)
    return grid


class HelpScreen(Dialog):
    BINDINGS: ClassVar[list[Binding]] = [Binding("escape,q,question_mark", "close", "Close", id="close-help")]

    def __init__(self, bindings: list[Binding], stale_after_seconds: float) -> None:
        super().__init__()
        self.bindings = bindings
        self.stale_after_seconds = stale_after_seconds

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog", classes="help") as scroll:
            scroll.border_title = "Keys"
            rows = [(b.key_display or b.key, b.description, b.tooltip) for b in self.bindings]
            keys = [(f"[b]{key:>14}[/]  {name:<12} ", f"[dim]{tooltip}[/]") for key, name, tooltip in rows]
            more = [(f"[b]{key:>14}[/]  ", f"[dim]{text}[/]") for key, text in MORE_KEYS]
            self.keys = Group(key_grid(keys), "", key_grid(more))
            yield Static(self.keys)
            yield Static(
                f"\n[bold red]⚠[/] marks a [b]stale claim[/]: a running job whose worker sent no heartbeat for "
                f"{self.stale_after_seconds:g} s. [b]x[/] reaps them: back to pending, or failed without retries left.",
                classes="legend",
            )
            yield Static("[dim]escape[/] close", classes="hint")

    def keys_text(self) -> str:
        """The list of keys as plain text, one key a line (for tests: what an operator can read)."""
        console = Console(width=200, file=io.StringIO(), record=True, color_system=None)
        console.print(self.keys)
        return console.export_text()

    def action_close(self) -> None:
        self.answer(None)
