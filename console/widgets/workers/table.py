"""Every registered worker: where it runs, what it takes, when it was last seen; lost workers in red."""

from __future__ import annotations

from rich.text import Text

from ...formatting import since, time_of_day
from ...snapshot import Snapshot
from ..keyed_table import KeyedTable

COLUMNS = (  # 96 columns and their padding fit a 120-column terminal
    ("worker", 15),
    ("host", 10),
    ("pid", 6),
    ("queues", 12),
    ("slots", 5),
    ("state", 19),
    ("started", 8),
    ("last seen", 9),
    ("running", 7),
    ("done", 5),
)
STATE_STYLES = {"running": "green", "stopped": "dim", "lost": "bold red"}


class WorkersTable(KeyedTable):
    """Rows keyed by worker id, so a refresh keeps the cursor on its worker."""

    COLUMNS = COLUMNS
    # At 80 columns: the host and pid first (a default worker id is host-pid already), then when it started
    # and how many it finished; its state, last beat and running count stay.
    FLEX, FLEX_MIN, GIVE_WAY = "worker", 12, ("host", "pid", "started", "done")

    @property
    def selected_worker_id(self) -> str | None:
        return self.selected_key

    def show(self, snapshot: Snapshot) -> None:
        workers = snapshot.extra.get("workers")
        if workers is None:
            return  # this refresh was read for another view
        self.replace_rows([(worker.id, self.cells(worker, snapshot)) for worker in workers])
        lost = sum(worker.state == "lost" for worker in workers)
        self.border_title = f"Workers [b]{len(workers)}[/b]" + (f" · [bold red]{lost} lost[/]" if lost else "")

    @staticmethod
    def cells(worker, snapshot: Snapshot) -> list:
        style = "bold red" if worker.state == "lost" else ""
        state = worker.state
        if worker.state == "lost":
            state = f"lost · silent {since(worker.last_seen_at, snapshot.now)}"
        queues = worker.queues if isinstance(worker.queues, str) else ",".join(worker.queues)
        return [
            Text(worker.id, style=style),
            Text(worker.host, style=style),
            Text(str(worker.pid), style=style),
            Text(queues, style=style),
            Text(str(worker.concurrency), style=style),
            Text(state, style=STATE_STYLES.get(worker.state, "")),
            Text(time_of_day(worker.started_at), style=style),
            Text(f"{since(worker.last_seen_at, snapshot.now)} ago", style=style),
            Text(str(worker.running), style=style),
            Text(str(worker.completed), style=style),
        ]
