"""``python -m console.screenshots``: regenerate the SVGs in ``screenshots/`` from the deterministic demo scene.

Each picture is the console at 120x40 over a fresh database built by ``console.demo.build_scene`` at a
fixed clock, so the same code makes the same pictures (the worker pane's log may differ in durations).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
from pathlib import Path

from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository

from .app import QueueConsole
from .demo import SCENE_END, ManualClock, build_scene

SIZE = (120, 40)
OUT = Path(__file__).resolve().parents[1] / "screenshots"
WORKER_JOBS = (  # built-in handler types; the two sleeps are still running when the picture is taken
    ("echo", {"message": "hello"}, "critical"),
    ("echo", {"message": "hello again"}, "critical"),
    ("fail", {"error": "card declined"}, "critical"),
    ("echo", {"message": "one more"}, "critical"),
    ("sleep", {"seconds": 600}, "high"),
    ("sleep", {"seconds": 600}, "high"),
)


def scene_app(directory: Path) -> QueueConsole:
    clock = ManualClock(SCENE_END)
    repo = JobRepository(open_database(f"sqlite:///{directory / 'demo.db'}"), clock=clock, rng=random.Random(7))
    build_scene(repo, clock)
    return QueueConsole(repo, refresh_interval=None, db_label="demo.db", worker_id="console-demo:1")


async def settle(pilot) -> None:
    while True:
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if not pilot.app._loading:
            return


async def shoot(directory: Path, name: str, keys: tuple[str, ...], out: Path) -> Path:
    app = scene_app(directory / name)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*keys)
        await settle(pilot)
        for field in app.screen.query("Input"):
            field.cursor_blink = False
        await pilot.pause()
        return Path(app.save_screenshot(f"{name}.svg", str(out)))


async def shoot_worker(directory: Path, out: Path) -> Path:
    app = scene_app(directory / "worker")
    for job_type, payload, priority in WORKER_JOBS:
        app.repo.create(job_type, payload, priority=priority, max_retries=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("w")
        for _ in range(600):  # the four quick jobs done, both sleeps running
            stats = app.queue_worker.stats
            if stats.completed + stats.failed >= 4 and stats.running == 2:
                break
            await pilot.pause(0.05)
        await asyncio.sleep(0.5)
        app.request_refresh()
        await settle(pilot)
        path = Path(app.save_screenshot("worker.svg", str(out)))
        app.queue_worker.stop(timeout=0.5)
        return path


async def make_all(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        shots = {
            "main": (),
            "enqueue": ("n", *"send-invoice", "tab", *'{"invoice": 78, "to": "eve@example.com"}'),
            "detail": ("tab", "tab", "enter"),
            "help": ("question_mark",),
        }
        paths = []
        for name, keys in shots.items():
            (directory / name).mkdir()
            paths.append(await shoot(directory, name, keys, out))
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
