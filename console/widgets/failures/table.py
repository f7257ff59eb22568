"""``6``: failed jobs grouped by cause (``repo.failure_groups``): the error's first line with numbers, ids, hex
and quoted values made placeholders, biggest group first. ``space`` or ``enter`` selects a group's jobs for a
bulk action (``console.selection``)."""

from __future__ import annotations

from rich.text import Text

from ...formatting import one_line, plural, since
from ...snapshot import Snapshot
from ..keyed_table import KeyedTable

# 104 columns and their padding fit a 120-column terminal; at 80 the cause narrows (cut with "…") and the
# first seen gives way: the count, the cause, its types and when it last happened stay on screen.
COLUMNS = (
    ("jobs", 6),
    ("cause (error signature)", 66),
    ("types", 12),
    ("first seen", 10),
    ("last seen", 10),
)


class FailuresTable(KeyedTable):
    """Rows keyed by signature, so a refresh keeps the cursor on its group."""

    COLUMNS = COLUMNS
    FLEX, FLEX_MIN, GIVE_WAY = "cause (error signature)", 36, ("first seen",)
    selected_signature: str | None = None  # the group whose jobs are selected, marked in the table

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.groups: dict[str, object] = {}

    @property
    def cursor_group(self):
        return self.groups.get(self.selected_key) if self.selected_key is not None else None

    def show(self, snapshot: Snapshot) -> None:
        groups = snapshot.extra.get("failures")
        if groups is None:
            return  # this refresh was read for another view
        self.groups = {group.signature: group for group in groups}
        self.replace_rows([(group.signature, self.cells(group, snapshot)) for group in groups])
        jobs = sum(group.count for group in groups)
        causes = f"[b]{len(groups):,}[/b] {plural(len(groups), 'cause')}"
        self.border_title = f"Failures by cause {causes} · {jobs:,} failed {plural(jobs, 'job')}"
        self.border_subtitle = "space or enter selects a cause's jobs · then r retry, D delete"

    def mark(self, signature: str | None, snapshot: Snapshot | None) -> None:
        self.selected_signature = signature
        if snapshot is not None:
            self.show(snapshot)

    def cells(self, group, snapshot: Snapshot) -> list:
        marked = group.signature == self.selected_signature
        return [
            Text(f"{group.count:,}", style="bold black on yellow" if marked else "bold red"),
            Text(one_line(group.signature, COLUMNS[1][1])),
            Text(one_line(", ".join(group.types), COLUMNS[2][1]), style="dim"),
            Text(f"{since(group.first_seen, snapshot.now)} ago"),
            Text(f"{since(group.last_seen, snapshot.now)} ago"),
        ]
