"""The README's handler walk-through, run exactly as a newcomer would paste it.

The section "Writing a handler module" starts with Python blocks whose first line names the file to save
(``# myapp/jobs.py``) and one shell block to run in that folder. This test saves and runs them as they
are, in a fresh folder, with this interpreter's ``bin`` first on PATH, so the walk-through cannot drift
from what the code does.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def walkthrough() -> str:
    """From the heading to the sentence that names this test: the blocks a newcomer pastes in order."""
    text = README.read_text(encoding="utf-8")
    start = text.index("### Writing a handler module\n")
    return text[start : text.index("`tests/test_readme.py` runs exactly these blocks", start)]


def walkthrough_blocks() -> tuple[dict[str, str], list[str]]:
    files, commands = {}, []
    for language, body in FENCE.findall(walkthrough()):
        first = body.partition("\n")[0]
        if language == "python" and first.startswith("# ") and first.endswith(".py"):
            files[first[2:].strip()] = body
        elif language == "sh":
            commands.extend(line.split("  #")[0].strip() for line in body.splitlines() if line.strip())
    return files, commands


def test_the_walkthrough_names_its_files_and_commands():
    files, commands = walkthrough_blocks()
    assert set(files) == {"myapp/jobs.py", "enqueue.py"}
    assert any(command.startswith("queue-worker") for command in commands)


def test_the_handler_walkthrough_runs_as_pasted(tmp_path):
    files, commands = walkthrough_blocks()
    for name, body in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUEUE_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    outputs = []
    for command in commands:
        done = subprocess.run(
            command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, f"{command!r} failed:\n{done.stdout}\n{done.stderr}"
        outputs.append(done.stdout)
    assert outputs[1].split() == ["1", "pending", "True"]  # python enqueue.py, as its comment says
    shown = json.loads(outputs[-1])
    assert shown["status"] == "completed"
    assert shown["type"] == "send-invoice"


def test_ci_runs_the_readmes_test_command():
    """``.ci/run`` runs the suite exactly as the README's quick start and Development sections say."""
    text = README.read_text(encoding="utf-8")
    readme_commands = set(re.findall(r"&& (\.venv/bin/python -m pytest[^\n`]*)\n", text))
    assert len(readme_commands) == 1, readme_commands  # one command, the same in both places
    ci_lines = (README.parent / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert readme_commands.pop() in ci_lines
