"""Regression tests: a write PostgreSQL refuses for good says what to change, not only the driver's words.

Review finding: a console on a server gone read-only (a fail-over to a standby, ``default_transaction_read_only``
set for the role) answered every write with "Could not cancel: cannot execute UPDATE in a read-only transaction",
and the operator was left to work out why. The console now adds what ``queue_core.store.postgres.refusal``
says, as the admin CLI, the worker and the HTTP API do. The refusal is raised as peewee raises it (its error
wrapping the driver's, which carries the SQLSTATE), so the test runs on either backend's console.
"""

from __future__ import annotations

import peewee as pw
import pytest
from console_helpers import asked_then, settle, wait_for

from console.screens.enqueue import EnqueueScreen

pytestmark = pytest.mark.asyncio
READ_ONLY = "cannot execute UPDATE in a read-only transaction"


class DriverError(Exception):
    sqlstate = "25006"  # read_only_sql_transaction


def refused(*args, **kwargs):
    """As peewee raises the driver's error: its own class, raised while handling the driver's one."""
    try:
        raise DriverError(READ_ONLY)
    except DriverError as exc:
        raise pw.InternalError(exc, *exc.args)  # noqa: B904 - peewee's reraise keeps the driver's as __context__


def notifications(app) -> list[str]:
    return [n.message for n in app._notifications]


async def refusal_told(pilot, app) -> list[str]:
    """Wait until a notification tells the refusal; the notifications that do."""
    await wait_for(pilot, lambda: any(READ_ONLY in m for m in notifications(app)), "the refusal")
    return [m for m in notifications(app) if READ_ONLY in m]


async def test_a_bulk_write_refused_read_only_says_to_point_at_the_primary(make_app, scene, monkeypatch):
    monkeypatch.setattr(scene, "apply_bulk", refused)
    before = scene.counts()
    app = make_app()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot)
        await asked_then(pilot, "c", "y")  # the pending job under the cursor
        (said,) = await refusal_told(pilot, app)
        assert said.startswith(f"Could not cancel: {READ_ONLY}: the server runs this connection read-only")
        assert "point the URL at the primary" in said
        assert app.is_running and scene.counts() == before


async def test_a_reap_refused_read_only_says_so(make_app, scene, monkeypatch):
    monkeypatch.setattr(scene, "reap_stale", refused)
    app = make_app()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("x")
        assert any("point the URL at the primary" in m for m in await refusal_told(pilot, app))


async def test_an_enqueue_refused_read_only_says_so_in_the_form(make_app, scene, monkeypatch):
    monkeypatch.setattr(scene, "create", refused)
    before = scene.counts()
    app = make_app()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("n", *"echo", "enter")
        await wait_for(pilot, lambda: READ_ONLY in str(app.screen.query_one("#form-error").render()), "the refusal")
        assert isinstance(app.screen, EnqueueScreen)
        assert "point the URL at the primary" in str(app.screen.query_one("#form-error").render())
        assert scene.counts() == before
