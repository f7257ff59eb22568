"""At 80 columns (the documented minimum) the job tables and the Queues, Causes, Workers and Schedules tables
fit the terminal.

Review finding: at 80x24 both ran past the right edge: the Queues table showed "cance" at its edge and hid
latency and the rates, the Causes table showed "t" of "types" and hid when a cause was last seen, so the
operator pressed → to read them. Now the low-value columns give way and the cause is cut with "…".
"""

from __future__ import annotations

import pytest
from console_helpers import screen_lines, settle

from console.demo import add_failure_causes
from console.widgets.failures.table import FailuresTable
from console.widgets.jobs.table import JobTable
from console.widgets.keyed_table import fit_columns
from console.widgets.queues.table import QueuesTable
from console.widgets.schedules.view import SchedulesView
from console.widgets.workers.table import WorkersTable
from queue_core.tasks import Schedule

pytestmark = [pytest.mark.asyncio, pytest.mark.backends("sqlite")]  # layout: the same on either backend

QUEUE_HEADERS = ["queue", "state", "pending", "running", "failed", "latency", "done/m", "fail/m"]
CAUSE_HEADERS = ["jobs", "cause (error signature)", "types", "last seen"]


def fits(table) -> bool:
    """Every column inside the table's border: nothing to scroll to on the right."""
    return table.virtual_size.width <= table.scrollable_content_region.width and table.max_scroll_x == 0


async def shown(pilot, key: str | None = None, *, resize: tuple[int, int] | None = None) -> None:
    """The view of ``key``, or the terminal at ``resize``, on screen with its columns laid out."""
    if key is not None:
        await settle(pilot)
        await pilot.press(key)
    if resize is not None:
        await pilot.resize_terminal(*resize)
    await settle(pilot)
    await pilot.pause()


def header_line(app, table) -> str:
    return screen_lines(app)[table.region.y + 1]


async def test_at_80_columns_the_queues_table_fits_and_keeps_what_an_operator_needs(make_app):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await shown(pilot, "2")
        table = app.query_one(QueuesTable)
        assert fits(table), (table.virtual_size.width, table.scrollable_content_region.width)
        header = header_line(app, table)
        assert header.split() == ["│", *QUEUE_HEADERS, "│"], header
        (reports,) = [line for line in screen_lines(app) if "reports" in line]
        assert "paused" in reports and reports.rstrip().endswith("│"), reports
        await shown(pilot, resize=(120, 40))  # room again: completed and cancelled come back
        assert fits(table)
        header = header_line(app, table)
        assert "completed" in header and "cancelled" in header and "fail/m" in header, header


async def test_at_80_columns_the_causes_table_fits_and_cuts_the_cause_with_an_ellipsis(make_app, scene, scene_clock):
    add_failure_causes(scene, scene_clock)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await shown(pilot, "6")
        table = app.query_one(FailuresTable)
        assert table.row_count >= 2
        assert fits(table), (table.virtual_size.width, table.scrollable_content_region.width)
        header = header_line(app, table)
        assert all(label in header for label in CAUSE_HEADERS) and "first seen" not in header, header
        rows = screen_lines(app)[table.region.y + 2 : table.region.y + 2 + table.row_count]
        assert any("…" in row for row in rows), rows  # a long cause, cut where the column ends
        assert all(row.rstrip(" │").endswith(" ago") for row in rows), rows  # each row's last seen on screen
        await pilot.press("down")
        key = table.selected_key
        await shown(pilot, resize=(120, 40))
        assert "first seen" in header_line(app, table) and table.selected_key == key  # the cursor stays put


@pytest.mark.parametrize(
    ("key", "table_type", "kept", "left_out", "options"),
    [
        # Review finding: at 80x24 the Workers table showed "st" of "started" at its edge and hid the
        # running and done counts; the Schedules table hid when each schedule runs next.
        ("3", WorkersTable, ["worker", "queues", "slots", "state", "last seen", "running"], ["host", "pid"], {}),
        (
            "4",
            SchedulesView,
            ["name", "cron", "last run", "next run"],
            ["last job", "type"],
            {"schedules": [Schedule(name="nightly-report-for-every-region", cron="0 3 * * *", type="report")]},
        ),
    ],
    ids=["workers", "schedules"],
)
async def test_at_80_columns_the_workers_and_schedules_tables_fit(make_app, key, table_type, kept, left_out, options):
    app = make_app(**options)
    async with app.run_test(size=(80, 24)) as pilot:
        await shown(pilot, key)
        table = app.query_one(table_type)
        assert table.row_count >= 1
        assert fits(table), (table.virtual_size.width, table.scrollable_content_region.width)
        header = header_line(app, table)
        assert header.split("│")[1].split() == [word for label in kept for word in label.split()], header
        assert not any(label in header for label in left_out), header
        await shown(pilot, resize=(140, 40))  # room again: every column comes back
        assert fits(table) and all(label in header_line(app, table) for label in kept + left_out)


# Review finding: at 80 columns every job table cut the worker column at the edge and hid the latest error,
# the one thing the Failed table is for. In each state the columns that say least there give way.
JOB_HEADERS = {
    "1": {
        "pending": ["id", "type", "queue", "priority", "retries", "age / due"],
        "running": ["id", "type", "queue", "priority", "running", "worker"],
        "failed": ["id", "type", "retries", "failed", "latest error"],
    },
    "d": {"completed": ["id", "type", "queue", "priority", "finished", "worker"]},
    "k": {"cancelled": ["id", "type", "retries", "cancelled", "latest error"]},
}
ALL_JOB_HEADERS = ["id", "type", "queue", "priority", "retries", "worker", "latest error"]


def words(labels: list[str]) -> list[str]:
    return [word for label in labels for word in label.split()]


def row_lines(app, table) -> list[str]:
    """The table's rows as the terminal shows them (the rows in view)."""
    top = table.region.y + 2
    return screen_lines(app)[top : min(top + table.row_count, table.region.bottom - 1)]


async def test_at_80_columns_the_job_tables_fit_and_keep_what_each_state_needs(make_app, scene):
    app = make_app()
    async with app.run_test(size=(80, 40)) as pilot:
        for key, tables in JOB_HEADERS.items():
            await shown(pilot, key)
            for status, labels in tables.items():
                table = app.query_one(f"#{status}", JobTable)
                assert table.row_count >= 1, status
                assert fits(table), (status, table.virtual_size.width, table.scrollable_content_region.width)
                header = header_line(app, table)
                assert header.split("│")[1].split() == words(labels), header
        await shown(pilot, "1")
        failed = app.query_one("#failed", JobTable)
        failed_errors = {row.key.value: scene.find_by_id(int(row.key.value)).error for row in failed.ordered_rows}
        rows = row_lines(app, failed)
        assert rows and all(line.split()[1] in failed_errors for line in rows), rows
        for line in rows:  # each failure's error on screen, its start at least (a long one ends in "…")
            error = failed_errors[line.split()[1]]
            assert error[:15] in line and (error in line or "…" in line), (error, line)
        running = app.query_one("#running", JobTable)
        workers = {scene.find_by_id(int(row.key.value)).worker_id for row in running.ordered_rows}
        assert all(line.rstrip(" │").split()[-1] in workers for line in row_lines(app, running))
        app.set_focus(failed)
        await pilot.press("down")
        job_id = failed.selected_job_id
        await shown(pilot, resize=(120, 40))  # room again: every column comes back, the cursor stays put
        for status in ("pending", "running", "failed"):
            table = app.query_one(f"#{status}", JobTable)
            assert fits(table) and words(ALL_JOB_HEADERS) == [
                word for word in header_line(app, table).split() if word in words(ALL_JOB_HEADERS)
            ], header_line(app, table)
        assert failed.selected_job_id == job_id and job_id is not None


@pytest.mark.parametrize(
    ("room", "expected"),
    [
        (88, (("a", 20), ("flex", 40), ("b", 10), ("c", 10))),  # all of it, flex at its full width
        (117, (("a", 20), ("flex", 69), ("b", 10), ("c", 10))),  # room to spare: flex takes it
        (80, (("a", 20), ("flex", 32), ("b", 10), ("c", 10))),  # flex narrower
        (70, (("a", 20), ("flex", 34), ("c", 10))),  # b gives way before flex goes below its minimum
        (56, (("a", 20), ("flex", 32))),  # then c
        (40, (("a", 20), ("flex", 30))),  # no room even so: flex keeps its minimum and the table scrolls
    ],
)
async def test_fit_columns_narrows_the_flex_column_then_leaves_columns_out(room, expected):
    columns = (("a", 20), ("flex", 40), ("b", 10), ("c", 10))
    assert fit_columns(columns, room, "flex", 30, ("b", "c"), pad=2) == expected


@pytest.mark.parametrize(
    ("room", "expected"),
    [
        (117, (("a", 20), ("flex", 40), ("b", 10), ("c", 39))),  # the spare room goes to the growing column
        (70, (("a", 20), ("flex", 34), ("c", 10))),  # narrower: it is the flex column that narrows
        (56, (("a", 20), ("flex", 32))),  # the growing column gave way: flex takes what there is
    ],
)
async def test_fit_columns_gives_the_room_to_spare_to_the_growing_column(room, expected):
    """Review finding: on a 200-column terminal the Failed table cut each error at 24 characters, with 110
    empty columns beside it (and queue and schedule names likewise): a wide terminal shows more of them."""
    columns = (("a", 20), ("flex", 40), ("b", 10), ("c", 10))
    assert fit_columns(columns, room, "flex", 30, ("b", "c"), pad=2, grow="c") == expected


async def test_on_a_wide_terminal_the_failed_table_shows_more_of_each_error(make_app, scene):
    """At 200 columns each latest error was still cut at 24 characters, with 110 empty columns beside it:
    the one thing the Failed table is for. The error column takes the room; at 120 it is as it was."""
    failed = scene.list(status="failed")
    errors = {job.id: job.error.splitlines()[0] for job in failed}
    assert max(len(error) for error in errors.values()) > 40, errors  # the scene's errors are long enough
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await shown(pilot)
        table = app.query_one("#failed", JobTable)
        narrow = dict(table.shown_columns)["error"]
        await shown(pilot, resize=(200, 40))
        wide = dict(table.shown_columns)["error"]
        assert fits(table) and wide >= narrow + 80, (narrow, wide)
        lines = screen_lines(app)
        for error in errors.values():
            assert any(error[: wide - 1] in line for line in lines), error
