"""Every key of the console, from the BINDINGS of the app and of each screen and view that answers keys, so
the help, the footer and the palette agree: one section per context (the main screen, view 5, the job
detail, the dialogs), each row a binding's keys, description and tooltip. tests/console/test_help_keys.py
walks every class of the console with BINDINGS and fails when one of them is missing here."""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import ClassVar

from rich.console import Console, Group
from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.events import Resize
from textual.widgets import Static

from ..widgets.activity.view import ActivityView
from .bulk_progress import BulkProgressScreen
from .confirm import ConfirmScreen
from .detail import JobDetailScreen
from .dialog import Dialog
from .enqueue import EnqueueScreen
from .prompt import PromptScreen
from .worker_jobs import WorkerJobsScreen

MORE_KEYS = (
    (
        "↑ ↓ pgup pgdn",
        "move in the focused table; pgdn on a paged table's last row loads the next page, pgup on its"
        " first the page before",
    ),
    ("← →", "scroll the focused table sideways (on 5: pick the queue, below)"),
    ("ctrl+p", "command palette: every action above by name"),
    ("escape", "close a dialog; on the main screen, clear the selection, then the query"),
    ("ctrl+q", "quit from anywhere (on a dialog q closes it or does nothing, never quits)"),
)
KEYS_WIDTH = 14  # "escape q enter"
NAME_WIDTH = 14  # "Older attempts"
KEY_NAMES = {"left": "←", "right": "→", "question_mark": "?", "slash": "/"}

# The keys of each context besides the main screen: (title, the classes whose BINDINGS it lists, keys a
# widget answers without a binding of ours, as (keys, text)). The help's own close key is added in compose.
CONTEXTS: tuple[tuple[str, tuple[type, ...], tuple[tuple[str, str], ...]], ...] = (
    ("On 5, Activity", (ActivityView,), ()),
    ("In a job's detail (enter)", (JobDetailScreen,), ()),
    ("In a worker's jobs (enter on 3)", (WorkerJobsScreen,), (("enter", "the detail of the job under the cursor"),)),
    ("In a confirmation", (ConfirmScreen,), ()),
    ("During a bulk action", (BulkProgressScreen,), ()),
    (
        "In the enqueue form (n) and a prompt (t, f)",
        (EnqueueScreen, PromptScreen),
        (("tab", "the next field"), ("enter", "submit: bad input is said in the form, nothing written")),
    ),
)


def key_names(binding: Binding) -> str:
    """The keys of ``binding`` as the help shows them: ``escape q enter``, ``←``, ``?``."""
    if binding.key_display:
        return binding.key_display
    return " ".join(KEY_NAMES.get(key, key) for key in binding.key.split(","))


# Columns of the list below which the name goes on with its text (60 columns): beside a key and a name
# column the text had 22 columns and every line of it wrapped, three or four lines a key.
NARROW_HELP = KEYS_WIDTH + NAME_WIDTH + 2 * 2 + 36


def key_grid(rows: list[tuple[str, str, str]], *, narrow: bool = False) -> Table:
    """Keys and names in columns of their own, the same widths in every section, the text beside them
    wrapping under itself (at 80 columns a wrapped line began under the key, where the next key was looked
    for). ``narrow``: the name begins the text's column, in bold, and the text goes on after it."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True, min_width=0 if narrow else KEYS_WIDTH)  # narrow: as wide as its keys
    if not narrow:
        grid.add_column(no_wrap=True, min_width=NAME_WIDTH)
    grid.add_column()
    for key, name, text in rows:
        if narrow:
            grid.add_row(key, f"[b]{name}[/b]  {text}" if name else text)
        else:
            grid.add_row(key, name, text)
    return grid


class KeyList(Static):
    """The sections of keys, laid out again for the width they are given (``key_grid``'s ``narrow``)."""

    def __init__(self, sections: list, **kwargs) -> None:
        self.sections = sections  # each a title (markup, "" for none) or a list of rows
        super().__init__(self.keys(), **kwargs)

    def keys(self, *, narrow: bool = False) -> Group:
        return Group(
            *(section if isinstance(section, str) else key_grid(section, narrow=narrow) for section in self.sections)
        )

    def on_resize(self, event: Resize) -> None:
        self.update(self.keys(narrow=event.size.width < NARROW_HELP))


def binding_rows(bindings: Iterable[Binding]) -> list[tuple[str, str, str]]:
    """One row a binding; a row two screens share once."""
    rows: list[tuple[str, str, str]] = []
    for binding in bindings:
        row = (f"[b]{key_names(binding)}[/]", binding.description, f"[dim]{binding.tooltip}[/]")
        if row not in rows:
            rows.append(row)
    return rows


def other_rows(keys: Iterable[tuple[str, str]]) -> list[tuple[str, str, str]]:
    return [(f"[b]{key}[/]", "", f"[dim]{text}[/]") for key, text in keys]


class HelpScreen(Dialog):
    BINDINGS: ClassVar[list[Binding]] = [
        Binding("escape,q,question_mark", "close", "Close", id="close-help", tooltip="close this list")
    ]

    def __init__(self, bindings: list[Binding], stale_after_seconds: float) -> None:
        super().__init__()
        self.bindings = bindings
        self.stale_after_seconds = stale_after_seconds

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog", classes="help") as scroll:
            scroll.border_title = "Keys"
            sections: list = [binding_rows(self.bindings), "", other_rows(MORE_KEYS)]
            contexts = [*CONTEXTS, ("Here", (type(self),), ())]
            for title, classes, others in contexts:
                bindings = [binding for cls in classes for binding in cls.BINDINGS]
                rows = binding_rows(bindings) + other_rows(others)
                sections += ["", f"[b]{title}[/]", rows]
            key_list = KeyList(sections)
            self.keys = key_list.keys()
            yield key_list
            yield Static(
                f"\n[bold red]⚠[/] marks a [b]stale claim[/]: a running job whose worker sent no heartbeat for "
                f"{self.stale_after_seconds:g} s. [b]x[/] reaps them, and the jobs of every worker the workers "
                "view shows lost: back to pending, or failed without retries left.",
                classes="legend",
            )
            yield Static("[dim]escape[/] close", classes="hint")

    def keys_text(self) -> str:
        """The list of keys as plain text, one key a line (for tests: what an operator can read)."""
        console = Console(width=200, file=io.StringIO(), record=True, color_system=None)
        console.print(self.keys)
        return console.export_text()

    def action_close(self) -> None:
        self.answer(None)
