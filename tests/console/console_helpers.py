"""Helpers for the console tests (a module, not the conftest, so tests can import them)."""

from __future__ import annotations

from textual.widgets import Input


async def settle(pilot) -> None:
    """Wait until every refresh in flight has landed on screen."""
    for _ in range(100):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if not pilot.app._loading:
            return
    raise AssertionError("the console never finished refreshing")


def no_cursor_blink(app) -> None:
    for widget in app.screen.query(Input):
        widget.cursor_blink = False
