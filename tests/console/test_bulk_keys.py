"""Pilot tests of issue 16's selection and bulk keys: real key presses, then a look at the database."""

from __future__ import annotations

import threading

import pytest
from console_helpers import settle, wait_for

from console.screens.bulk_progress import BulkProgressScreen
from console.screens.confirm import ConfirmScreen
from console.widgets.command_panel import CommandPanel
from console.widgets.jobs.table import JobTable

pytestmark = pytest.mark.asyncio


async def focus_table(pilot, status: str) -> JobTable:
    while pilot.app.focused.id != status:
        await pilot.press("tab")
    return pilot.app.focused


def add_failed(repo, n: int, job_type: str = "send-invoice", error: str = "SMTP 550 for {n}") -> list[int]:
    """``n`` more failed jobs, on a queue of their own so no scene job is claimed instead."""
    ids = []
    for i in range(n):
        job, _ = repo.create(job_type, {"n": i}, max_retries=0, queue="extra")
        repo.fail(repo.claim("w", queues=["extra"]).id, error.format(n=i))
        ids.append(job.id)
    return ids


def statuses(repo) -> dict[int, str]:
    return {
        job.id: job.status
        for status in ("pending", "running", "failed", "completed", "cancelled")
        for job in repo.list(status, limit=1000)
    }


def question(app) -> str:
    assert isinstance(app.screen, ConfirmScreen), f"no confirmation on screen: {app.screen!r}"
    return app.screen.question


async def pick(pilot, status: str, count: int) -> list[int]:
    """``space`` on ``count`` jobs of the ``status`` table, top down; their ids."""
    table = await focus_table(pilot, status)
    picked = []
    for _ in range(count):
        picked.append(table.selected_job_id)
        await pilot.press("space", "down")
    return picked


async def asked(pilot, key: str) -> str:
    """Press a bulk key; the confirmation's question once the dry run has brought it."""
    await pilot.press(key)
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, ConfirmScreen), f"the confirmation of {key}")
    return question(pilot.app)


def assert_only(changed: list[int], before: dict, after: dict, status: str) -> None:
    """The ``changed`` jobs are ``status`` now, every other job is as it was."""
    assert [after.get(i) for i in changed] == [status] * len(changed)
    assert {i: s for i, s in after.items() if i not in changed} == {i: s for i, s in before.items() if i not in changed}


async def bulk_on_three(pilot, scene, status: str, key: str, question_asked: str, then: str) -> list[int]:
    """Pick three jobs of ``status``, press ``key``, check the question, confirm: only they become ``then``."""
    picked = await pick(pilot, status, 3)
    before = statuses(scene)
    assert await asked(pilot, key) == question_asked
    await pilot.press("enter")
    await settle(pilot)
    assert_only(picked, before, statuses(scene), then)
    return picked


def last_commands(app) -> list[str]:
    return list(app.query_one(CommandPanel).lines)


async def test_space_toggles_the_job_under_the_cursor_and_the_header_counts_them(pilot):
    app = pilot.app
    table = await focus_table(pilot, "pending")
    first = table.selected_job_id
    await pilot.press("space", "down", "space")
    second = table.selected_job_id
    assert app.selection.ids == {first, second}
    assert "2 selected" in app.sub_title
    await pilot.press("space")  # the second again: unselected
    assert app.selection.ids == {first}
    assert "1 selected" in app.sub_title
    await pilot.press("escape")
    assert app.selection is None and "selected" not in app.sub_title


async def test_a_selects_every_matching_job_not_only_the_page(make_app, scene):
    add_failed(scene, 30)  # more failed jobs than the window below shows
    app = make_app(window=10)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await focus_table(pilot, "failed")
        await pilot.press("a")
        await settle(pilot)
        failed = {job.id for job in scene.list("failed", limit=1000)}
        assert len(failed) == 34 and app.selection.ids == failed
        assert "34 selected" in app.sub_title
        assert app.query_one("#failed", JobTable).row_count == 10


@pytest.mark.backends("sqlite", "postgresql")
async def test_bulk_retry_of_everything_matching_the_query_after_a_confirmation(make_app, scene):
    add_failed(scene, 3)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"type:send-invoice", "enter")
        await settle(pilot)
        await focus_table(pilot, "failed")
        before = statuses(scene)
        await pilot.press("a")
        await settle(pilot)
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        assert question(app) == "Retry 4 failed jobs matching type:send-invoice?"
        await pilot.press("y")
        await settle(pilot)
        after = statuses(scene)
        invoices = {i for i, s in before.items() if s == "failed" and scene.find_by_id(i).type == "send-invoice"}
        assert len(invoices) == 4
        assert all(after[i] == "pending" for i in invoices)
        assert {i: s for i, s in after.items() if i not in invoices} == {
            i: s for i, s in before.items() if i not in invoices
        }
        assert last_commands(app)[-1] == 'python -m queue_core retry --query "status:failed type:send-invoice"'
        assert app.selection is None


async def test_C_cancels_the_selection_and_leaves_the_rest(pilot, scene):
    picked = await bulk_on_three(pilot, scene, "pending", "C", "Cancel 3 pending jobs selected by hand?", "cancelled")
    assert last_commands(pilot.app)[-3:] == [f"python -m queue_core cancel {i}" for i in sorted(picked)]


async def test_D_deletes_the_job_under_the_cursor_when_nothing_is_selected(pilot, scene):
    app = pilot.app
    table = await focus_table(pilot, "failed")
    job_id = table.selected_job_id
    count = len(statuses(scene))
    await pilot.press("D")
    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
    assert question(app) == f"Delete failed job {job_id}?"
    await pilot.press("y")
    await settle(pilot)
    assert scene.find_by_id(job_id) is None and len(statuses(scene)) == count - 1
    assert last_commands(app)[-1] == f"python -m queue_core delete {job_id}"


async def test_r_on_the_job_under_the_cursor_asks_first_like_a_selection(pilot, scene):
    app = pilot.app
    table = await focus_table(pilot, "failed")
    job_id = table.selected_job_id
    before = statuses(scene)
    assert await asked(pilot, "r") == f"Retry failed job {job_id}?"
    await pilot.press("escape")
    await settle(pilot)
    assert not isinstance(app.screen, ConfirmScreen)
    assert statuses(scene) == before and scene.find_by_id(job_id).status == "failed"
    assert f"python -m queue_core retry {job_id}" not in last_commands(app)
    assert await asked(pilot, "r") == f"Retry failed job {job_id}?"
    await pilot.press("y")
    await settle(pilot)
    assert_only([job_id], before, statuses(scene), "pending")
    assert last_commands(app)[-1] == f"python -m queue_core retry {job_id}"


async def test_r_and_c_on_a_job_they_do_not_take_say_why_and_ask_nothing(pilot, scene):
    app = pilot.app
    before = statuses(scene)
    pending = (await focus_table(pilot, "pending")).selected_job_id
    await pilot.press("r")
    failed = (await focus_table(pilot, "failed")).selected_job_id
    await pilot.press("c")
    await settle(pilot)
    messages = [n.message for n in app._notifications]
    assert any(f"Retry works on failed or cancelled jobs; job {pending} is pending" in m for m in messages), messages
    assert any(f"Cancel works on pending or running jobs; job {failed} is failed" in m for m in messages), messages
    assert len(app.screen_stack) == 1 and statuses(scene) == before


async def test_d_on_a_running_job_says_c_cancels_it_and_deletes_nothing(pilot, scene):
    """Running jobs are never deleted (their worker would ack a job that no longer exists); D on one said only
    which statuses delete takes, and README said D cancels them: the note names the key that does."""
    app = pilot.app
    before = statuses(scene)
    running = (await focus_table(pilot, "running")).selected_job_id
    await pilot.press("D")
    await settle(pilot)
    messages = [n.message for n in app._notifications]
    assert any(f"job {running} is running: running jobs are never deleted, C cancels it" in m for m in messages)
    assert len(app.screen_stack) == 1 and statuses(scene) == before


async def test_a_bulk_key_pressed_again_before_its_count_is_back_asks_once(pilot, scene):
    """The count is a dry run on a thread: r pressed twice before it answered (a key repeat, or a slow count of
    a big selection) pushed a second confirmation with the same id, and the console crashed (DuplicateIds)."""
    from textual import events

    app = pilot.app
    table = await focus_table(pilot, "failed")
    job_id = table.selected_job_id
    for key in ("r", "r", "D"):  # all three arrive before the first dry run answers
        event = events.Key(key, key)
        event.set_sender(app)
        app._driver.send_message(event)
    await pilot.pause(0.2)
    await settle(pilot)
    assert app.is_running
    assert [type(screen) for screen in app.screen_stack[1:]] == [ConfirmScreen]
    assert app.screen.question == f"Retry failed job {job_id}?"
    await pilot.press("y")
    await settle(pilot)
    assert scene.find_by_id(job_id).status == "pending" and len(app.screen_stack) == 1
    await pilot.press("r")  # counted again once the first answer is in
    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the next r's confirmation")


async def test_a_dry_run_that_fails_says_so_and_the_next_key_counts_again(pilot, scene, monkeypatch):
    import peewee

    app = pilot.app
    await focus_table(pilot, "failed")
    plan_bulk = scene.plan_bulk

    def locked(*args, **kwargs):
        raise peewee.OperationalError("database is locked")

    monkeypatch.setattr(scene, "plan_bulk", locked)
    await pilot.press("r")
    await settle(pilot)
    assert any("Could not plan the action: database is locked" in n.message for n in app._notifications)
    assert len(app.screen_stack) == 1
    monkeypatch.setattr(scene, "plan_bulk", plan_bulk)
    await pilot.press("r")
    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation once the count works")


async def test_escape_on_the_confirmation_changes_nothing(pilot, scene):
    app = pilot.app
    before = statuses(scene)
    for key, status in (("r", "failed"), ("C", "pending"), ("D", "failed")):
        await focus_table(pilot, status)
        await pilot.press("a")
        await settle(pilot)
        await pilot.press(key)
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), f"the confirmation of {key}")
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
    assert statuses(scene) == before


async def test_r_and_c_act_on_the_selection_when_there_is_one(pilot, scene):
    app = pilot.app
    failed = await focus_table(pilot, "failed")
    await pilot.press("space", "down", "space")
    await pilot.press("r")
    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
    assert question(app) == "Retry 2 failed jobs selected by hand?"
    await pilot.press("y")
    await settle(pilot)
    assert failed.row_count == 2
    pending = await focus_table(pilot, "pending")
    job_id = pending.selected_job_id
    await pilot.press("space", "c")
    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
    assert question(app) == "Cancel 1 pending job selected by hand?"
    await pilot.press("y")
    await settle(pilot)
    assert scene.find_by_id(job_id).status == "cancelled"


async def test_escape_during_a_long_run_stops_after_the_current_batch(pilot, scene):
    app = pilot.app
    add_failed(scene, 6)
    app.bulk_batch_size = 2
    first_batch, go_on = threading.Event(), threading.Event()
    report = app.bulk_batch_done

    def held_after_the_first_batch(progress) -> bool:
        first_batch.set()
        go_on.wait(30)  # until escape was pressed
        return report(progress)

    app.bulk_batch_done = held_after_the_first_batch
    app.request_refresh()
    await settle(pilot)
    await focus_table(pilot, "failed")
    await pilot.press("a")
    await settle(pilot)
    await pilot.press("r")
    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
    assert "In batches of 2; escape stops after the current batch." in question(app)
    await pilot.press("y")
    await wait_for(pilot, first_batch.is_set, "the first batch")
    assert isinstance(app.screen, BulkProgressScreen)
    await pilot.press("escape")
    go_on.set()
    await settle(pilot)
    await wait_for(pilot, lambda: not isinstance(app.screen, BulkProgressScreen), "the end of the run")
    failed = scene.list("failed", limit=100)
    assert len(failed) == 10 - 2  # one batch of two retried, the rest left failed


@pytest.mark.backends("sqlite", "postgresql")
async def test_a_job_that_changed_between_the_dry_run_and_yes_is_skipped_and_counted(pilot, scene):
    app = pilot.app
    picked = await pick(pilot, "failed", 3)
    assert await asked(pilot, "r") == "Retry 3 failed jobs selected by hand?"
    raced = picked[1]
    scene.retry(raced)  # meanwhile: someone retried it and a worker ran it to completion
    finished = next(job for job in scene.claim_many("racer", 100) if job.id == raced)
    scene.complete(finished.id, worker_id="racer", attempt=finished.attempt)
    app._notifications.clear()
    await pilot.press("y")
    await settle(pilot)
    assert scene.find_by_id(raced).status == "completed"
    assert [scene.find_by_id(i).status for i in picked if i != raced] == ["pending", "pending"]
    assert any("Retried 2 of 3 failed jobs" in n.message and "1 skipped" in n.message for n in app._notifications)


@pytest.mark.parametrize(("key", "state"), [("d", "completed"), ("k", "cancelled")])
async def test_a_on_a_paged_view_selects_its_state_while_the_live_tables_wait_for_their_view(
    make_app, scene, key, state
):
    """The live tables are not read on the other views; marking the selection must not ask them for rows
    (it did: a KeyError that ended the console)."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press(key)
        await settle(pilot)
        assert "pending" not in app.snapshot.rows
        await pilot.press("a")
        await settle(pilot)
        wanted = {job.id for job in scene.list(state, limit=1000)}
        assert wanted and app.selection.ids == wanted and app.is_running
        await pilot.press("1")
        await settle(pilot)
        assert app.is_running and app.query_one("#pending", JobTable).row_count == scene.counts()["pending"]


async def test_c_on_a_running_job_says_it_asked_it_to_stop(pilot, scene):
    """A running job's cancel is a request (it ends at its worker's next heartbeat): the note says so rather
    than "Cancelled" alone."""
    app = pilot.app
    job_id = (await focus_table(pilot, "running")).selected_job_id
    assert (await asked(pilot, "c")).startswith(f"Cancel running job {job_id}?\n")
    await pilot.press("y")
    await settle(pilot)
    assert scene.find_by_id(job_id).cancel_requested_at is not None
    messages = [n.message for n in app._notifications]
    assert "Asked 1 of 1 running job to stop: it ends at its worker's next heartbeat." in messages, messages


async def test_the_note_after_a_cancel_of_pending_and_running_jobs_says_which_were_asked():
    from console.bulk import outcome_text
    from queue_core.store.bulk import BulkOutcome

    mixed = outcome_text(BulkOutcome("cancel", 5, 5, 0, False), "5 jobs selected by hand", 2)
    assert mixed == (
        "Cancelled 5 of 5 jobs selected by hand; the 2 running were asked to stop: "
        "they end at their worker's next heartbeat."
    )
    plain = outcome_text(BulkOutcome("retry", 4, 3, 1, False), "4 failed jobs", 0)
    assert plain == "Retried 3 of 4 failed jobs (1 skipped: changed meanwhile)."


async def test_jobs_claimed_since_they_were_selected_are_said_to_have_left_not_to_be_untaken(make_app, scene):
    """``/ status:pending``, ``a``, then a worker claims some, then ``C``: the confirmation said "left alone:
    not pending or running" of jobs that were running (which cancel takes); they are left out because they
    are no longer pending. And the command line said ``status:pending`` twice."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"status:pending", "enter")
        await settle(pilot)
        await focus_table(pilot, "pending")
        await pilot.press("a")
        await settle(pilot)
        selected = len(app.selection)
        assert app.selection.command_query == "status:pending"
        claimed = [scene.claim("w", queues=["default"]) for _ in range(2)]
        assert all(job is not None and job.id in app.selection.ids for job in claimed)
        text = await asked(pilot, "C")
        assert f"2 of the {selected} selected are left alone: no longer pending (changed since" in text, text
        assert "not pending or running" not in text
