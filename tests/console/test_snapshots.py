"""Snapshots of the main views: the demo scene at a fixed clock, no cursor blink, no wall-clock time.

Regenerate on purpose only, after looking at the pictures:
``python -m pytest tests/console/test_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

import itertools

import pytest
from console_helpers import no_cursor_blink, settle

from console.screenshots import shoot_worker, show_worker_run
from queue_core.worker.scheduler import Schedule

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


def test_worker_pane(snap_compare, make_app):
    """The embedded worker's pane after a replayed run: fixed clock, fixed events, fixed durations."""
    app = make_app(worker_id="console-demo:1")
    assert snap_compare(app, terminal_size=SIZE, run_before=show_worker_run)


@pytest.mark.asyncio
async def test_the_worker_screenshot_is_the_same_on_every_run(tmp_path):
    """``python -m console.screenshots`` made a different worker.svg on each run (a live worker's threads)."""
    pictures = []
    for run in ("first", "second"):
        (tmp_path / run / "worker").mkdir(parents=True)
        pictures.append((await shoot_worker(tmp_path / run, tmp_path / run)).read_bytes())
    assert pictures[0] == pictures[1]


def test_scheduled_view(snap_compare, make_app):
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=views("s"))


def test_completed_view_second_page(snap_compare, make_app):
    assert snap_compare(make_app(window=10), terminal_size=SIZE, run_before=views("d", "ctrl+end", "pagedown"))


def test_activity_view(snap_compare, make_app):
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=views("5"))


def test_schedules_view(snap_compare, make_app):
    schedules = [
        Schedule(name="nightly-report", cron="0 3 * * *", type="report"),
        Schedule(name="sync-prices", cron="*/15 * * * *", type="sync-prices"),
    ]
    assert snap_compare(make_app(schedules=schedules), terminal_size=SIZE, run_before=views("4"))


def test_queues_view(snap_compare, make_app):
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=views("2"))


def test_workers_view(snap_compare, make_app):
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=views("3"))


def test_pause_confirmation(snap_compare, make_app):
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=views("2", "down", "p"))


def test_query_search(snap_compare, make_app):
    """A query no index serves: the stats line says how the search went, in place of the rates."""
    app = make_app()
    app.search_clock = itertools.count(0, 0.2).__next__  # each step "takes" 0.2 s
    assert snap_compare(app, terminal_size=SIZE, run_before=views("slash", *"declined", "enter"))


def test_activity_view_of_one_queue(snap_compare, make_app):
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=views("5", "right"))


def test_80x24_after_an_action(snap_compare, make_app):
    """An 80x24 terminal after an enqueue, the worker run: the command strip and the worker pane a line each,
    the tables closed by the next one's title, the focused pending table with most of the rows."""

    async def run_before(pilot) -> None:
        await show_worker_run(pilot)
        await views("n", *"send-invoice", "tab", *'{"invoice": 78}', "enter")(pilot)
        pilot.app.clear_notifications()  # the toast leaves on a timer
        await pilot.pause()

    app = make_app(worker_id="console-demo:1")
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_help_at_60x20(snap_compare, make_app):
    """The help on a 60x20 terminal: each name begins its text's line, which wraps under it."""
    assert snap_compare(make_app(), terminal_size=(60, 20), run_before=views("question_mark"))
