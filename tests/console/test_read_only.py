"""Read-only mode (issue 16, item 6): every key that writes is shown disabled, says why, and writes nothing."""

from __future__ import annotations

import pytest
from console_helpers import settle
from test_bulk_keys import statuses

from console.options import parse_args
from console.read_only import WRITE_ACTIONS, action_name
from console.widgets.jobs.table import JobTable

WRITE_KEYS = {"n", "r", "f", "c", "p", "x", "w", "C", "D"}


def database_state(repo) -> tuple:
    queues = {(queue.name, queue.paused) for queue in repo.queues()}
    return statuses(repo), queues, repo.counts(), len(repo.workers())


@pytest.mark.asyncio
async def test_every_write_key_is_disabled_says_why_and_writes_nothing(make_app, scene):
    app = make_app(read_only=True, start_worker=True)
    writes = [binding for binding in app.BINDINGS if action_name(binding.action) in WRITE_ACTIONS]
    assert {binding.key for binding in writes} == WRITE_KEYS  # a new write key must be added here
    before = database_state(scene)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot)
        assert app.queue_worker is None  # --worker is refused in read-only mode; start_worker is ignored
        assert "read-only" in app.sub_title
        for binding in writes:  # the footer dims them: check_action says None (shown, disabled)
            assert app.check_action(action_name(binding.action), ()) is None, binding.key
        for status in ("pending", "running", "failed"):
            while app.focused.id != status:
                await pilot.press("tab")
            await pilot.press("a")  # a selection, so the bulk keys have something to refuse
            await settle(pilot)
            for key in WRITE_KEYS:
                app._notifications.clear()
                await pilot.press(key)
                await settle(pilot)
                assert len(app.screen_stack) == 1, f"{key} opened {app.screen!r}"
                messages = [n.message for n in app._notifications]
                assert any("read-only" in message and "is disabled" in message for message in messages), (key, messages)
            await pilot.press("escape")
        await pilot.press("2", "p")  # pause on the queues view
        await settle(pilot)
        assert app.queue_worker is None
    assert database_state(scene) == before


@pytest.mark.asyncio
async def test_selection_and_views_still_work_when_read_only(make_app):
    app = make_app(read_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("space")
        assert len(app.selection) == 1
        await pilot.press("6")
        await settle(pilot)
        assert app.view == "failures"
        assert app.query_one("#pending", JobTable).row_count


def test_read_only_from_the_environment_and_what_it_refuses(capsys):
    for word in ("1", "true", "Yes", "on", " ON "):
        assert parse_args([], environ={"QUEUE_CONSOLE_READ_ONLY": word}).read_only, word
    for word in ("0", "false", "no", "Off", ""):
        assert not parse_args([], environ={"QUEUE_CONSOLE_READ_ONLY": word}).read_only, word
    assert parse_args(["--read-only"], environ={}).read_only
    for argv in (["--read-only", "--worker"], ["--read-only", "--demo"]):
        with pytest.raises(SystemExit) as info:
            parse_args(argv, environ={})
        assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 2 and "read-only" in err


@pytest.mark.asyncio
async def test_a_write_from_the_command_palette_says_why_and_writes_nothing(make_app, scene):
    app = make_app(read_only=True)
    before = database_state(scene)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot)
        commands = {command.title: command for command in app.get_system_commands(app.screen)}
        for title in ("Enqueue", "Reap", "Delete…", "Worker"):
            app._notifications.clear()
            await commands[title].callback()
            await settle(pilot)
            assert len(app.screen_stack) == 1 and app.queue_worker is None
            assert any("is disabled" in n.message for n in app._notifications), title
    assert database_state(scene) == before


def test_a_read_only_switch_it_does_not_know_is_an_error_not_writes(capsys):
    """``QUEUE_CONSOLE_READ_ONLY=y`` (or ``maybe``, ``ture``) opened the console with writes, silently: an
    operator who meant read-only could retry or delete jobs. A value that is neither a yes nor a no is refused."""
    for word in ("maybe", "y", "ture", "2"):
        with pytest.raises(SystemExit) as info:
            parse_args([], environ={"QUEUE_CONSOLE_READ_ONLY": word})
        assert info.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: QUEUE_CONSOLE_READ_ONLY='{word}' is not a yes or a no"), err
        assert "1, true, yes or on" in err and len(err.strip().splitlines()) == 1
