"""The line under the header: counts per status, stale claims and throughput (and a searched query's progress)."""

from __future__ import annotations

from rich.markup import escape
from textual.widgets import Static

from ...snapshot import Snapshot

STATUS_STYLES = {
    "pending": "cyan",
    "running": "yellow",
    "failed": "red",
    "completed": "green",
    "cancelled": "magenta",
}


class StatsBar(Static):
    def show(self, snapshot: Snapshot) -> None:
        self.update(self.markup(snapshot))

    @staticmethod
    def markup(snapshot: Snapshot) -> str:
        counts = [f"[{style}]{name}[/] [b]{snapshot.count_text(name)}[/]" for name, style in STATUS_STYLES.items()]
        if snapshot.stale_count:
            counts[1] += f" [bold red]⚠ {snapshot.stale_count:,} stale[/]"
        rates = (
            f"[b]{snapshot.throughput['completed']:.1f}[/] done/min · "
            f"[b]{snapshot.throughput['failed']:.1f}[/] failed/min"
        )
        if snapshot.query_note:  # the counts are of the matches a search has found so far: say so in their place
            rates = f"[bold]query[/] {escape(snapshot.query_note)}"
        return " · ".join(counts) + " │ " + rates
