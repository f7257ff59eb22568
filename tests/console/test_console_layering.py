"""The console reads and writes jobs only through queue_core.store.repository: no SQL, no queries of its own."""

from __future__ import annotations

import re
from pathlib import Path

CONSOLE = Path(__file__).resolve().parents[2] / "console"
QUERY_BUILDING = re.compile(
    r"execute_sql|pw\.SQL|pw\.fn|\.select\(|\.where\(|\bSELECT\b|UPDATE jobs|INSERT INTO|DELETE FROM"
)


def test_console_has_no_sql_of_its_own():
    sources = sorted(CONSOLE.rglob("*.py"))
    assert any(path.name == "app.py" for path in sources)
    offenders = [
        f"{path.relative_to(CONSOLE)}:{number}: {line.strip()}"
        for path in sources
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if QUERY_BUILDING.search(line)
    ]
    assert offenders == []


def test_styles_live_in_the_tcss_file():
    assert (CONSOLE / "console.tcss").is_file()
    for path in CONSOLE.rglob("*.py"):
        assert "DEFAULT_CSS" not in path.read_text() and "CSS = " not in path.read_text(), path
