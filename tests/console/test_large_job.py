"""Regression tests: a large job's detail is bounded, so opening and closing it never freezes the console.

An ~850 KB payload took 24 s to open and 26 s to close; 300 attempts with 10,000-character errors 8 s.
These tests assert on how much text is on screen, not on wall-clock time.
"""

from __future__ import annotations

import peewee as pw
import pytest
from console_helpers import settle

import console.screens.detail as detail_module
from console.detail_text import ATTEMPTS_SHOWN, ERROR_CHARS, PAGE_CHARS, pages
from console.screens.detail import JobDetailScreen
from console.widgets.jobs.table import JobTable

SIZE = (120, 40)
BIG = 850 * 1024
SHOWN_LIMIT = 64 * 1024  # a page, 50 cut errors and the fields: far below this


async def open_detail(pilot, status: str, job_id: int) -> JobDetailScreen:
    while pilot.app.focused.id != status:
        await pilot.press("tab")
    table: JobTable = pilot.app.focused
    table.move_cursor(row=table.get_row_index(str(job_id)), animate=False)
    await pilot.press("enter")
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, JobDetailScreen) and screen.detail is not None
    return screen


async def close_detail(pilot) -> None:
    await pilot.press("escape")
    await settle(pilot)
    assert not isinstance(pilot.app.screen, JobDetailScreen) and pilot.app.is_running


@pytest.mark.asyncio
@pytest.mark.backends("sqlite", "postgresql")
async def test_an_850_kb_payload_is_shown_a_page_at_a_time(make_app, scene):
    lines = [f"line {i:06d} " + "x" * 90 for i in range(BIG // 100)]
    job, _ = scene.create("import-csv", {"rows": lines, "tail": "END-OF-PAYLOAD"})
    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        screen = await open_detail(pilot, "pending", job.id)
        shown = screen.shown_text()
        assert len(shown) < SHOWN_LIMIT
        assert "line 000000" in shown and "END-OF-PAYLOAD" not in shown
        note = str(screen.query_one("#detail-page-note").render())
        assert "page 1 of" in note and "KB more" in note and "m shows the next page" in note

        page_count = len(screen.detail.payload_pages)
        assert page_count >= BIG // PAGE_CHARS
        await pilot.press("m", "m")
        await settle(pilot)
        shown = screen.shown_text()
        assert screen.page_index == 2 and "line 000000" not in shown and len(shown) < SHOWN_LIMIT
        assert "page 3 of" in str(screen.query_one("#detail-page-note").render())
        screen.page_index = page_count - 2  # the last page is bounded too, and holds the payload's tail
        await pilot.press("m")
        await settle(pilot)
        shown = screen.shown_text()
        assert screen.page_index == page_count - 1 and "END-OF-PAYLOAD" in shown and len(shown) < SHOWN_LIMIT
        assert "KB more" not in str(screen.query_one("#detail-page-note").render())
        await pilot.press("b")
        await settle(pilot)
        assert screen.page_index == page_count - 2
        await close_detail(pilot)


@pytest.mark.asyncio
async def test_300_attempts_with_long_errors_show_the_last_50_cut(make_app, scene, scene_clock):
    job, _ = scene.create("flaky-import", {"file": "in.csv"}, max_retries=299, retry_backoff=0)
    for attempt in range(300):
        scene_clock.advance(1)
        assert scene.claim("host-a:1", types=["flaky-import"]).id == job.id
        scene.fail(job.id, f"attempt {attempt + 1} failed: " + "e" * 10_000)
    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        screen = await open_detail(pilot, "failed", job.id)
        shown = screen.shown_text()
        assert len(shown) < SHOWN_LIMIT
        assert "Errors (300 failed attempts)" in shown
        assert f"… {300 - ATTEMPTS_SHOWN} earlier attempts not shown" in shown
        assert "attempt 300 failed" in shown and "attempt 250 failed" not in shown
        assert shown.count("more characters") == ATTEMPTS_SHOWN
        assert "e" * (ERROR_CHARS + 1) not in shown
        await close_detail(pilot)


@pytest.mark.asyncio
async def test_an_older_page_of_attempts_that_cannot_be_read_leaves_the_detail_open(
    make_app, scene, scene_clock, monkeypatch
):
    job, _ = scene.create("flaky-import", {"file": "in.csv"}, max_retries=99, retry_backoff=0)
    for attempt in range(ATTEMPTS_SHOWN + 5):
        scene_clock.advance(1)
        assert scene.claim("host-a:1", types=["flaky-import"]).id == job.id
        scene.fail(job.id, f"attempt {attempt + 1} failed")
    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        screen = await open_detail(pilot, "pending", job.id)

        def locked(*args, **kwargs):
            raise pw.OperationalError("database is locked")

        monkeypatch.setattr(detail_module, "attempt_page", locked)
        await pilot.press("o")  # the older attempts: the database is away
        await settle(pilot)
        assert pilot.app.screen is screen and "attempt 55 failed" in screen.shown_text()  # still shown
        said = [notification.message for notification in pilot.app._notifications]
        assert any("Could not read that page of attempts" in text and "locked" in text for text in said), said
        monkeypatch.undo()
        await pilot.press("o")
        await settle(pilot)
        assert "attempt 1 failed" in screen.shown_text()  # back: the older page
        await close_detail(pilot)


def test_pages_cut_after_a_line_break_and_keep_every_character():
    text = "".join(f"{i:05d}\n" for i in range(10_000))
    cut = pages(text, 1000)
    assert "".join(cut) == text
    assert all(len(page) <= 1000 and page.endswith("\n") for page in cut)
    one_line = "y" * 2500  # no line break: cut at the size
    assert [len(page) for page in pages(one_line, 1000)] == [1000, 1000, 500]
    assert pages("", 1000) == [""]
