"""Snapshots of issue 16's views and dialogs: the demo scene at a fixed clock (plus, for the failures view, the
demo incident), no cursor blink. The same keys make ``screenshots/`` (``console.screenshots.ISSUE_16_SHOTS``).

Regenerate on purpose only, after looking at the pictures:
``python -m pytest tests/console/test_snapshots_bulk.py --snapshot-update``.
"""

from __future__ import annotations

import threading

import pytest
from console_helpers import pressed_one_by_one, settle

from console.demo import add_failure_causes
from console.screens.bulk_progress import BulkProgressScreen
from console.screenshots import ISSUE_16_SHOTS
from queue_core.store.bulk import BulkProgress

pytestmark = pytest.mark.backends("sqlite")  # the rendering is the same on either backend


def app_for(name: str, make_app, scene, scene_clock):
    keys, options = ISSUE_16_SHOTS[name]
    if options.get("incident"):
        add_failure_causes(scene, scene_clock)
    return make_app(read_only=options.get("read_only", False)), pressed_one_by_one(*keys)


@pytest.mark.parametrize("name", list(ISSUE_16_SHOTS))
def test_issue_16_view(snap_compare, make_app, scene, scene_clock, name):
    app, run_before = app_for(name, make_app, scene, scene_clock)
    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_bulk_progress_dialog(snap_compare, make_app):
    """The progress dialog half-way, after escape asked it to stop (fixed numbers: no live run to race)."""

    async def run_before(pilot) -> None:
        await settle(pilot)
        plan = pilot.app.repo.plan_bulk("retry", "", status="failed")
        screen = BulkProgressScreen(plan, threading.Event())
        await pilot.app.push_screen(screen)
        screen.show_progress(BulkProgress("retry", plan.count, done=2, changed=1, skipped=1))
        await pilot.press("escape")
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=(120, 40), run_before=run_before)
