"""The query line (``/``): what to find, checked as it is submitted; a bad query says what is wrong under it."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Input, Static

from queue_core.store.query import QueryError, parse_query

from .prompt import PromptScreen

EXPLANATION = (
    "Free text matches the payload and the latest error. Qualifiers: id: type: queue: status: worker: error: "
    'payload.KEY:VALUE; terms combine with AND; quote values with spaces: error:"card declined". '
    "Empty clears the query."
)


class QueryScreen(PromptScreen):
    """Dismisses with the parsed ``JobQuery`` (falsy when empty), or None on escape."""

    def __init__(self, value: str = "") -> None:
        super().__init__("Query", EXPLANATION, value=value, placeholder="e.g. type:send-invoice declined", id="query")

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#dialog").mount(Static("", id="query-error", classes="form-error"), after="#answer")

    def accept(self, value: str) -> None:
        try:
            query = parse_query(value)
        except QueryError as exc:
            self.query_one("#query-error", Static).update(Text.assemble(("✗ ", "bold"), exc.message))
            self.query_one("#answer", Input).add_class("-invalid")
            return
        self.answer(query)
