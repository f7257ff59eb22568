"""The worker package's shape: one table of defaults read everywhere, no import cycles, short modules."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

from console.options import DEFAULT_STALE_AFTER
from queue_core.worker import DEFAULTS, Worker, WorkerDefaults
from queue_core.worker.cli import build_parser, build_worker

ROOT = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 400, 60


def test_the_worker_signature_the_cli_and_the_console_read_one_table_of_defaults():
    parameters = inspect.signature(Worker).parameters
    args = build_parser().parse_args([])
    built = build_worker(args, object(), [], None)  # what the CLI makes of no flags at all
    flags = vars(args)
    for setting in dataclasses.fields(WorkerDefaults):
        expected = getattr(DEFAULTS, setting.name)
        assert parameters[setting.name].default == expected, setting.name
        if setting.name == "concurrency":  # None when not given, so that --queues refuses any given value
            assert flags["concurrency"] is None and built.concurrency == expected
        else:
            assert flags[setting.name] == expected, setting.name
    assert DEFAULTS.stale_after == DEFAULT_STALE_AFTER


def test_the_cli_help_shows_the_defaults_of_the_table():
    help_text = " ".join(build_parser().format_help().split())
    assert f"first wait when idle (default {DEFAULTS.poll_interval:g})" in help_text
    assert f"reap claims with no heartbeat for this long (default {DEFAULTS.stale_after:g})" in help_text


def _modules() -> dict[str, Path]:
    modules = {}
    for path in (ROOT / "queue_core").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _imported(module: str, path: Path, node: ast.Import | ast.ImportFrom, modules: dict) -> set[str]:
    """The queue_core modules one import statement names (``from .x import y`` names x.y when that is a module)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names} & modules.keys()
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    if node.level:
        base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    named = {f"{base}.{alias.name}" for alias in node.names}
    return {name if name in modules else base for name in named} & modules.keys()


def test_no_import_cycle_inside_queue_core():
    # Every import counts, deferred ones in functions too: a cycle that only works because an import is late
    # is still a cycle (it breaks as soon as someone moves that import up).
    modules = _modules()
    graph = {}
    for module, path in modules.items():
        nodes = (n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Import | ast.ImportFrom))
        graph[module] = set().union(*(_imported(module, path, n, modules) for n in nodes)) - {module}
    state: dict[str, str] = {}

    def visit(module: str, trail: list[str]) -> None:
        state[module] = "open"
        for dependency in sorted(graph[module]):
            assert state.get(dependency) != "open", " -> ".join([*trail, module, dependency])
            if dependency not in state:
                visit(dependency, [*trail, module])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [])
    assert "queue_core.worker.loop" in graph and "queue_core.worker.cli" in graph


def test_worker_modules_and_functions_stay_short():
    for path in sorted((ROOT / "queue_core" / "worker").glob("*.py")):
        text = path.read_text()
        assert text.count("\n") <= MAX_MODULE_LINES, path.name
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                assert length <= MAX_FUNCTION_LINES, f"{path.name}:{node.name} is {length} lines"
