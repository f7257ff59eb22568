"""Every key of the console, from the app's own BINDINGS, so the help, the footer and the palette agree."""

from __future__ import annotations

from typing import ClassVar

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
            lines = [f"[b]{key:>14}[/]  {description:<12} [dim]{tooltip}[/]" for key, description, tooltip in rows]
            lines.append("")
            lines += [f"[b]{key:>14}[/]  [dim]{text}[/]" for key, text in MORE_KEYS]
            yield Static("\n".join(lines))
            yield Static(
                f"\n[bold red]⚠[/] marks a [b]stale claim[/]: a running job whose worker sent no heartbeat for "
                f"{self.stale_after_seconds:g} s. [b]x[/] reaps them: back to pending, or failed without retries left.",
                classes="legend",
            )
            yield Static("[dim]escape[/] close", classes="hint")

    def action_close(self) -> None:
        self.answer(None)
