"""Pilot tests of issue 16's failures view (``6``: failed jobs grouped by cause) and the job detail's
"Why is this job waiting?" section, one test per reason."""

from __future__ import annotations

import pytest
from console_helpers import settle, wait_for
from test_bulk_keys import add_failed, question, statuses

from console.screens.confirm import ConfirmScreen
from console.screens.detail import JobDetailScreen
from console.widgets.command_panel import CommandPanel
from console.widgets.failures.table import FailuresTable

pytestmark = pytest.mark.asyncio


@pytest.mark.backends("sqlite", "postgresql")
async def test_the_failures_view_groups_failed_jobs_by_cause(make_app, scene):
    add_failed(scene, 5, "charge-card", "PaymentDeclined: card 4242 declined for order {n}")
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("6")
        await settle(pilot)
        table = app.query_one(FailuresTable)
        assert app.focused is table
        biggest = table.cursor_group  # biggest first: the cursor starts on it
        assert biggest.signature == "PaymentDeclined: card <n> declined for order <n>"
        assert (biggest.count, biggest.types) == (5, ("charge-card",))
        assert table.row_count == 5  # the scene's four causes and this one


async def test_space_on_a_group_selects_its_jobs_and_r_retries_exactly_them(make_app, scene):
    """Four key presses: 6, space, r, y."""
    declined = add_failed(scene, 5, "charge-card", "PaymentDeclined: card 4242 declined for order {n}")
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        before = statuses(scene)
        await pilot.press("6")
        await settle(pilot)
        await pilot.press("space")
        await settle(pilot)
        assert app.selection.ids == set(declined) and "5 selected" in app.sub_title
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        cause = "PaymentDeclined: card <n> declined for order <n>"
        assert question(app) == f"Retry 5 failed jobs of cause “{cause}”?"
        await pilot.press("y")
        await settle(pilot)
        after = statuses(scene)
        assert [after[i] for i in declined] == ["pending"] * 5
        assert {i: s for i, s in after.items() if i not in declined} == {
            i: s for i, s in before.items() if i not in declined
        }
        # The equivalent command names the cause, so a script can do the same next time (test_cli_bulk runs it).
        assert list(app.query_one(CommandPanel).lines)[-1] == f'python -m queue_core retry --cause "{cause}"'


async def test_enter_selects_a_group_and_space_again_clears_it(make_app, scene):
    add_failed(scene, 2, "charge-card", "PaymentDeclined: card 4242 declined for order {n}")
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("6")
        await settle(pilot)
        await pilot.press("down", "enter")  # the second group: one job
        await settle(pilot)
        group = app.query_one(FailuresTable).cursor_group
        assert len(app.selection) == group.count == 1
        assert app.query_one(FailuresTable).selected_signature == group.signature
        await pilot.press("space")
        assert app.selection is None


def waiting_shown(app) -> bool:
    if not isinstance(app.screen, JobDetailScreen):
        return False
    section = app.screen.query("#detail-waiting")
    return bool(section) and section.first().display


async def detail_text(pilot, job_id: int) -> str:
    app = pilot.app
    app.push_screen(JobDetailScreen(app.repo, job_id))
    await wait_for(pilot, lambda: waiting_shown(app), "the waiting explanation")
    text = app.screen.shown_text()
    await pilot.press("escape")
    return text


def pending_with(repo, kind: str) -> int:
    for job in repo.list("pending", limit=100):
        if any(reason.kind == kind for reason in repo.why_waiting(job.id)):
            return job.id
    raise AssertionError(f"no pending job waits for {kind}")


@pytest.mark.parametrize("kind", ["paused", "scheduled", "ahead", "no_worker", "next"])
@pytest.mark.backends("sqlite", "postgresql")
async def test_the_detail_of_a_pending_job_says_why_it_waits(pilot, scene, kind):
    if kind == "no_worker":
        scene.worker_stopped("host-a:412")  # the one worker of every queue: mail's queue keeps host-b
        scene.create("export-csv", {}, queue="nobody-serves-this")
    job_id = pending_with(scene, kind)
    (reason,) = [r for r in scene.why_waiting(job_id) if r.kind == kind]
    text = await detail_text(pilot, job_id)
    assert "Why is this job waiting?" in text
    assert reason.message in text


async def test_enter_on_a_pending_job_explains_and_a_failed_job_has_no_such_section(pilot, scene):
    app = pilot.app
    job_id = app.query_one("#pending").selected_job_id
    await pilot.press("enter")
    await wait_for(pilot, lambda: waiting_shown(app), "the waiting explanation")
    assert scene.why_waiting(job_id)[0].message in app.screen.shown_text()
    await pilot.press("escape", "tab", "tab", "enter")
    await wait_for(pilot, lambda: isinstance(app.screen, JobDetailScreen) and app.screen.detail, "the detail")
    await settle(pilot)
    assert not app.screen.query_one("#detail-waiting").display
    assert "Why is this job waiting?" not in app.screen.shown_text()


async def test_a_bulk_key_on_the_causes_view_without_a_selection_asks_for_one(pilot, scene):
    app = pilot.app
    before = statuses(scene)
    await pilot.press("6")
    await settle(pilot)
    for key in ("r", "D"):
        app._notifications.clear()
        await pilot.press(key)
        await settle(pilot)
        assert len(app.screen_stack) == 1
        assert any("Select a cause first" in n.message for n in app._notifications)
    assert statuses(scene) == before
