"""The equivalent commands: after each action, the admin-CLI line that does the same, so it can be scripted.

One line (the last command) once there is one; ``e`` opens the panel to the last ``KEPT`` lines.
"""

from __future__ import annotations

from collections import deque

from textual.content import Content
from textual.widgets import Static

from queue_core.text import printable

from ..commands import is_command

KEPT = 6


class CommandPanel(Static):
    def __init__(self, **kwargs) -> None:
        super().__init__("", **kwargs)
        self.lines: deque[str] = deque(maxlen=KEPT)
        self.expanded = False
        self.border_title = "Same as (e: last commands)"
        self.display = False  # until there is a command

    def add(self, lines: list[str]) -> None:
        for line in lines:
            self.lines.append(line)
        self.show_lines()

    def toggle(self) -> None:
        self.expanded = not self.expanded
        self.show_lines()

    def show_lines(self) -> None:
        self.display = bool(self.lines) or self.expanded
        shown = list(self.lines) if self.expanded else self._last()
        self.set_class(self.expanded, "-expanded")
        if not shown:
            self.update(Content.styled("no action yet: each one's admin-CLI line shows here", "dim"))
            return
        # A control character is quoted as $'\x1b' in the line itself (commands.quote); a bidi override or
        # another format character in a cause is drawn as its escape here, never acted on by the terminal.
        self.update(Content("\n").join(Content.assemble(("$ ", "dim"), printable(line)) for line in shown))

    def _last(self) -> list[str]:
        """The collapsed panel's line: the last command, with the note after it if a note came last (a
        selection of more jobs than are spelt out ends in "# … and 2 more"). Review finding: it showed the note
        alone, no command at all, until ``e``."""
        if not self.lines:
            return []
        last = self.lines[-1]
        if is_command(last):
            return [last]
        commands = [line for line in self.lines if is_command(line)]
        return [f"{commands[-1]}  {last}" if commands else last]
