"""While ``a`` reads every matching job, and while a bulk key counts its jobs, the header says so.

Review finding: at a million jobs, ``a`` on the completed view took 3 s of CPU (21 s on a loaded machine)
and ``D`` on that selection as long again, and the screen showed nothing meanwhile: the operator could
not tell a key that was working from one that was lost.
"""

from __future__ import annotations

import threading

import pytest
from console_helpers import settle

import console.selection

pytestmark = [pytest.mark.asyncio, pytest.mark.backends("sqlite")]  # the console's own state: either backend


def held(monkeypatch, owner, name):
    """``owner.name`` made to wait for the returned event before it runs."""
    go = threading.Event()
    real = getattr(owner, name)

    def waiting(*args, **kwargs):
        go.wait(10)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, waiting)
    return go


async def test_the_header_says_selecting_then_counting_while_they_run(make_app, scene, monkeypatch):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("tab", "tab")  # the failed table
        go = held(monkeypatch, console.selection, "matching_ids")
        await pilot.press("a")
        await pilot.pause()
        assert "selecting…" in app.sub_title and "selected" not in app.sub_title, app.sub_title
        go.set()
        await settle(pilot)
        assert "4 selected" in app.sub_title and "selecting…" not in app.sub_title, app.sub_title
        go = held(monkeypatch, scene, "plan_bulk")
        await pilot.press("r")
        await pilot.pause()
        assert "counting…" in app.sub_title, app.sub_title
        go.set()
        await settle(pilot)
        assert "counting…" not in app.sub_title, app.sub_title
        assert app.screen.id == "confirm-bulk"
