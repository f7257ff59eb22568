"""The README's developer section: every snippet runs as pasted and prints what its comments say."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
FENCE = re.compile(r"^```python\n(# (\w+\.py)\n.*?)^```", re.MULTILINE | re.DOTALL)
SECTION = "## For developers: tasks, periodic jobs, async, timeouts, results, metrics\n"


def snippets() -> dict[str, str]:
    text = README.read_text(encoding="utf-8")
    start = text.index(SECTION)
    section = text[start : text.index("\n## ", start + len(SECTION))]
    return {name: body for body, name in FENCE.findall(section)}


EXPECTED = {
    "tasks_demo.py": "{'sent': 42, 'copies': 1}",
    "periodic_demo.py": "periodic:cleanup:",
    "async_demo.py": "100",
    "timeout_demo.py": "timed out after 0.5s (the job's timeout)",
    "results_demo.py": "5\nfailed card 77 declined\n",
    "outbox_demo.py": "1 1",
    "metrics_demo.py": "{'queue': 'mail', 'status': 'pending'} 1.0",
    "test_signup_demo.py": "3 passed",
}

# What a snippet's comments say it logs (stderr): an embedded worker logs only when the program asks it to.
EXPECTED_LOG = {"timeout_demo.py": ("WARNING:queue_core.worker:failed job=1", "WARNING:queue_core.worker:overrun")}


def test_the_section_has_a_snippet_for_each_feature_task_api_first():
    assert list(snippets()) == list(EXPECTED)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_each_snippet_runs_as_pasted(name, tmp_path):
    (tmp_path / name).write_text(snippets()[name], encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUEUE_")}
    env["PYTHONPATH"] = str(ROOT)
    # A test module runs as README says to run it: python -m pytest test_signup_demo.py.
    command = (
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", name]
        if name.startswith("test_")
        else [sys.executable, name]
    )
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert EXPECTED[name] in done.stdout, done.stdout
    for line in EXPECTED_LOG.get(name, ()):
        assert line in done.stderr, done.stderr
    assert "Warning" not in done.stderr, done.stderr  # a newcomer's first run warns of nothing


def test_a_worker_importing_the_task_module_only_registers_its_tasks(tmp_path):
    """`queue-worker --handlers tasks_demo`, as README says to run it: importing the module enqueued jobs and
    ran a worker of its own when the demo's lines were at the module's top level."""
    (tmp_path / "tasks_demo.py").write_text(snippets()["tasks_demo.py"], encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUEUE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(tmp_path)])
    command = [sys.executable, "-m", "queue_core.worker", "--handlers", "tasks_demo", "--burst"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "tasks-demo.db" in done.stderr  # it serves the database the module's Queue names
    stats = [sys.executable, "-m", "queue_core", "--db", "sqlite:///tasks-demo.db", "stats"]
    counted = subprocess.run(stats, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert counted.returncode == 0, counted.stderr
    assert '"completed": 0' in counted.stdout and '"pending": 0' in counted.stdout, counted.stdout


def test_listing_the_schedules_of_the_periodic_module_only_lists_them(tmp_path):
    """`python periodic_demo.py`, then `python -m queue_core schedules --handlers periodic_demo`, as README says:
    importing the module ran the demo's tick again, so the listing ran the scheduler (a listing that enqueues)
    and printed its keys above the table."""
    (tmp_path / "periodic_demo.py").write_text(snippets()["periodic_demo.py"], encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUEUE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(tmp_path)])
    run = {"cwd": tmp_path, "env": env, "capture_output": True, "text": True, "timeout": 120, "check": False}
    demo = subprocess.run([sys.executable, "periodic_demo.py"], **run)
    assert demo.returncode == 0, demo.stderr
    listing = subprocess.run([sys.executable, "-m", "queue_core", "schedules", "--handlers", "periodic_demo"], **run)
    assert listing.returncode == 0, listing.stderr
    assert listing.stdout.startswith("NAME"), listing.stdout  # the table, and nothing the import printed before it
