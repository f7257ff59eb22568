"""Each periodic job with its cron, its last run (and that job's status) and its next run."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from ...formatting import since
from ...snapshot import Snapshot

COLUMNS = (("name", 22), ("cron", 16), ("type", 18), ("last run", 16), ("last job", 16), ("next run", 16))
STATUS_STYLES = {"completed": "green", "failed": "red", "running": "yellow", "pending": "cyan"}


class SchedulesView(DataTable):
    """The schedules the console was started with (``--handlers`` modules' ``@queue.periodic`` tasks)."""

    def __init__(self, **kwargs):
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)

    def on_mount(self) -> None:
        for label, width in COLUMNS:
            self.add_column(label, key=label, width=width)
        self.border_title = "Schedules"

    def show(self, snapshot: Snapshot) -> None:
        lines = snapshot.extra.get("schedules")
        if lines is None:
            return  # this refresh was read for another view
        now = snapshot.now
        selected = self.cursor_row
        self.clear()
        for line in lines:
            last = "never" if line.last_run is None else f"{since(line.last_run, now)} ago"
            job = Text("")
            if line.last_job_id is not None:
                job = Text(f"#{line.last_job_id} {line.last_status}", style=STATUS_STYLES.get(line.last_status, ""))
            nxt = f"{line.next_run:%m-%d %H:%M} UTC"
            self.add_row(line.name, line.cron, line.type, last, job, nxt, key=line.name)
        if self.row_count:
            self.move_cursor(row=min(selected, self.row_count - 1), animate=False)
        count = f"[b]{len(lines)}[/b]" if lines else "[b]none[/b] · periodic jobs come from --handlers modules"
        self.border_title = f"Schedules {count}"
