"""Textual's footer, on as many lines as its keys need.

One line holds every key from about 110 columns on; at 80 the last ones (Reap, Worker, Query, Help, Quit)
were cut off the edge with nothing to say they were there. Too narrow, the keys go on further lines, broken
between two keys, the command palette's key on the right as before. Wide enough, it is Textual's footer as is.
"""

from __future__ import annotations

from rich.cells import cell_len
from textual.containers import HorizontalGroup
from textual.widgets import Footer
from textual.widgets._footer import FooterKey


def key_cells(key: FooterKey) -> int:
    """A key's width in the compact footer: key, space, description, and the margin after it."""
    return cell_len(key.key_display) + (cell_len(key.description) + 1 if key.description else 0) + 1


def rows_of(widths: list[int], width: int) -> list[int]:
    """How many keys go on each line for keys of these ``widths`` on lines of ``width`` cells."""
    rows, used = [0], 0
    for cells in widths:
        if rows[-1] and used + cells > width:
            rows.append(0)
            used = 0
        rows[-1] += 1
        used += cells
    return rows


class WrappingFooter(Footer):
    """Its style (``-wrapped``: a line per row of keys) is in console.tcss."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.rows: list[int] = []  # keys per line, as last composed

    def compose(self):
        widgets = list(super().compose())
        keys = [widget for widget in widgets if type(widget) is FooterKey and not widget.has_class("-command-palette")]
        others = [widget for widget in widgets if widget not in keys]
        self.rows = self.rows_for(keys, others)
        self.set_class(len(self.rows) > 1, "-wrapped")
        if len(self.rows) <= 1 or len(others) > 1:  # one line (or key groups, which this does not lay out)
            yield from widgets
            return
        start = 0
        for count in self.rows:
            yield HorizontalGroup(*keys[start : start + count], classes="footer-row")
            start += count
        yield from others

    def rows_for(self, keys: list[FooterKey], others: list) -> list[int]:
        """Keys per line at the footer's width, beside the palette's key ("▏^p palette": its border where
        the others have a margin)."""
        palette = sum(key_cells(widget) for widget in others if isinstance(widget, FooterKey))
        width = self.size.width - palette
        return rows_of([key_cells(key) for key in keys], width) if self.size.width and keys else [len(keys)]

    def on_resize(self) -> None:
        keys = list(self.query(FooterKey))
        palette = [key for key in keys if key.has_class("-command-palette")]
        if self.rows_for([key for key in keys if key not in palette], palette) != self.rows:
            self.call_after_refresh(self.recompose)
