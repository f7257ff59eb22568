"""Console fixtures: the deterministic demo scene at a fixed clock, and an app that never refreshes by itself."""

from __future__ import annotations

import random

import pytest
import pytest_asyncio
from console_helpers import settle

from console.app import QueueConsole
from console.demo import SCENE_END, ManualClock, build_scene
from queue_core.store.repository import JobRepository


@pytest.fixture
def scene_clock() -> ManualClock:
    return ManualClock(SCENE_END)


@pytest.fixture
def scene(db, scene_clock) -> JobRepository:
    """The screenshot scene: 20 pending (2 on mail, 1 on the paused reports), 4 running (one stale), 4 failed,
    30 completed, 1 cancelled, 3 registered workers (one lost); now = SCENE_END."""
    repo = JobRepository(db, clock=scene_clock, rng=random.Random(7))
    build_scene(repo, scene_clock)
    return repo


@pytest.fixture
def make_app(scene, scene_clock):
    def make(**options) -> QueueConsole:
        options.setdefault("refresh_interval", None)  # tests refresh on purpose, not on a timer
        options.setdefault("db_label", "demo.db")
        return QueueConsole(scene, **options)

    return make


@pytest_asyncio.fixture
async def pilot(make_app):
    """The console on the scene at 120x40, first refresh on screen."""
    app = make_app()
    # Notifications on: a toast is rendered, so a message that is not valid markup fails here, as it would live.
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot)
        yield pilot
