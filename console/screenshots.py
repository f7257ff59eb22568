"""``python -m console.screenshots``: regenerate the SVGs in ``screenshots/`` from the deterministic demo scene.

Each picture is the console at 120x40 over a fresh database built by ``console.demo.build_scene`` at a
fixed clock, so the same code makes the same pictures, byte for byte. The worker pane's picture replays a
fixed run (``console.demo.replay_worker_run``): a live worker's threads interleave differently every time.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import tempfile
from pathlib import Path

from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository

from .app import QueueConsole
from .demo import (
    SCENE_END,
    WORKER_ID,
    ManualClock,
    add_failure_causes,
    build_scene,
    replay_worker_run,
    scene_schedules,
)

SIZE = (120, 40)
OUT = Path(__file__).resolve().parents[1] / "screenshots"


def scene_app(directory: Path, *, incident: bool = False, read_only: bool = False) -> QueueConsole:
    """The console on the demo scene; ``incident`` adds the failures view's burst of failures."""
    clock = ManualClock(SCENE_END)
    repo = JobRepository(open_database(f"sqlite:///{directory / 'demo.db'}"), clock=clock, rng=random.Random(7))
    build_scene(repo, clock)
    if incident:
        add_failure_causes(repo, clock)
    app = QueueConsole(
        repo,
        refresh_interval=None,
        db_label="demo.db",
        worker_id=WORKER_ID,
        schedules=scene_schedules(),
        read_only=read_only,
    )
    app.search_clock = itertools.count(0, 0.2).__next__  # a query's search "takes" 0.2 s a step, every run
    return app


async def settle(pilot) -> None:
    """Until no refresh is loading or scheduled: a worker event's delayed refresh firing after the picture was
    taken (a slow machine) would otherwise make two runs draw different tables."""
    while True:
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if not pilot.app._loading and pilot.app._soon_timer is None:
            return


async def shoot(directory: Path, name: str, keys: tuple[str, ...], out: Path, **scene) -> Path:
    app = scene_app(directory / name, **scene)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*keys)
        await settle(pilot)
        for field in app.screen.query("Input"):
            field.cursor_blink = False
        app.clear_notifications()  # a toast leaves on a timer: whether it is still there would vary
        await pilot.pause()
        return Path(app.save_screenshot(f"{name}.svg", str(out)))


async def show_worker_run(pilot) -> None:
    """The worker pane after a replayed first second of the embedded worker, tables refreshed after it."""
    app = pilot.app
    await settle(pilot)
    worker, events = replay_worker_run(app.repo, app.stale_after)
    app.worker_pane.replay(worker, events)
    app.request_refresh()
    await settle(pilot)
    # RichLog follows its end with a scroll that lands after a later repaint: on a busy machine the picture
    # could be taken before it, showing earlier lines. Land it now.
    app.worker_pane.query_one("#worker-log").scroll_end(animate=False, immediate=True)
    await pilot.pause()


async def shoot_worker(directory: Path, out: Path) -> Path:
    app = scene_app(directory / "worker")
    async with app.run_test(size=SIZE) as pilot:
        await show_worker_run(pilot)
        return Path(app.save_screenshot("worker.svg", str(out)))


QUERY_RETRY = ("slash", *"type:send-invoice", "enter", "tab", "tab", "a", "r")
ISSUE_16_SHOTS = {  # name: (keys, scene options)
    "causes": (("6", "space"), {"incident": True}),
    "bulk-confirm": (("6", "space", "r"), {"incident": True}),
    "commands": ((*QUERY_RETRY, "y", "e"), {"incident": True}),
    "selection": (("tab", "tab", "space", "down", "down", "space"), {}),
    "waiting": (("down", "enter"), {}),
    "read-only": (("tab", "tab"), {"read_only": True}),
}


async def make_all(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        shots = {
            "main": (),
            "enqueue": ("n", *"send-invoice", "tab", *'{"invoice": 78, "to": "eve@example.com"}'),
            "detail": ("tab", "tab", "enter"),
            "help": ("question_mark",),
            "scheduled": ("s",),
            "completed": ("d",),
            "queues": ("2",),
            "workers": ("3",),
            "schedules": ("4",),
            "activity": ("5",),
            "query": ("slash", *"declined", "enter"),
        }
        paths = []
        for name, keys in shots.items():
            (directory / name).mkdir()
            paths.append(await shoot(directory, name, keys, out))
        for name, (keys, scene) in ISSUE_16_SHOTS.items():
            (directory / name).mkdir()
            paths.append(await shoot(directory, name, keys, out, **scene))
        (directory / "worker").mkdir()
        paths.append(await shoot_worker(directory, out))
        return paths


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m console.screenshots", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"folder for the SVGs (default {OUT})")
    args = parser.parse_args()
    for path in asyncio.run(make_all(args.out)):
        print(path)


if __name__ == "__main__":
    main()
