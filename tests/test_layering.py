"""What the import contracts (pyproject.toml, ``lint-imports`` in .ci/run) cannot see: imports made at run time.

lint-imports reads import statements; these tests import the modules and look at ``sys.modules``, so an
``importlib.import_module`` or a plugin hook that drags in a UI or the web stack is caught too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WEB_STACK = ("fastapi", "starlette", "uvicorn")


def loaded_after_importing(modules: list[str], watched: tuple[str, ...]) -> list[str]:
    """The top-level packages among ``watched`` that importing ``modules`` in a fresh interpreter loads."""
    imports = "; ".join(f"import {name}" for name in modules)
    tops = "{m.split('.')[0] for m in sys.modules}"
    check = f"import json, sys; {imports}; print(json.dumps(sorted({tops} & set({list(watched)!r}))))"
    out = subprocess.run([sys.executable, "-c", check], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def domain_modules() -> list[str]:
    """Every module of queue_core outside the HTTP server."""
    paths = (ROOT / "queue_core").rglob("*.py")
    modules = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts) for p in paths if p.stem not in ("__main__", "__init__")
    )
    assert "queue_core.store.repository" in modules
    return [name for name in modules if not name.startswith("queue_core.server")]


def test_the_domain_never_loads_textual_or_the_web_stack():
    assert loaded_after_importing(domain_modules(), ("textual", "console", *WEB_STACK)) == []


def test_a_remote_worker_never_loads_fastapi():
    # queue-worker --api: the worker CLI and HttpQueue, nothing of the server behind them.
    assert loaded_after_importing(["queue_core.client", "queue_core.worker.cli"], WEB_STACK) == []
