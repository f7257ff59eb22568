"""TableStack lays out its own tables: in any app, on every resize, with no help from QueueConsole."""

from __future__ import annotations

from datetime import timedelta

import pytest
from textual.app import App, ComposeResult

from console.snapshot import load_snapshot
from console.widgets.jobs.stack import MIN_TABLE_HEIGHT, TableStack, share_height

pytestmark = [pytest.mark.asyncio, pytest.mark.backends("sqlite")]  # layout: the same on either backend


class StackOnly(App):
    """Nothing but the stack: if it reached up into its app, there would be nothing here to reach."""

    CSS = "TableStack { height: 1fr; }"

    def compose(self) -> ComposeResult:
        yield TableStack()


def heights(stack: TableStack) -> list[int]:
    return [table.size.height for table in stack.tables]


async def test_the_stack_shares_its_height_on_show_and_on_every_resize(scene):
    snapshot = load_snapshot(scene, stale_after=timedelta(seconds=30))
    app = StackOnly()
    async with app.run_test(size=(120, 40)) as pilot:
        stack = app.query_one(TableStack)
        stack.show(snapshot)
        await pilot.pause()
        wanted = [table.wanted_height for table in stack.tables]
        assert heights(stack) == share_height(40, wanted, minimum=MIN_TABLE_HEIGHT)
        for rows in (24, 60, 40):
            await pilot.resize_terminal(120, rows)
            await pilot.pause()
            assert heights(stack) == share_height(rows, wanted, minimum=MIN_TABLE_HEIGHT), rows
            assert sum(heights(stack)) == rows
