"""The worker pane's log: one screen line per event, and a line too long for the pane ends in "…"."""

from __future__ import annotations

from collections import deque

from rich.text import Text
from textual.events import Resize
from textual.widgets import RichLog

from ..keyed_table import fit


class EventLog(RichLog):
    """A ``RichLog`` that never wraps and never cuts a line silently.

    Unwrapped, RichLog cuts a long line at the pane's edge: "· 0.01s · card declined for ord" looked like a
    whole line (review finding). Each line is written fitted to the width, ending in "…" when cut, and
    the lines are kept so that a resize fits them again (wider: more of each; narrower: still an "…").
    """

    def __init__(self, *, max_lines: int, **kwargs) -> None:
        super().__init__(max_lines=max_lines, markup=False, wrap=False, **kwargs)
        self.events: deque[Text] = deque(maxlen=max_lines)
        self.fitted_width = 0  # the width the lines on screen were fitted to; 0 before the first layout

    def add(self, line: Text) -> None:
        self.events.append(line)
        if self.fitted_width:
            self.write(fit(line, self.fitted_width))

    def on_resize(self, event: Resize) -> None:
        # The scrollbar's column is kept free (console.tcss: scrollbar-gutter), so a line's "…" is never under it.
        width = event.size.width - self.styles.scrollbar_size_vertical
        if width <= 0 or width == self.fitted_width:
            return
        self.fitted_width = width
        self.clear()
        for line in self.events:
            self.write(fit(line, width))
