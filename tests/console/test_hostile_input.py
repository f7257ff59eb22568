"""Regression tests: keys pressed twice and text that looks like markup never crash the console.

Every string that comes from the database, the command line or the operator is shown as text: a job type
``[/]oops`` or an error ``cannot open [/data/in.csv`` is data, not Textual markup.
"""

from __future__ import annotations

import pytest
from console_helpers import asked_then, screen_lines, settle, wait_for
from textual import events

from console.app import QueueConsole
from console.screens.detail import JobDetailScreen
from console.screens.enqueue import EnqueueScreen
from console.screens.prompt import PromptScreen
from console.widgets.jobs.table import JobTable
from queue_core.store.repository import JobRepository

pytestmark = pytest.mark.asyncio
SIZE = (120, 40)
MARKUP_LOOKALIKES = ("[/]oops", "cannot open [/data/in.csv", "[/x", "web[/1", "[b]bold?[/b]", "[@click=quit]x[/]")


def notifications(app) -> list[str]:
    return [n.message for n in app._notifications]


def failed_job(repo: JobRepository, job_type: str, error: str):
    job, _ = repo.create(job_type, {"note": error}, max_retries=0)
    repo.claim("host-z:1", types=[job_type])
    return repo.fail(job.id, error)


async def press_at_once(pilot, *keys: str) -> None:
    """Keys that arrive together (a fast double press): all sent before the app handles the first."""
    for key in keys:
        event = events.Key(key, "\r" if key == "enter" else key)
        event.set_sender(pilot.app)
        pilot.app._driver.send_message(event)
    await pilot.pause(0.1)  # let them land, and the screen repaint (toasts render then)


async def focus_job(pilot, status: str, job_id: int) -> None:
    while pilot.app.focused.id != status:
        await pilot.press("tab")
    table: JobTable = pilot.app.focused
    table.move_cursor(row=table.get_row_index(str(job_id)), animate=False)
    await pilot.pause()


# --- defect 9: a dialog submits once ------------------------------------------------------------


async def test_enter_twice_in_the_enqueue_form_enqueues_one_job(pilot, scene):
    app = pilot.app
    before = scene.counts()["pending"]
    await pilot.press("n", *"send-invoice")
    await press_at_once(pilot, "enter", "enter")
    await settle(pilot)
    assert app.is_running
    assert scene.counts()["pending"] == before + 1
    assert len(scene.list(type="send-invoice", status="pending", limit=100)) == 10  # the scene's 9, and this one
    assert not isinstance(app.screen, EnqueueScreen)


async def test_enter_twice_in_the_filter_prompt_filters_once(pilot, scene):
    app = pilot.app
    await pilot.press("t", *"send-invoice")
    await press_at_once(pilot, "enter", "enter")
    await settle(pilot)
    assert app.is_running and app.type_filter == "send-invoice"
    assert not isinstance(app.screen, PromptScreen)


async def test_enter_twice_in_the_fail_prompt_fails_once(pilot, scene):
    app = pilot.app
    [running] = [job for job in app.snapshot.rows["running"] if job.id not in app.snapshot.stale_ids][:1]
    await focus_job(pilot, "running", running.id)
    await pilot.press("f")
    await press_at_once(pilot, "enter", "enter")
    await settle(pilot)
    assert app.is_running
    job = scene.find_by_id(running.id)
    assert (job.status, job.retry_count) == ("pending", 1)
    assert len(scene.errors_for(running.id)) == 1


async def test_a_double_close_of_the_detail_and_the_help_closes_once(pilot):
    app = pilot.app
    for opener in ("enter", "question_mark"):
        await pilot.press(opener)
        await settle(pilot)
        assert len(app.screen_stack) == 2
        await press_at_once(pilot, "escape", "escape")
        await settle(pilot)
        assert app.is_running and len(app.screen_stack) == 1


# --- defect 10: data is text, never markup ------------------------------------------------------


async def test_retry_of_a_job_whose_type_looks_like_markup(make_app, scene):
    job = failed_job(scene, "[/]oops", "boom")
    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await focus_job(pilot, "failed", job.id)
        await asked_then(pilot, "r", "y")
        await settle(pilot)
        await pilot.pause(0.1)  # the notification renders
        assert app.is_running
        assert scene.find_by_id(job.id).status == "pending"
        assert any("Retried 1 of 1 failed job" in m for m in notifications(app))


async def test_detail_of_a_job_whose_error_looks_like_markup(make_app, scene):
    job = failed_job(scene, "[b]import[/b]", "cannot open [/data/in.csv")
    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await focus_job(pilot, "failed", job.id)
        await pilot.press("enter")
        await settle(pilot)
        assert app.is_running and isinstance(app.screen, JobDetailScreen)
        shown = app.screen.shown_text()
        assert "cannot open [/data/in.csv" in shown and "[b]import[/b]" in shown
        await pilot.press("escape")
        await settle(pilot)
        assert app.is_running


async def test_markup_typed_in_the_form_is_shown_as_typed(pilot, scene):
    app = pilot.app
    before = scene.counts()
    await pilot.press("n", *"echo", "tab", "tab", "tab", *"[/x", "enter")
    await settle(pilot)
    assert app.is_running and isinstance(app.screen, EnqueueScreen)
    error = str(app.screen.query_one("#form-error").render())
    assert "max_retries" in error and "[/x" in error
    await pilot.press("escape")
    assert scene.counts() == before


async def test_worker_id_that_looks_like_markup(db):
    repo = JobRepository(db)
    job, _ = repo.create("fail", {"error": "cannot open [/data/in.csv"}, max_retries=0)
    app = QueueConsole(repo, refresh_interval=None, db_label="w.db", worker_id="web[/1")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("w")
        await wait_for(pilot, lambda: repo.find_by_id(job.id).status == "failed", "the fail job fails")
        await pilot.pause(0.3)
        assert app.is_running
        assert "web[/1" in str(app.query_one("#worker-state").render())
        await pilot.press("w")
        await wait_for(pilot, lambda: app.worker_pane.state == "stopped", "w stops the worker")
        assert app.is_running


@pytest.mark.backends("sqlite")  # rendering, the same on either backend: the cases above run on both
@pytest.mark.parametrize("text", MARKUP_LOOKALIKES)
async def test_any_markup_lookalike_everywhere_data_is_shown(make_app, scene, text):
    """Type, error, worker, filter and prompt text: every view an operator opens on such a job."""
    job = failed_job(scene, text, text)
    running, _ = scene.create(text, {"x": text}, max_retries=1)
    scene.claim(text, types=[text])
    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await focus_job(pilot, "failed", job.id)
        await pilot.press("enter")
        await settle(pilot)
        assert text in app.screen.shown_text()
        await pilot.press("escape")
        await asked_then(pilot, "r", "y")
        await settle(pilot)
        await focus_job(pilot, "running", running.id)
        await pilot.press("f")
        assert isinstance(app.screen, PromptScreen)
        assert text in str(app.screen.query_one(".explanation").render())
        await pilot.press("escape", "t", *text[:2])  # the type is suggested: shown as text too
        await pilot.pause(0.1)
        await pilot.press(*text[2:], "enter")
        await settle(pilot)
        assert app.type_filter == text and text in app.sub_title
        await pilot.pause()
        assert app.is_running


async def test_a_pasted_control_character_in_the_type_filter_is_said_in_the_prompt(pilot):
    """A paste gone wrong ("send\\x00invoice") became the filter of every refresh: PostgreSQL refuses NUL in a
    bound value, so the header said "disconnected" on every refresh until the filter was changed, and SQLite
    silently showed nothing. No job's type holds one: the prompt says what is wrong, as the query line does."""
    app = pilot.app
    await pilot.press("t")
    app.screen.query_one("#answer").post_message(events.Paste("send\x00invoice"))
    await pilot.press("enter")
    await settle(pilot)
    assert isinstance(app.screen, PromptScreen)  # still open: fix it or escape
    assert "printable" in str(app.screen.query_one("#prompt-error").render())
    assert app.type_filter is None and app._last_refresh_error is None
    await pilot.press("escape")
    assert not isinstance(app.screen, PromptScreen) and app.type_filter is None


QUEUE_LOOKALIKES = ("[/]oops", "[/x", "web[/1", "[b]bold?[/b]", "x\\")  # valid queue names (no "="), 16 columns


@pytest.mark.backends("sqlite")  # rendering, the same on either backend
@pytest.mark.parametrize("text", QUEUE_LOOKALIKES)
async def test_a_queue_name_that_looks_like_markup_on_the_queues_view(make_app, scene, text):
    """The queues view gave the table the name as a plain string, which a DataTable reads as markup: a queue
    "[/]oops" (a valid name) crashed the console with a MarkupError as soon as 2 was pressed, and "[b]bold?[/b]"
    showed as "bold?"."""
    scene.create("echo", {}, queue=text)
    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        assert app.is_running and any(f"│ {text} " in line for line in screen_lines(app))
        table = app.query_one("#queues")
        table.move_cursor(row=table.get_row_index(text), animate=False)
        await asked_then(pilot, "p", "n")
        await pilot.press("enter")  # its jobs: the query queue:"…"
        await settle(pilot)
        assert app.is_running and app.view == "tables" and app.query_one("#pending").row_count == 1


@pytest.mark.backends("sqlite")  # rendering, the same on either backend
@pytest.mark.parametrize("text", QUEUE_LOOKALIKES)
async def test_a_queue_name_that_looks_like_markup_on_the_activity_view(make_app, scene, text):
    """The activity view put the queue picked with → into its title as markup: "[/]oops" crashed the console
    with a MarkupError."""
    scene.create("echo", {}, queue=text)
    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("5")
        await settle(pilot)
        view = app.query_one("#activity")
        for _ in range(len(view.activity.queues) + 1):
            if view.queue == text:
                break
            await pilot.press("right")
        await pilot.pause()
        assert app.is_running and view.queue == text
        assert any(f"Activity · queue {text} · last" in line for line in screen_lines(app))


@pytest.mark.backends("sqlite")  # rendering, the same on either backend
@pytest.mark.parametrize("text", MARKUP_LOOKALIKES)
async def test_a_bulk_action_on_a_query_that_looks_like_markup(make_app, scene, text):
    """The progress dialog of a bulk action put "Retrying 2 failed jobs matching <query>" in a Static as
    markup: a type filter or query "[/]oops" crashed the console with a MarkupError once y was pressed."""
    jobs = [failed_job(scene, text, "boom") for _ in range(2)]
    app = make_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        app._set_filter(text)
        await settle(pilot)
        await focus_job(pilot, "failed", jobs[0].id)
        await pilot.press("a")
        await wait_for(pilot, lambda: app.selection is not None, "a selects the filter's failed jobs")
        question = await asked_then(pilot, "r", "y")
        assert text in question
        await wait_for(pilot, lambda: app.selection is None, "the retry is done")
        await settle(pilot)
        assert app.is_running and [scene.find_by_id(job.id).status for job in jobs] == ["pending", "pending"]
