"""The README's reference parts against the code: the worker's options table, the admin CLI's commands table and
every ``queue_core.…`` name it tells a reader to use."""

from __future__ import annotations

import argparse
import importlib
import re
from pathlib import Path

from queue_core.cli.admin import build_parser as admin_parser
from queue_core.worker.cli import build_parser as worker_parser

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def table_rows(heading: str) -> str:
    """The table lines of one section (``heading`` up to the next section of its level or above)."""
    start = README.index(heading)
    end = README.index("\n## ", start + len(heading))
    return "\n".join(line for line in README[start:end].splitlines() if line.startswith("| `"))


def test_every_worker_option_has_a_row_in_the_running_workers_table():
    rows = table_rows("## Running workers\n")
    options = [flag for action in worker_parser()._actions for flag in action.option_strings if flag.startswith("--")]
    assert [option for option in options if option != "--help" and f"`{option}" not in rows] == []


def test_every_admin_command_has_a_row_in_the_admin_cli_table():
    rows = table_rows("## Admin CLI\n")
    (commands,) = [a for a in admin_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert [name for name in commands.choices if not re.search(rf"`{name}\b", rows)] == []


def test_every_queue_core_name_the_readme_gives_exists():
    missing = []
    for name in sorted(set(re.findall(r"(?<![-\w.])queue_core(?:\.\w+)+", README))):
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):  # the longest importable module, then attributes
            try:
                found = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for attribute in parts[cut:]:
                found = getattr(found, attribute, None)
            if found is None:
                missing.append(name)
            break
    assert missing == []


def test_the_job_queue_methods_the_readme_lists_are_the_protocols():
    """Someone writing a queue of their own from the README implements the methods it names: they were the
    claim/complete methods of an earlier worker, and a queue with only those failed ``check_job_queue``."""
    from queue_core.worker.protocol import JOB_QUEUE_METHODS

    start = README.index("- `queue_core.worker.JobQueue`")
    sentence = README[start : README.index("\n- ", start + 1)].split("names exactly what a `Worker` calls:")[1]
    listed = re.findall(r"`(\w+)`", sentence.split(".")[0])
    assert sorted(listed) == sorted(JOB_QUEUE_METHODS)
