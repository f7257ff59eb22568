"""The help (``?``) lists every key of every context: the app's BINDINGS, and those of each screen and view of
the console, found by walking the package (not a list kept by hand, which is how the job detail's ``m b o i``
and the activity view's ``← →`` went missing from it)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest

import console
from console.app import QueueConsole
from console.screens.detail import JobDetailScreen
from console.screens.help import HelpScreen, key_names
from console.widgets.activity.view import ActivityView

pytestmark = pytest.mark.asyncio


def classes_with_bindings() -> set[type]:
    """Every class defined in the console with BINDINGS of its own (a subclass without them adds no key)."""
    found = set()
    for info in pkgutil.walk_packages(console.__path__, "console."):
        if info.name.endswith("__main__"):
            continue  # running it starts the console
        module = importlib.import_module(info.name)
        for _name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and "BINDINGS" in vars(cls):
                found.add(cls)
    return found


async def test_the_help_lists_every_binding_of_the_app_and_of_every_screen(pilot):
    classes = classes_with_bindings()
    assert {QueueConsole, JobDetailScreen, ActivityView, HelpScreen} <= classes  # the walk finds them
    await pilot.press("question_mark")
    assert isinstance(pilot.app.screen, HelpScreen)
    lines = pilot.app.screen.keys_text().splitlines()
    missing = []
    for cls in sorted(classes, key=lambda cls: cls.__qualname__):
        for binding in cls.BINDINGS:
            keys, name, tooltip = key_names(binding), binding.description, binding.tooltip
            row = re.compile(rf"^\s*{re.escape(keys)}\s+{re.escape(name)}\s+{re.escape(tooltip)}\s*$")
            if not (tooltip and any(row.match(line) for line in lines)):
                missing.append(f"{cls.__qualname__}: {keys} {name} ({tooltip or 'no tooltip'})")
    assert not missing, "not in the help:\n" + "\n".join(missing)
