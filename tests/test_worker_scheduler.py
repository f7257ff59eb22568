"""The scheduler inside the worker (issue 14, item 6): every worker ticks, one job per tick across processes."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import datetime
from pathlib import Path

import pytest

from queue_core import open_database
from queue_core.cli.admin import main as admin_main
from queue_core.worker.handlers import registry

ROOT = Path(__file__).resolve().parents[1]
WAIT = 60

TASKS = """
import os
from pathlib import Path
from queue_core import Queue, current_job

queue = Queue()  # $QUEUE_DB_URL

@queue.task("beat", cron="* * * * * *")
def beat():
    with Path("ran.txt").open("a") as out:
        out.write(f"{current_job().id} {os.getpid()}\\n")

@queue.periodic("0 3 * * *", name="nightly", payload={"kind": "full"})
def nightly(kind):
    pass
"""


@pytest.fixture
def app(db_url, tmp_path):
    (tmp_path / "sched_tasks.py").write_text(textwrap.dedent(TASKS))
    env = {**os.environ, "QUEUE_DB_URL": db_url, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    return tmp_path, env


def start_worker(app, worker_id, *args):
    cwd, env = app
    command = [sys.executable, "-m", "queue_core.worker", "--handlers", "sched_tasks", "--worker-id", worker_id]
    command += ["--poll-interval", "0.05", "--max-poll-interval", "0.2", "--concurrency", "2", *args]
    log = (cwd / f"{worker_id}.log").open("w")
    return subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=log)


def tick_of(job) -> datetime:
    return datetime.strptime(job.idempotency_key.split(":", 2)[2], "%Y-%m-%dT%H:%M:%SZ")


def test_two_workers_with_the_scheduler_on_create_one_job_per_tick(app, live_repo):
    began = time.monotonic()
    workers = [start_worker(app, "w1"), start_worker(app, "w2")]
    try:
        # Five ticks or more, however long the two processes take to start on a loaded machine.
        deadline = began + WAIT
        while len(live_repo.list(type="beat", limit=1000)) < 5 and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)  # both schedulers running side by side a moment longer
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        codes = [worker.wait(WAIT) for worker in workers]
    up = time.monotonic() - began
    assert codes == [0, 0], [(app[0] / f"w{i}.log").read_text() for i in (1, 2)]

    jobs = sorted(live_repo.list(type="beat", limit=1000), key=lambda job: job.id)
    # In tick order, not id order: two schedulers can each enqueue a tick at the turn of a second, and the
    # one for the earlier second may commit after the other (the ids then run 45, 44, 46).
    ticks = sorted(tick_of(job) for job in jobs)
    assert len(ticks) == len(set(ticks)), "a tick was enqueued twice"
    # No more ticks than the seconds the workers were up touched: none from before they started.
    assert 5 <= len(ticks) <= up + 2, (ticks, up)
    gaps = {(later - earlier).total_seconds() for earlier, later in itertools.pairwise(ticks)}
    assert gaps == {1.0}, f"a tick was skipped or repeated: {ticks}"
    # Each job ran exactly once, whichever worker enqueued or claimed it.
    ran = [line.split()[0] for line in (app[0] / "ran.txt").read_text().splitlines()]
    assert sorted(ran) == sorted({str(job.id) for job in jobs if job.status == "completed"})
    assert len(ran) == len(set(ran))
    # Both processes ran the scheduler (the nightly's latest tick was enqueued once, by whichever came first).
    assert len(live_repo.list(type="nightly", limit=10)) == 1


def test_no_scheduler_enqueues_nothing_and_a_burst_ticks_once(app, live_repo):
    cwd, env = app
    common = [sys.executable, "-m", "queue_core.worker", "--handlers", "sched_tasks", "--burst"]
    out = subprocess.run([*common, "--no-scheduler"], cwd=cwd, env=env, capture_output=True, text=True, timeout=WAIT)
    assert out.returncode == 0, out.stderr
    assert live_repo.counts()["pending"] + live_repo.counts()["completed"] == 0

    out = subprocess.run(common, cwd=cwd, env=env, capture_output=True, text=True, timeout=WAIT)
    assert out.returncode == 0, out.stderr
    # One tick of each schedule, enqueued before the claim threads started, so the burst ran both.
    assert sorted(job.type for job in live_repo.list(status="completed", limit=10)) == ["beat", "nightly"]


def test_the_schedules_command_lists_cron_last_and_next_run(app, live_repo, db_url, capsys, monkeypatch):
    cwd, _env = app
    monkeypatch.chdir(cwd)
    monkeypatch.syspath_prepend(str(cwd))
    monkeypatch.setenv("QUEUE_DB_URL", db_url)
    monkeypatch.delitem(sys.modules, "sched_tasks", raising=False)  # a module of the other backend's run
    assert admin_main(["schedules", "--handlers", "sched_tasks", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(line["name"], line["cron"], line["last_run"]) for line in lines] == [
        ("beat", "* * * * * *", None),
        ("nightly", "0 3 * * *", None),
    ]
    assert all(line["next_run"].endswith("Z") for line in lines)

    from sched_tasks import queue

    created = queue.scheduler().tick()
    assert admin_main(["schedules", "--handlers", "sched_tasks"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["NAME", "CRON", "TYPE", "LAST", "RUN", "LAST", "JOB", "NEXT", "RUN"]
    nightly = next(line for line in table if line.startswith("nightly"))
    job = next(job for job in created if job.type == "nightly")
    assert f"{job.id} pending" in nightly
    assert "T03:00:00Z" in nightly  # last run: the latest 03:00 tick; next run: the one after
    queue.close()
    for name in ("beat", "nightly"):
        registry.unregister(name)


def test_the_schedules_command_of_modules_without_schedules_says_how_to_define_one(tmp_path):
    # README runs it on tasks_demo, which has tasks and no schedule: the listing told the reader to "give the
    # modules that define them with --handlers MODULE", which they had just done.
    (tmp_path / "plain_tasks.py").write_text(
        'from queue_core import Queue\n\nqueue = Queue("sqlite:///plain.db")\n\n\n'
        '@queue.task("send")\ndef send(to):\n    pass\n'
    )
    open_database(f"sqlite:///{tmp_path / 'plain.db'}").close()  # as `python tasks_demo.py` made it
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUEUE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(tmp_path)])
    command = [sys.executable, "-m", "queue_core", "schedules", "--handlers", "plain_tasks"]
    out = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=WAIT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (
        "no schedules in plain_tasks: define one with @queue.periodic(...) or @queue.task(..., cron=...)"
    )
