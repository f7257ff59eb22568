"""A keyset-paged table of one state (scheduled, completed, cancelled): one window of rows at a time.

Page down on the last row asks for the next window, page up on the first row for the one before; the
app reads it on its refresh thread (``console.snapshot``), so a page costs what the first one does and the
table never holds more than one window.
"""

from __future__ import annotations

from ...messages import PageRequested
from ...snapshot import Snapshot
from .table import JobTable


class PagedJobTable(JobTable):
    """A ``JobTable`` whose rows are the snapshot's page of its state."""

    def __init__(self, status: str, title: str, **kwargs):
        super().__init__(status, title, **kwargs)
        self._page_number = 1
        self._has_next = False
        self._land_on_last = False

    def show(self, snapshot: Snapshot) -> None:
        if self.status not in snapshot.pages:
            return  # this refresh was read for another view
        view = snapshot.pages[self.status]
        turned = view.number != self._page_number
        self._page_number, self._has_next = view.number, view.has_next
        super().show(snapshot)
        if turned and self.row_count:
            self.move_cursor(row=self.row_count - 1 if self._land_on_last else 0, animate=False)

    def action_page_down(self) -> None:
        if self._has_next and self.cursor_row >= self.row_count - 1:
            self._ask(+1)
        else:
            super().action_page_down()

    def action_page_up(self) -> None:
        if self._page_number > 1 and self.cursor_row <= 0:
            self._ask(-1)
        else:
            super().action_page_up()

    def _ask(self, step: int) -> None:
        self._land_on_last = step < 0
        self.post_message(PageRequested(self.status, step))

    def title_text(self, snapshot: Snapshot) -> str:
        return f"{self.title} [b]{snapshot.shown_text(self.status)}[/b]"
