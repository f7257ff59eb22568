"""The pending, running and failed tables, one above the other, sharing the height they are given by need."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical

from ...snapshot import Snapshot
from .table import JobTable

TABLES = (("pending", "Pending"), ("running", "Running"), ("failed", "Failed"))
MIN_TABLE_HEIGHT = 5  # border, header and two rows
BORDER_AND_HEADER = 3
SHORT_ROWS = 3  # rows per table below which the focused table comes first (``share_short``)


class TableStack(Vertical):
    """The three tables. It lays them out itself: whenever its height changes (terminal, worker pane) or
    their rows do (``show``), they share its height again.

    CSS cannot say this: ``fr`` units share evenly, ``auto`` does not cap, and a short table should give its
    lines to a long one.
    """

    def compose(self) -> ComposeResult:
        for status, title in TABLES:
            yield JobTable(status, title, id=status)

    @property
    def tables(self) -> list[JobTable]:
        return list(self.query_children(JobTable))

    def show(self, snapshot: Snapshot) -> None:
        for table in self.tables:
            table.show(snapshot)
        self.fit()

    @property
    def shown_tables(self) -> list[JobTable]:
        """The tables on screen (all three but on a terminal too short for them): tab moves among these."""
        return [table for table in self.tables if table.display]

    def on_resize(self) -> None:
        self.fit()

    def on_descendant_focus(self) -> None:
        self.fit()  # the focused table is always one of those shown

    def fit(self) -> None:
        """Share the height between the tables by need: a short table shrinks, a long one gets the rest."""
        space = self.size.height
        if not space:
            return
        shown = self.tables_that_fit(space)
        for table in self.tables:
            table.display = table in shown
        if space < sum(table.frame_height + SHORT_ROWS for table in shown):
            focused = self.screen.focused if self.is_attached else None
            # Short, an empty table is its title ("Failed 0"): a header over no rows says nothing.
            wanted = [table.wanted_height if table.row_count else table.frame_height - 1 for table in shown]
            floors = [table.frame_height for table in shown]
            focus = shown.index(focused) if focused in shown else 0
            heights = share_short(space, wanted, floors, focus)
        else:
            heights = share_height(space, [table.wanted_height for table in shown], minimum=MIN_TABLE_HEIGHT)
        for table, height in zip(shown, heights, strict=True):
            table.styles.height = height

    def tables_that_fit(self, space: int) -> list[JobTable]:
        """The tables ``space`` has room for: the focused one with up to ``SHORT_ROWS`` rows, then, as long as
        each has its border, header and a row, those with jobs before the empty ones, in their order.

        Below that (60x20), the last table was drawn under the worker pane, its title and rows out of sight,
        and tab still moved the cursor there, so r and enter acted on a job nobody could see. The others are
        hidden instead (the header still counts their jobs) and tab skips them.
        """
        tables = self.tables
        focused = self.screen.focused if self.is_attached else None
        first = sorted(range(len(tables)), key=lambda i: (tables[i] is not focused, not tables[i].row_count, i))
        chosen, used = [], 0
        for i in first:
            rows = SHORT_ROWS if not chosen else 1
            need = min(tables[i].wanted_height, tables[i].frame_height + rows)
            if chosen and used + need > space:
                break
            chosen.append(i)
            used += need
        return [table for i, table in enumerate(tables) if i in chosen]


def share_height(space: int, wanted: list[int], *, minimum: int) -> list[int]:
    """Heights for the tables, water-filling: those needing less than an even share get what they need (an
    empty table its border, header and one blank row: at 80x24 the minimum gave an empty failed table two
    blank rows and the pending table three rows of 26), the others share the rest evenly."""
    if space < minimum * len(wanted):
        # Too short for every table's border, header and two rows (24 rows, the command panel open): each
        # an even share, at least its border and header (the count is in its title), never one cut off below.
        minimum = max(BORDER_AND_HEADER, space // len(wanted))
    heights = [0] * len(wanted)
    order = sorted(range(len(wanted)), key=lambda i: (wanted[i], -i))  # ties: the first table is "longest"
    left = space
    for position, index in enumerate(order):
        fair = left // (len(wanted) - position)
        heights[index] = min(wanted[index], max(minimum, fair))
        left -= heights[index]
    # Whatever is still free goes to the longest table (it can always use more lines).
    heights[order[-1]] += max(0, left)
    return heights


def share_short(space: int, wanted: list[int], floors: list[int], focused: int) -> list[int]:
    """Heights for tables too short for three rows each (80x24 after an action, 60x20): the focused table
    first, as the one the operator reads and acts on.

    Each table gets its ``floors`` (border and header: its title counts its jobs), then each one row (the
    longest silent running job, the newest failure), the focused one first; then the focused table as many
    rows as it has, and the others share what is left. Review finding: an even share left every table a row
    or two at 80x24 once the command strip was on screen, the pending table among them.
    """
    heights = [0] * len(wanted)
    left = space
    order = [focused, *(i for i in range(len(wanted)) if i != focused)]
    for extra_rows in (0, 1):
        for i in order:
            grant = max(0, min(min(wanted[i], floors[i] + extra_rows) - heights[i], left))
            heights[i] += grant
            left -= grant
    grant = max(0, min(wanted[focused] - heights[focused], left))
    heights[focused] += grant
    left -= grant
    others = order[1:]
    if others and left:
        extra = share_height(left + sum(heights[i] for i in others), [wanted[i] for i in others], minimum=0)
        for i, height in zip(others, extra, strict=True):
            heights[i] = height
        left = 0
    heights[focused] += left  # with nothing else to show, the focused table takes the rest
    return heights
