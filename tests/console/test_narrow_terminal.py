"""An 80x24 terminal: every view's key, every footer key, the throughput and a whole admin-CLI line stay on
screen, and the job tables still show jobs.

Review finding: at 80 columns the view bar ended at "4" (Schedules, Activity and Causes cut off), the footer
at "D Delet" (Reap, Worker, Query, Help and Quit cut off), the counts line lost "failed/min", the command
panel showed half of a command, and with the command panel open the failed table was pushed off the screen.
"""

from __future__ import annotations

import pytest
import pytest_asyncio
from console_helpers import screen_lines, settle, wait_for
from textual.widgets._footer import FooterKey

from console.screenshots import show_worker_run
from console.views import VIEW_BINDINGS
from console.widgets.activity.view import ActivityView
from console.widgets.command_panel import CommandPanel
from console.widgets.jobs.stack import MIN_TABLE_HEIGHT, TableStack, share_height, share_short
from console.widgets.jobs.stats_bar import StatsBar

pytestmark = [pytest.mark.asyncio, pytest.mark.backends("sqlite")]  # layout: the same on either backend
VIEW_KEYS = [binding.key for binding in VIEW_BINDINGS]


@pytest_asyncio.fixture
async def pilot_80(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        yield pilot


def on_screen(app) -> str:
    return "\n".join(screen_lines(app))


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
async def test_every_view_and_every_footer_key_is_on_screen_on_every_view(make_app, size):
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        for key in VIEW_KEYS:
            await pilot.press(key)
            await settle(pilot)
            await pilot.pause()
            text = on_screen(app)
            for binding in VIEW_BINDINGS:
                assert f"{binding.key} {binding.description}" in text, (key, binding.description)
            keys = [key for key in app.query(FooterKey) if key.description]
            assert len(keys) >= 13  # the job keys (and on 5 the queue keys), the palette's
            for footer_key in keys:
                assert f"{footer_key.key_display} {footer_key.description}" in text, (key, footer_key.description)
            assert "done/min" in text and "failed/min" in text, key


async def test_the_whole_command_shows_and_no_table_is_pushed_off_the_screen(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("n", *"send-invoice", "tab", *'{"invoice": 78}', "enter")
        panel = app.query_one(CommandPanel)
        await wait_for(pilot, lambda: panel.display and panel.lines, "the command line")
        await settle(pilot)
        await pilot.pause()
        command = panel.lines[-1]
        assert len(command) > 78  # too long for one line: it wraps
        lines = screen_lines(app)
        inside = panel.content_region  # below 26 rows the strip has no border: its lines are the command's
        shown = " ".join(line[inside.x : inside.right] for line in lines[inside.y : inside.bottom])
        assert " ".join(shown.split()) == "$ " + command
        stack = app.query_one(TableStack)
        for table in stack.tables:  # each at least its border and header, none cut off below the stack
            assert table.region.height >= 3 and table.region.bottom <= stack.region.bottom, table.id
            assert table.region.bottom <= panel.region.y


async def test_tables_too_short_for_their_minimum_share_the_height_there_is():
    heights = share_height(10, [11, 4, 4], minimum=MIN_TABLE_HEIGHT)
    assert sum(heights) == 10 and min(heights) >= 3  # was [5, 5, 5]: the last table drawn below the stack


async def test_a_wrapped_help_line_goes_on_under_its_own_text(pilot_80):
    await pilot_80.press("question_mark")
    await pilot_80.pause()
    lines = screen_lines(pilot_80.app)
    (row,) = [i for i, line in enumerate(lines) if "pending jobs due later" in line]
    assert lines[row + 1].index("back-offs") == lines[row].index("pending jobs due later")


LONG_LABEL = "postgresql://queue:***@db-primary.example.com:5432/jobs?options=-csearch_path%3Dbilling_queue"


async def test_a_long_database_url_never_cuts_the_view_time_or_selection_off_the_header(make_app):
    """With --db a PostgreSQL URL the header ended in "12:…" even at 140 columns: the label came first and the
    header cut the end, the view, the query, the time and "N selected" with it. The label gives way instead,
    cut in the middle, and grows back when the terminal does."""
    app = make_app(db_label=LONG_LABEL)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        header = screen_lines(app)[0]
        assert (
            "— postgre" in header and "…" in header and header.rstrip().endswith("Jobs · all types · 12:00:00 UTC")
        ), header
        await pilot.resize_terminal(120, 40)
        await pilot.press("space")  # one job selected: the header says so
        await settle(pilot)
        header = screen_lines(app)[0]
        assert "…" in header and header.rstrip().endswith("Jobs · all types · 12:00:00 UTC · 1 selected"), header
        await pilot.resize_terminal(200, 40)
        await settle(pilot)
        await pilot.pause()
        assert LONG_LABEL in screen_lines(app)[0]


async def test_below_80x24_tab_moves_only_among_the_tables_on_screen(make_app):
    """At 60x20 the failed table was drawn under the worker pane, out of sight, and tab still moved the cursor
    there: r or enter then acted on a job nobody could see. A table with no room is hidden and tab skips it;
    the one focused before the terminal shrank stays on screen."""
    app = make_app()
    async with app.run_test(size=(60, 20)) as pilot:
        await settle(pilot)
        stack = app.query_one(TableStack)
        focused = []
        for _ in range(4):
            await pilot.press("tab")
            await pilot.pause()
            table = app.focused
            focused.append(table.id)
            assert table.display and table.region.bottom <= stack.region.bottom, table.id
            assert any(line.startswith(f"╭─ {table.title} ") for line in screen_lines(app)), table.id
        assert focused == ["running", "pending", "running", "pending"]
        assert not app.query_one("#failed").display
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        await pilot.press("tab", "tab")  # failed, with room again
        await pilot.resize_terminal(60, 20)
        await pilot.pause()
        assert app.focused.id == "failed" and app.focused.display
        assert [table.id for table in stack.shown_tables] == ["pending", "failed"]


async def test_at_80_columns_the_header_keeps_the_time_the_query_and_the_selection(make_app):
    """With a query and a selection the 80-column header ended in "12:00:00 UTC · 2 sel…", and with a type
    filter too the time was gone: the label, "all types" and the view (the view bar shows it) give way first,
    then the query and the type are cut in their middle."""
    app = make_app(db_label=LONG_LABEL)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"type:send-invoice status:pending", "enter")
        await settle(pilot)
        await pilot.press("space", "down", "space")
        await settle(pilot)
        await pilot.pause()
        header = screen_lines(app)[0].rstrip()
        assert header.endswith("— query type:send-invoi…status:pending · 12:00:00 UTC · 2 selected"), header
        assert len(header) <= 80 and "queue-core — " in header
        await pilot.press("t", *"send-invoice", "enter")
        await settle(pilot)
        await pilot.pause()
        header = screen_lines(app)[0].rstrip()
        assert header.endswith("— type send-invoice · query type:send-i…tus:pending · 12:00:00 UTC"), header


async def test_below_80x24_an_empty_table_gives_way_to_one_with_jobs(make_app, scene):
    for job in scene.list("running"):  # none running: the running table is empty
        scene.cancel(job.id)
        scene.fail(job.id, "stopped", worker_id=job.worker_id, attempt=job.attempt)
    app = make_app()
    async with app.run_test(size=(60, 20)) as pilot:
        await settle(pilot)
        assert app.snapshot.counts["running"] == 0 and app.snapshot.counts["failed"] > 0
        assert [table.id for table in app.query_one(TableStack).shown_tables] == ["pending", "failed"]
        await pilot.press("tab")
        assert app.focused.id == "failed"


def rows_on_screen(app, table) -> int:
    """Job rows of ``table`` the terminal shows: its lines inside the border, less the header."""
    inside = table.content_region.intersection(app.screen.region)
    return max(0, inside.height - 1)


@pytest.mark.parametrize("worker", [False, True])
async def test_at_80x24_after_an_action_the_job_tables_still_show_jobs(make_app, worker):
    """At 80x24 the command strip after an action (and the worker pane's border) left every job table one
    row: the pending table showed its title, its header and one job. Below 26 rows the strip and the worker
    pane are a line each, the tables close on the next one's title, and the focused table comes first."""
    app = make_app(worker_id="console-demo:1")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        if worker:
            await show_worker_run(pilot)
        await pilot.press("n", *"send-invoice", "tab", *'{"invoice": 78}', "enter")  # a command of two lines
        panel = app.query_one(CommandPanel)
        await wait_for(pilot, lambda: panel.display and panel.lines, "the command line")
        await settle(pilot)
        await pilot.pause()
        pending, running, failed = app.query_one(TableStack).tables
        assert rows_on_screen(app, pending) >= 5, [line for line in screen_lines(app)]
        assert rows_on_screen(app, running) >= 1 and rows_on_screen(app, failed) >= 1
        assert failed.region.bottom <= panel.region.y
        await pilot.press("tab")  # the running table now comes first: all its jobs, and a row of the others
        await pilot.pause()
        assert rows_on_screen(app, running) == running.row_count
        assert rows_on_screen(app, pending) >= 1 and rows_on_screen(app, failed) >= 1


async def test_tables_too_short_for_three_rows_each_give_the_focused_one_its_rows_first():
    # border and header (2), then a row each, the focused table all its rows, the rest to the others
    assert share_short(16, [24, 7, 7], [2, 2, 2], focused=0) == [10, 3, 3]
    assert share_short(16, [24, 7, 7], [2, 2, 2], focused=1) == [5, 7, 4]  # the others share what is left
    assert share_short(9, [24, 7, 1], [2, 2, 2], focused=0) == [5, 3, 1]  # an empty table: its title
    assert share_short(5, [24, 7, 7], [2, 2, 2], focused=2) == [2, 1, 2]  # not even a row: the focused one's


async def test_at_60_columns_the_counts_break_between_two_statuses(make_app):
    """At 60 columns the counts wrapped as text: "… · completed 30" then "· cancelled 1" on the next line."""
    app = make_app()
    async with app.run_test(size=(60, 20)) as pilot:
        await settle(pilot)
        await pilot.pause()
        stats = app.query_one(StatsBar).content_region
        lines = [line[stats.x : stats.right].strip() for line in screen_lines(app)[stats.y : stats.bottom]]
        assert lines == [
            "pending 20 · running 4 ⚠ 1 stale · failed 4 · completed 30",
            "cancelled 1 │ 6.0 done/min · 1.4 failed/min",
        ]


async def test_at_60_columns_the_help_gives_its_text_the_width_of_the_name_column(make_app):
    """At 60x20 the help's text had 22 columns beside the key and the name: "pending, running and" /
    "failed jobs, live", each key three or four lines. Narrow, the name begins the text's line."""
    app = make_app()
    async with app.run_test(size=(60, 20)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        lines = [line.strip("█▂▃▄▅▆▇ ") for line in screen_lines(app)]
        assert any(" ".join(line.split()) == "1 Jobs pending, running and failed jobs, live" for line in lines), lines
        (row,) = [i for i, line in enumerate(lines) if line.startswith("s ")]
        assert lines[row + 1].strip() == "back-offs"  # the rest of its text, and the next key right after
        assert lines[row + 2].startswith("d ") and "Completed  completed jobs" in lines[row + 2]
        await pilot.resize_terminal(100, 30)  # wide again: the names in a column of their own
        await pilot.pause()
        wide = [line.strip("█▂▃▄▅▆▇ ") for line in screen_lines(app)]
        assert any(line.startswith("1") and "Jobs            pending" in line for line in wide), wide


async def test_at_80x24_the_activity_view_shows_all_four_charts(pilot_80):
    """At 80x24 the activity view showed the completed and failed charts; enqueued and latency were below its
    edge, with a scrollbar track to say so. Below 26 rows each chart is two lines and all four fit."""
    app = pilot_80.app
    await pilot_80.press("x")  # an action: the command strip takes its line too
    await settle(pilot_80)
    await pilot_80.press("5")
    await settle(pilot_80)
    await pilot_80.pause()
    view = app.query_one(ActivityView)
    assert view.max_scroll_y == 0
    for name in ("completed", "failed", "enqueued", "latency"):
        for part in (f"#{name}-label", f"#{name}-chart"):
            region = app.query_one(part).region
            assert region.height and view.content_region.contains_region(region), part


async def test_a_table_that_needs_less_than_the_minimum_gets_what_it_needs():
    """At 80x24 with one running job and no failed one, the minimum of five lines gave the empty failed table
    two blank rows and the running table a blank one, and the pending table (26 jobs) three rows."""
    assert share_height(16, [26, 4, 3], minimum=MIN_TABLE_HEIGHT) == [9, 4, 3]  # was [6, 5, 5]
    assert share_height(40, [23, 7, 7], minimum=MIN_TABLE_HEIGHT) == [26, 7, 7]  # as before: each what it needs
