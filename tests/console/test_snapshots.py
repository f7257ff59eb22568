"""Snapshots of the main views: the demo scene at a fixed clock, no cursor blink, no wall-clock time.

Regenerate on purpose only, after looking at the pictures:
``python -m pytest tests/console/test_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

import pytest
from console_helpers import no_cursor_blink, settle

# The pictures are of the rendering, the same on either backend (the rest of the console suite runs on
# both); on SQLite alone the test names, and so the baseline files, stay as they were made.
pytestmark = pytest.mark.backends("sqlite")
SIZE = (120, 40)


def views(*keys: str):
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press(*keys)
        await settle(pilot)
        no_cursor_blink(pilot.app)
        await pilot.pause()

    return run_before


def test_main_screen(snap_compare, make_app):
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=views())


def test_enqueue_form(snap_compare, make_app):
    keys = ("n", *"send-invoice", "tab", *'{"invoice": 78}', "tab", "tab", *"lots")  # max retries: "lots"
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=views(*keys, "enter"))


def test_job_detail(snap_compare, make_app):
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=views("tab", "tab", "enter"))


def test_help(snap_compare, make_app):
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=views("question_mark"))
