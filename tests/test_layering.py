"""queue_core is the domain: it must never import the UI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_queue_core_never_imports_textual():
    package = ROOT / "queue_core"
    modules = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts)
        for p in package.rglob("*.py")
        if p.stem not in ("__main__", "__init__")
    )
    assert "queue_core.store.repository" in modules
    imports = "; ".join(f"import {name}" for name in modules)
    check = f"import sys; {imports}; bad = sorted(m for m in sys.modules if m.split('.')[0] == 'textual'); print(bad)"
    out = subprocess.run([sys.executable, "-c", check], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_no_textual_in_queue_core_sources():
    for path in (ROOT / "queue_core").rglob("*.py"):
        text = path.read_text()
        assert "import textual" not in text and "from textual" not in text, path
