"""The line under the header: counts per status, stale claims and throughput (and a searched query's progress).

Too narrow for one line (80 columns), the throughput goes on a second line rather than off the edge; too
narrow for the counts (60 columns), they go on as many lines as they need, broken between two statuses.
"""

from __future__ import annotations

from rich.markup import escape
from textual.widgets import Static

from ...snapshot import Snapshot
from ..view_bar import flow

STATUS_STYLES = {
    "pending": "cyan",
    "running": "yellow",
    "failed": "red",
    "completed": "green",
    "cancelled": "magenta",
}


class StatsBar(Static):
    parts: tuple[list[str], str] | None = None  # the count of each status and the rates, as last shown

    def show(self, snapshot: Snapshot) -> None:
        self.parts = self.markup_parts(snapshot)
        self.lay_out()

    def on_resize(self) -> None:
        self.lay_out()

    def lay_out(self) -> None:
        if self.parts is None:
            return
        counts, rates = self.parts
        width = self.content_size.width
        # Broken between two statuses, never inside the counts' text: at 60 columns the line wrapped as text
        # and the second one began "· cancelled 1".
        lines = flow(counts, width, " · ").split("\n")
        lines[-1] = flow([lines[-1], rates], width, " │ ")
        self.update("\n".join(lines))

    def show_banner(self, text) -> None:
        """A banner in the counts' place (disconnected) until the next ``show``; a resize keeps it."""
        self.parts = None
        self.update(text)

    @staticmethod
    def markup_parts(snapshot: Snapshot) -> tuple[list[str], str]:
        counts = [f"[{style}]{name}[/] [b]{snapshot.count_text(name)}[/]" for name, style in STATUS_STYLES.items()]
        if snapshot.stale_count:
            counts[1] += f" [bold red]⚠ {snapshot.stale_count:,} stale[/]"
        rates = (
            f"[b]{snapshot.throughput['completed']:.1f}[/] done/min · "
            f"[b]{snapshot.throughput['failed']:.1f}[/] failed/min"
        )
        if snapshot.narrowed:
            # The rates are the whole queue's pulse, never narrowed: an attempt's row has no type or queue to
            # filter by cheaply (a join per failed attempt of the last five minutes, on every refresh, during
            # an incident), and a query's free text cannot be counted at all. Beside narrowed counts, say so.
            rates += " [dim]of all jobs[/]"
        if snapshot.query_note:  # the counts are of the matches a search has found so far: say so in their place
            rates = f"[bold]query[/] {escape(snapshot.query_note)}"
        return counts, rates
