"""Pilot tests: real key presses, then a look at the database."""

from __future__ import annotations

import peewee as pw
import pytest
from console_helpers import asked_then, settle

import console.app
from console.screens.detail import JobDetailScreen
from console.screens.enqueue import EnqueueScreen
from console.screens.help import HelpScreen
from console.screens.prompt import PromptScreen
from console.widgets.jobs.stats_bar import StatsBar
from console.widgets.jobs.table import JobTable

pytestmark = pytest.mark.asyncio


async def focus_table(pilot, status: str) -> tuple[JobTable, int | None]:
    """Tab to the ``status`` table; returns it and the job under its cursor."""
    while pilot.app.focused.id != status:
        await pilot.press("tab")
    return pilot.app.focused, pilot.app.focused.selected_job_id


def notifications(app) -> list[str]:
    return [n.message for n in app._notifications]


@pytest.mark.backends("sqlite", "postgresql")
async def test_enqueue_through_the_form(pilot, scene):
    app = pilot.app
    await pilot.press("n")
    assert isinstance(app.screen, EnqueueScreen)
    assert app.focused.id == "type"  # the type field has focus when the form opens
    await pilot.press(*"send-invoice", "tab", *'{"invoice": 77}')  # a focused field's text is selected: replaced
    await pilot.press("tab", "down", "down", "down", "enter")  # priority: open the list, low -> medium -> high
    await pilot.press("tab", "backspace", "5", "tab", *"inv-77", "enter")
    await settle(pilot)
    assert not isinstance(app.screen, EnqueueScreen)
    job = scene.find_by_idempotency_key("inv-77")
    assert (job.type, job.payload, job.priority_label) == ("send-invoice", {"invoice": 77}, "high")
    assert job.max_retries == 5
    assert job.status == "pending"
    assert str(job.id) in [row.key.value for row in app.query_one("#pending", JobTable).ordered_rows]
    assert any(f"Enqueued job {job.id}" in message for message in notifications(app))


async def test_invalid_form_input_writes_nothing_and_says_why(pilot, scene):
    app = pilot.app
    before = scene.counts()
    await pilot.press("n", *"echo", "tab", *"{oops", "enter")
    assert isinstance(app.screen, EnqueueScreen)
    error = str(app.screen.query_one("#form-error").render())
    assert "payload" in error and "JSON" in error
    assert app.focused.id == "payload" and app.focused.has_class("-invalid")

    await pilot.press("home", "shift+end", *"[1, 2]", "enter")  # JSON, but not an object
    assert "payload: must be a JSON object" in str(app.screen.query_one("#form-error").render())

    await pilot.press("home", "shift+end", *"{}", "tab", "tab", *"lots", "enter")
    assert "max_retries" in str(app.screen.query_one("#form-error").render())
    for text in ("--1", "²"):  # look like digits to str.isdigit, are not ints
        await pilot.press("home", "shift+end", *text, "enter")
        assert "max_retries" in str(app.screen.query_one("#form-error").render())

    await pilot.press("escape")
    assert not isinstance(app.screen, EnqueueScreen)
    assert scene.counts() == before


async def test_max_retries_in_other_digits_is_refused_not_read(pilot, scene):
    """int() reads "１" (full-width) as 1 and "1_000" as 1000: the form enqueued a job with max retries the
    operator never typed. The admin CLI refuses them (whole_number); so does the form, writing nothing."""
    app = pilot.app
    before = scene.counts()
    await pilot.press("n", *"echo", "tab", "tab", "tab")
    assert app.focused.id == "max_retries"
    for text in ("１", "1_000", "1_0", "+3", "٣"):
        await pilot.press("home", "shift+end", *text, "enter")
        await settle(pilot)
        assert isinstance(app.screen, EnqueueScreen), text
        error = str(app.screen.query_one("#form-error").render())
        assert "max_retries" in error and "ASCII digits" in error and repr(text) in error, error
        assert app.focused.id == "max_retries"
    assert scene.counts() == before
    await pilot.press("home", "shift+end", "7", "tab", *"ascii-7", "enter")  # plain digits still enqueue
    await settle(pilot)
    assert scene.find_by_idempotency_key("ascii-7").max_retries == 7


@pytest.mark.backends("sqlite", "postgresql")
async def test_retry_a_failed_job(pilot, scene):
    app = pilot.app
    table, job_id = await focus_table(pilot, "failed")
    assert scene.find_by_id(job_id).status == "failed"
    assert await asked_then(pilot, "r", "y") == f"Retry failed job {job_id}?"
    await settle(pilot)
    job = scene.find_by_id(job_id)
    assert (job.status, job.retry_count) == ("pending", 0)
    assert str(job_id) not in [row.key.value for row in table.ordered_rows]
    assert str(job_id) in [row.key.value for row in app.query_one("#pending", JobTable).ordered_rows]


async def test_actions_on_the_wrong_kind_of_job_say_why(pilot, scene):
    app = pilot.app
    before = scene.counts()
    pending_id = app.query_one("#pending", JobTable).selected_job_id
    await pilot.press("r")  # the pending table has focus
    await pilot.press("f")
    await pilot.pause()
    messages = notifications(app)
    assert any(f"Retry works on failed or cancelled jobs; job {pending_id} is pending" in m for m in messages), messages
    assert any(f"Fail works on running jobs; job {pending_id} is pending" in m for m in messages), messages
    assert not isinstance(app.screen, PromptScreen)
    assert scene.counts() == before


@pytest.mark.backends("sqlite", "postgresql")
async def test_fail_a_running_job_with_a_reason(pilot, scene):
    app = pilot.app
    _table, job_id = await focus_table(pilot, "running")
    await pilot.press("f")
    assert isinstance(app.screen, PromptScreen)
    assert "retries 0/3" in app.screen.explanation and "goes back to pending" in app.screen.explanation
    assert "handler is not interrupted" in app.screen.explanation  # the run goes on; only c asks it to stop
    await pilot.press("home", "shift+end", *"stuck on a lock", "enter")
    await settle(pilot)
    job = scene.find_by_id(job_id)
    # max_retries 3: a failed attempt goes back to pending, as a worker's fail would.
    assert (job.status, job.retry_count, job.error) == ("pending", 1, "stuck on a lock")
    assert scene.errors_for(job_id)[-1].error == "stuck on a lock"
    assert any(f"Job {job_id} failed attempt 1; re-enqueued" in m for m in notifications(app))


async def test_escape_on_the_fail_prompt_changes_nothing(pilot, scene):
    _table, job_id = await focus_table(pilot, "running")
    await pilot.press("f", "escape")
    await settle(pilot)
    assert scene.find_by_id(job_id).status == "running"


@pytest.mark.backends("sqlite", "postgresql")
async def test_reap_takes_back_the_stale_claim(pilot, scene):
    app = pilot.app
    assert app.snapshot.stale_count == 1
    [stale_id] = app.snapshot.stale_ids
    running = app.query_one("#running", JobTable)
    marked = [row.key.value for row in running.ordered_rows if str(running.get_cell(row.key, "time")).startswith("⚠")]
    assert marked == [str(stale_id)]  # the stale claim, and only it, carries the marker
    assert "1 stale" in str(running.border_title) and "1 stale" in str(app.query_one("#stats").render())
    await pilot.press("x")
    await settle(pilot)
    job = scene.find_by_id(stale_id)
    assert (job.status, job.retry_count) == ("pending", 1) and "lost its claim" in job.error
    assert scene.counts()["running"] == 3
    assert any("Reaped 1 stale claim" in m for m in notifications(app))
    await pilot.press("x")
    await settle(pilot)  # the reap answers from its thread worker
    assert any("No stale claims" in m for m in notifications(app))


async def test_cursor_stays_on_its_job_across_refreshes(pilot, scene):
    app = pilot.app
    table = app.query_one("#pending", JobTable)
    await pilot.press("down", "down", "down")
    chosen = table.selected_job_id
    assert table.cursor_row == 3
    scene.create("urgent", priority="critical")  # sorts above the chosen job, after the critical one there
    scene.create("urgent", priority="critical")
    app.request_refresh()
    await settle(pilot)
    assert table.selected_job_id == chosen and table.cursor_row == 5
    first = [row.key.value for row in table.ordered_rows][:3]
    assert [scene.find_by_id(int(key)).type for key in first] == ["charge-card", "urgent", "urgent"]


async def test_detail_shows_payload_and_every_attempt(pilot, scene):
    app = pilot.app
    _table, job_id = await focus_table(pilot, "failed")
    await pilot.press("enter")
    assert isinstance(app.screen, JobDetailScreen) and app.screen.job_id == job_id
    await settle(pilot)  # the job is read on a thread worker
    text = app.screen.shown_text()
    assert "attempt 1" in text and "attempt 3" in text and "Errors (3 failed attempts)" in text
    await pilot.press("escape")
    assert not isinstance(app.screen, JobDetailScreen)


async def test_filter_by_type(pilot, scene):
    app = pilot.app
    await pilot.press("t", *"send-invoice", "enter")
    await settle(pilot)
    assert app.type_filter == "send-invoice"
    shown = [job.type for status in ("pending", "running", "failed") for job in app.snapshot.rows[status]]
    assert shown and set(shown) == {"send-invoice"}
    assert app.snapshot.counts == scene.counts(type="send-invoice")
    await pilot.press("t", "home", "shift+end", "backspace", "enter")
    await settle(pilot)
    assert app.type_filter is None and app.snapshot.counts == scene.counts()


async def test_help_lists_every_key_and_the_palette_has_every_action(pilot):
    app = pilot.app
    await pilot.press("question_mark")
    assert isinstance(app.screen, HelpScreen)
    text = app.screen.keys_text()
    for binding in app.BINDINGS:
        assert binding.description in text and (binding.key_display or binding.key) in text
    await pilot.press("escape")
    titles = [command.title for command in app.get_system_commands(app.screen)]
    for binding in app.BINDINGS:
        assert titles.count(binding.description) == 1


async def test_footer_help_and_palette_name_every_key_alike(pilot):
    """One list, BINDINGS (each with a description, an id and a tooltip), read by all three: no key is missing
    from one of them or named differently there."""
    app = pilot.app
    assert all(binding.description and binding.id and binding.tooltip for binding in app.BINDINGS)
    assert len({binding.id for binding in app.BINDINGS}) == len(app.BINDINGS)
    ours = {binding.action: binding.description for binding in app.BINDINGS}
    footer = {key.action: key.description for key in app.query("FooterKey")}
    assert footer.pop("command_palette") == "palette"  # Textual's own; the help lists it under "ctrl+p"
    # The view keys are in the view bar under the header (the footer has no room for 30 keys), a few others
    # only in the help and the palette (issue 16's selection keys, tab, t), the rest in the footer.
    bar = str(app.query_one("#view-bar").render())
    view_bindings = [binding for binding in app.BINDINGS if binding.id.startswith("view-")]
    views = {binding.action for binding in view_bindings}
    unshown = {binding.action for binding in app.BINDINGS if not binding.show and binding.action not in views}
    assert unshown == {"toggle_select", "select_all", "toggle_commands", "filter", "next_table"}
    assert footer == {action: text for action, text in ours.items() if action not in views | unshown}
    assert views and all(f"{binding.key} {binding.description}" in bar for binding in view_bindings)
    assert all(not binding.show for binding in view_bindings)
    palette = {command.title for command in app.get_system_commands(app.screen)}
    assert set(ours.values()) <= palette
    await pilot.press("question_mark")
    help_text = app.screen.keys_text()
    assert all(description in help_text for description in ours.values())


async def test_palette_runs_an_action_by_name(pilot, scene):
    app = pilot.app
    _table, job_id = await focus_table(pilot, "failed")
    await pilot.press("ctrl+p")
    await pilot.pause()
    await pilot.press(*"Retry")
    for _ in range(50):  # the palette searches in the background
        await pilot.pause(0.02)
        if app.screen.query("CommandList Option"):
            break
    await pilot.press("enter")
    await settle(pilot)
    await pilot.press("y")  # the palette's Retry asks first, as the key does
    await settle(pilot)
    assert scene.find_by_id(job_id).status == "pending"


async def test_database_trouble_is_a_notification_not_a_traceback(pilot, scene, monkeypatch):
    app = pilot.app
    table, job_id = await focus_table(pilot, "failed")

    def locked(*args, **kwargs):
        raise pw.OperationalError("database is locked")

    monkeypatch.setattr(app.repo, "apply_bulk", locked)
    monkeypatch.setattr(console.app, "load_snapshot", locked)
    await asked_then(pilot, "r", "y")
    await settle(pilot)
    messages = notifications(app)
    assert any("Could not retry: database is locked" in m for m in messages), messages
    assert any("Cannot read the queue: OperationalError: database is locked" in m for m in messages), messages
    assert app.is_running and scene.find_by_id(job_id).status == "failed"
    assert str(job_id) in [row.key.value for row in table.ordered_rows]  # the last good data stays on screen


async def test_clicking_the_highlighted_row_opens_its_detail(pilot):
    app = pilot.app
    table = app.query_one("#pending", JobTable)
    await pilot.click("#pending", offset=(3, 2))  # border, header, then the first row: under the cursor
    await pilot.pause()
    assert isinstance(app.screen, JobDetailScreen) and app.screen.job_id == table.selected_job_id


async def test_a_database_error_while_enqueueing_keeps_the_form_and_says_why(pilot, scene, monkeypatch):
    app = pilot.app
    before = scene.counts()

    def gone(*args, **kwargs):
        raise pw.InterfaceError("connection already closed")

    monkeypatch.setattr(app.repo, "create", gone)
    await pilot.press("n", *"echo", "enter")
    await settle(pilot)  # the create answers from its thread worker
    assert isinstance(app.screen, EnqueueScreen) and app.is_running
    assert "database error: connection already closed" in str(app.screen.query_one("#form-error").render())
    assert scene.counts() == before


async def test_any_error_in_a_refresh_is_reported_and_refreshing_goes_on(pilot, scene, monkeypatch):
    app = pilot.app
    real = console.app.load_snapshot
    calls = []

    def lost_connection(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise pw.InterfaceError("connection already closed")  # not a pw.DatabaseError
        return real(*args, **kwargs)

    monkeypatch.setattr(console.app, "load_snapshot", lost_connection)
    app.request_refresh()
    await settle(pilot)
    assert any("Cannot read the queue: InterfaceError" in m for m in notifications(app)), notifications(app)
    job, _ = scene.create("echo")
    app.request_refresh()  # the next refresh runs: the first failure did not leave it "loading" forever
    await settle(pilot)
    assert len(calls) == 2 and str(job.id) in [
        row.key.value for row in app.query_one("#pending", JobTable).ordered_rows
    ]


async def test_detail_of_a_job_gone_or_unreadable_says_so_and_closes(pilot, scene, monkeypatch):
    app = pilot.app
    job_id = app.query_one("#pending", JobTable).selected_job_id
    monkeypatch.setattr(app.repo, "find_by_id", lambda job_id: None)  # pruned between refresh and enter
    await pilot.press("enter")
    await settle(pilot)
    assert not isinstance(app.screen, JobDetailScreen)
    assert any(f"Job {job_id} is gone (pruned)" in m for m in notifications(app))

    def locked(job_id):
        raise pw.OperationalError("database is locked")

    monkeypatch.setattr(app.repo, "find_by_id", locked)
    await pilot.press("enter")
    await settle(pilot)
    assert app.is_running and not isinstance(app.screen, JobDetailScreen)
    assert any(f"Could not read job {job_id}: OperationalError: database is locked" in m for m in notifications(app))


async def test_the_form_on_an_80x24_terminal_scrolls_to_each_field_and_to_its_error(make_app, scene):
    """At 80x24 the form showed its fields down to the idempotency key only: queue, delay, the buttons and
    the error line were below the screen's edge, and enter on a bad delay seemed to do nothing."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("n", *"echo", *["tab"] * 6)
        screen = app.screen
        assert isinstance(screen, EnqueueScreen) and app.focused.id == "delay"

        def visible(widget) -> bool:
            return bool(screen.find_widget(widget).visible_region)

        await settle(pilot)
        assert visible(app.focused)  # tab scrolled the dialog down to it
        await pilot.press(*"zz", "enter")
        await settle(pilot)
        error = screen.query_one("#form-error")
        assert "delay" in str(error.render()) and visible(error)
        dialog = screen.query_one("#dialog")
        assert dialog.outer_size.width <= 80


async def test_x_also_takes_back_the_jobs_of_a_worker_shown_lost(make_app, scene, scene_clock):
    """A SIGKILLed worker shows lost (silent past its own --stale-after) long before its jobs are stale by
    the console's 300 s: x found "No stale claims" while the workers view said lost."""
    scene.register_worker("killed", host="h", pid=9, queues=None, concurrency=1, stale_after=5)
    job = scene.claim("killed")
    scene_clock.advance(10)
    app = make_app()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("x")
        await settle(pilot)
        assert scene.find_by_id(job.id).status == "pending"
        assert any("1 job of lost worker killed" in m for m in notifications(app)), notifications(app)
        assert "--lost" in app.query_one("#commands").lines[-1]


async def test_the_rates_say_they_are_of_all_jobs_when_the_counts_beside_them_are_narrowed(pilot, scene):
    """The counts honour the type filter and the query, the rates do not (they are the whole queue's): beside
    "failed 1" of one type, "1.4 failed/min" read as that type's. They say so whenever the counts are narrowed."""
    app = pilot.app
    stats = app.query_one(StatsBar)
    assert "of all jobs" not in str(stats.render())
    await pilot.press("t", *"send-invoice", "enter")
    await settle(pilot)
    narrowed = str(stats.render())
    assert "failed/min of all jobs" in narrowed and app.snapshot.throughput == scene.throughput()
    await pilot.press("t", "home", "shift+end", "backspace", "enter", "slash", *"queue:mail", "enter")
    await settle(pilot)
    assert app.type_filter is None and "failed/min of all jobs" in str(stats.render())
