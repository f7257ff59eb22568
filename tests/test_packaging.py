"""What a wheel of queue-core carries beside its modules: an application installs it from one (``pip install
queue-core``, not ``-e``), and setuptools puts in only the data files ``[tool.setuptools.package-data]`` names."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("queue_core", "console")


def declared() -> dict[str, list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return config["tool"]["setuptools"].get("package-data", {})


def data_files(package: str) -> list[Path]:
    return sorted(
        path
        for path in (ROOT / package).rglob("*")
        if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts
    )


def test_every_data_file_of_the_packages_is_in_the_wheel():
    """console.tcss was left out: queue-console installed from a wheel stopped at start with a traceback,
    "StylesheetError: unable to read CSS file .../console/console.tcss"."""
    patterns = declared()
    for package in PACKAGES:
        files = data_files(package)
        assert files, package  # py.typed at least
        for path in files:
            relative = path.relative_to(ROOT / package).as_posix()
            assert any(fnmatch.fnmatch(relative, pattern) for pattern in patterns.get(package, [])), (
                f"{package}/{relative} is not in [tool.setuptools.package-data]; a wheel would lack it"
            )


def test_the_packages_say_they_carry_their_type_hints():
    """PEP 561's marker: without it an application's mypy skipped queue_core ("missing library stubs or py.typed
    marker") and checked none of its calls to the task API."""
    for package in PACKAGES:
        assert (ROOT / package / "py.typed").is_file(), package
        assert "py.typed" in declared().get(package, []), package
