"""The line of views under the header: every view's key and name, the one on screen highlighted.

Built from the same ``Binding`` objects as the help and the palette (``console.views.VIEW_BINDINGS``), so the
three agree; the footer keeps its width for the keys that act on jobs.
"""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import Static


class ViewBar(Static):
    def __init__(self, bindings: list[Binding], views: dict[str, str], **kwargs):
        super().__init__("", **kwargs)
        self.bindings = bindings
        self.views = views  # binding id -> the view it shows

    def show_current(self, current: str, alarms: dict[str, str] | None = None) -> None:
        """Highlight ``current``; ``alarms`` (view -> markup) ride on their view's name: "2 Queues 1 paused"."""
        alarms = alarms or {}
        parts = []
        for binding in self.bindings:
            key = binding.key_display or binding.key
            alarm = alarms.get(self.views[binding.id])
            text = f"[b]{key}[/b] {binding.description}" + (f" {alarm}" if alarm else "")
            parts.append(f"[reverse] {text} [/reverse]" if self.views[binding.id] == current else f" {text} ")
        self.update("".join(parts))
