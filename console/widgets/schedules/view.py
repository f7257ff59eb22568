"""Each periodic job with its cron, its last run (and that job's status) and its next run."""

from __future__ import annotations

from rich.text import Text

from ...formatting import since
from ...snapshot import Snapshot
from ..keyed_table import KeyedTable

COLUMNS = (("name", 22), ("cron", 16), ("type", 18), ("last run", 16), ("last job", 16), ("next run", 16))
STATUS_STYLES = {"completed": "green", "failed": "red", "running": "yellow", "pending": "cyan"}


class SchedulesView(KeyedTable):
    """The schedules the console was started with (``--handlers`` modules' ``@queue.periodic`` tasks)."""

    COLUMNS = COLUMNS
    # At 80 columns the last job's id and the type give way; name, cron and the runs stay.
    FLEX, FLEX_MIN, GIVE_WAY = "name", 12, ("last job", "type")

    def show(self, snapshot: Snapshot) -> None:
        lines = snapshot.extra.get("schedules")
        if lines is None:
            return  # this refresh was read for another view
        self.replace_rows([(line.name, self.cells(line, snapshot.now)) for line in lines])
        count = f"[b]{len(lines)}[/b]" if lines else "[b]none[/b] · periodic jobs come from --handlers modules"
        self.border_title = f"Schedules {count}"

    @staticmethod
    def cells(line, now) -> list:
        last = "never" if line.last_run is None else f"{since(line.last_run, now)} ago"
        job = Text("")
        if line.last_job_id is not None:
            job = Text(f"#{line.last_job_id} {line.last_status}", style=STATUS_STYLES.get(line.last_status, ""))
        return [line.name, line.cron, line.type, last, job, f"{line.next_run:%m-%d %H:%M} UTC"]
