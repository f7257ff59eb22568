"""The line of views under the header: every view's key and name, the one on screen highlighted.

Built from the same ``Binding`` objects as the help and the palette (``console.views.VIEW_BINDINGS``), so the
three agree; the footer keeps its width for the keys that act on jobs. On a terminal too narrow for one line
(80 columns) the views go on as many lines as they need, broken between two views, never inside one, so
every key and name stays in sight.
"""

from __future__ import annotations

from rich.cells import cell_len
from textual.binding import Binding
from textual.content import Content
from textual.widgets import Static


def flow(parts: list[str], width: int, separator: str = "") -> str:
    """Markup ``parts`` joined by ``separator`` on lines of at most ``width`` cells, a new line only between
    two parts (a part longer than a line gets a line of its own, which the widget wraps). ``width`` 0 (not
    laid out yet): one line."""
    lines: list[str] = []
    line, used = "", 0
    gap = Content.from_markup(separator).cell_length
    for part in parts:
        plain = Content.from_markup(part).plain
        cells = cell_len(plain)
        if line and width and used + gap + cell_len(plain.rstrip()) > width:  # a trailing space may go past
            lines.append(line)
            line, used = "", 0
        line, used = (line + separator + part, used + gap + cells) if line else (part, cells)
    lines.append(line)
    return "\n".join(lines)


class ViewBar(Static):
    def __init__(self, bindings: list[Binding], views: dict[str, str], **kwargs):
        super().__init__("", **kwargs)
        self.bindings = bindings
        self.views = views  # binding id -> the view it shows
        self.parts: list[str] = []  # each view's markup, as last shown

    def show_current(self, current: str, alarms: dict[str, str] | None = None) -> None:
        """Highlight ``current``; ``alarms`` (view -> markup) ride on their view's name: "2 Queues 1 paused"."""
        alarms = alarms or {}
        parts = []
        for binding in self.bindings:
            key = binding.key_display or binding.key
            alarm = alarms.get(self.views[binding.id])
            text = f"[b]{key}[/b] {binding.description}" + (f" {alarm}" if alarm else "")
            parts.append(f"[reverse] {text} [/reverse]" if self.views[binding.id] == current else f" {text} ")
        self.parts = parts
        self.lay_out()

    def on_resize(self) -> None:
        self.lay_out()

    def lay_out(self) -> None:
        self.update(flow(self.parts, self.content_size.width))
