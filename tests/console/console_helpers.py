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


async def wait_for(pilot, condition, what: str, *, timeout: float = 30.0) -> None:
    """Let the app run until ``condition()`` holds (threads do the work); fail with ``what`` if it never does."""
    for _ in range(int(timeout / 0.05)):
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"never happened: {what}")


def log_text(app) -> str:
    from textual.widgets import RichLog

    return "\n".join(line.text for line in app.query_one("#worker-log", RichLog).lines)


def pressed_one_by_one(*keys: str):
    """A snapshot's ``run_before``: each key, then everything it started, landed (a key may open a dialog
    that a thread's answer brings); no cursor blink, no toast (it leaves on a timer)."""

    async def run_before(pilot) -> None:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)
        no_cursor_blink(pilot.app)
        pilot.app.clear_notifications()
        await pilot.pause()

    return run_before


async def asked_then(pilot, key: str, answer: str) -> str:
    """Press ``key``, wait for the confirmation its dry run brings, answer it (``y``, ``enter`` or ``escape``);
    the question it asked."""
    from console.screens.confirm import ConfirmScreen  # here, so the helpers load before the app's modules

    await pilot.press(key)
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, ConfirmScreen), f"the confirmation of {key}")
    question = pilot.app.screen.question
    await pilot.press(answer)
    return question


def screen_lines(app) -> list[str]:
    """What the terminal shows now, line by line, as plain text (the screenshot's text, no styles)."""
    import io

    from rich.console import Console

    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True, legacy_windows=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text().splitlines()
