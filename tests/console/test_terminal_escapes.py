"""Regression tests: text from the database never acts on the operator's terminal.

A handler's exception text is stored as the job's error, whatever it holds. Review finding: drawn raw,
``\\x1b[31m`` in it reached the terminal, which turned the rest of the failed table red and shifted the
row's border and scrollbar (the table had counted the escape's characters as text); U+202E reversed the
rest of the line. The console now writes such characters as their escapes, in every place it shows an
error: the jobs tables, the detail, the causes view, the bulk confirmation and the equivalent command.
"""

from __future__ import annotations

import pytest
from console_helpers import settle, wait_for
from test_hostile_input import focus_job

from console.screens.confirm import ConfirmScreen
from console.screens.detail import JobDetailScreen
from console.widgets.command_panel import CommandPanel
from console.widgets.failures.table import FailuresTable

pytestmark = pytest.mark.asyncio
SIZE = (120, 40)
ERROR = "card declined \x1b[31mRED\x1b[0m \u202etxet\u202c \x07bell \x9b2J"
TERMINAL_ACTS_ON = ("\x1b", "\u202e", "\u202c", "\x07", "\x9b")


def drawn(app) -> str:
    """Every character the compositor sends to the terminal now (styles aside)."""
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    return "".join(segment.text for strip in update.strips for segment in strip)


def acts_on_terminal(text: str) -> list[str]:
    return [char for char in TERMINAL_ACTS_ON if char in text]


def failed_with(repo, error: str, job_type: str = "boom"):
    job, _ = repo.create(job_type, {"x": 1}, max_retries=0)
    repo.claim("host-z:1", types=[job_type])
    return repo.fail(job.id, error, traceback=f"Traceback (most recent call last):\nRuntimeError: {error}")


async def test_an_escape_in_an_error_is_shown_escaped_in_the_failed_table(make_app, scene):
    job = failed_with(scene, ERROR)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = drawn(app)
        assert acts_on_terminal(screen) == []
        assert "card declined \\u001b[31mRED" in screen  # still readable, as the admin CLI's list shows it
        await focus_job(pilot, "failed", job.id)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, JobDetailScreen)
        screen = drawn(app)
        assert acts_on_terminal(screen) == [] and acts_on_terminal(app.screen.shown_text()) == []
        assert "\\u202etxet" in screen


@pytest.mark.parametrize("error", [ERROR, "bidi \u202etxet\u202c only"])
async def test_an_escape_in_a_cause_is_escaped_in_its_view_question_and_command(make_app, scene, error):
    failed_with(scene, error)
    failed_with(scene, error)
    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("6")
        await settle(pilot)
        table = app.query_one(FailuresTable)
        assert table.cursor_group.count == 2  # the biggest group, under the cursor
        signature = table.cursor_group.signature
        assert acts_on_terminal(signature)  # the cause is the error's, byte for byte: --cause must match it
        assert acts_on_terminal(drawn(app)) == []
        await pilot.press("space")
        await settle(pilot)
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        assert acts_on_terminal(app.screen.question) == [] and acts_on_terminal(drawn(app)) == []
        await pilot.press("y")
        await settle(pilot)
        line = list(app.query_one(CommandPanel).lines)[-1]
        assert acts_on_terminal(drawn(app)) == []  # the panel shows the line
        if "\x1b" in error:  # a control character: the line is a $'...' word a shell reads back as the cause
            assert line.startswith("python -m queue_core retry --cause $'") and acts_on_terminal(line) == []
