"""A dialog's footer lists the dialog's own keys, not the main screen's.

Review finding: over every dialog (the enqueue form, a confirmation, the job detail, the help) the footer still
said "n Enqueue r Retry f Fail c Cancel ... q Quit", keys that do nothing there (and ``q`` on a confirmation
quit the console behind it), while the dialog's own keys (``y`` ``n`` on a confirmation, the detail's ``m``
``o``) were nowhere. The job detail lists its page keys only when there is a page that way.
"""

from __future__ import annotations

import re

import pytest
from console_helpers import screen_lines, settle, wait_for
from textual.widgets._footer import FooterKey

from console.app import QueueConsole
from console.screens.confirm import ConfirmScreen
from console.screens.detail import JobDetailScreen
from console.widgets.footer import WrappingFooter

pytestmark = [pytest.mark.asyncio, pytest.mark.backends("sqlite")]  # layout: the same on either backend
MAIN_KEYS = [f"{binding.key_display or binding.key} {binding.description}" for binding in QueueConsole.BINDINGS]


def footer_text(app) -> str:
    """The footer lines at the bottom of the terminal, as the operator sees them."""
    footer = app.screen.query_one(WrappingFooter)
    return "\n".join(screen_lines(app)[footer.region.y : footer.region.bottom])


def shown_keys(app) -> list[str]:
    return [key.description for key in app.screen.query(FooterKey) if key.description]


@pytest.mark.parametrize(
    ("keys", "dialog_keys"),
    [
        (["n"], ["Cancel"]),
        (["t"], ["Cancel"]),
        (["slash"], ["Cancel"]),
        (["question_mark"], ["Close"]),
        (["tab", "tab", "r"], ["Yes", "No"]),
        (["tab", "tab", "enter"], ["Close"]),
        (["3", "enter"], ["Close"]),
    ],
)
@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_a_dialogs_footer_shows_its_own_keys_and_none_of_the_main_screens(make_app, keys, dialog_keys, size):
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press(*keys)
        await settle(pilot)
        await pilot.pause()
        assert len(app.screen_stack) == 2, keys
        assert shown_keys(app) == dialog_keys
        text = footer_text(app)
        for key in MAIN_KEYS:
            assert not re.search(rf"(^|\s){re.escape(key)}(\s|$)", text), (keys, key)
        for description in dialog_keys:
            assert description in text, (keys, description)
        await pilot.press("escape")
        await settle(pilot)
        assert len(app.screen_stack) == 1 and "r Retry" in footer_text(app)


async def test_q_on_a_confirmation_does_not_quit_the_console_behind_it(make_app):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("tab", "tab", "r")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.press("q")
        await pilot.pause()
        assert app.is_running and isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await pilot.pause()
        await pilot.press("q")  # on the main screen q still quits
        await pilot.pause()
        assert not app.is_running


async def test_the_detail_lists_a_page_key_only_when_there_is_a_page_that_way(make_app, scene, scene_clock):
    job, _ = scene.create("import-csv", {"rows": ["x" * 100] * 200}, max_retries=54, retry_backoff=0)
    for _ in range(55):  # more than a page of attempts (50), and a payload of two pages (16 KB each)
        scene_clock.advance(1)
        assert scene.claim("host-a:1", types=["import-csv"]).id == job.id
        scene.fail(job.id, "boom")
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.push_screen(JobDetailScreen(scene, job.id))
        await settle(pilot)
        await pilot.pause()
        assert shown_keys(app) == ["Close", "Next page", "Older attempts"]
        await pilot.press("m", "o")
        await settle(pilot)
        await pilot.pause()
        assert shown_keys(app) == ["Close", "Previous page", "Newer attempts"]
        assert "b Previous page" in footer_text(app) and "m Next page" not in footer_text(app)
