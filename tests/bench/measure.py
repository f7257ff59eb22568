"""Timing, memory and process helpers shared by every scenario, and the tables the run prints."""

from __future__ import annotations

import compileall
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PEAK_RSS_MARK = "peak-rss-kb"  # tests.bench.peak_rss's last stderr line


@dataclass
class Result:
    """One scenario: a value per round (jobs/s, or ms for latencies), plus whatever the rounds noticed."""

    key: str
    label: str
    n: int
    unit: str  # "jobs/s" | "ms" | "MB"
    values: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None  # set when the scenario could not run at all (e.g. a peer is not installed)

    @property
    def median(self) -> float | None:
        return statistics.median(self.values) if self.values else None


def repeat(rounds: int, one_round: Callable[[], float]) -> list[float]:
    """Run ``one_round`` ``rounds`` times; each returns its own measured value (setup excluded by it)."""
    return [one_round() for _ in range(rounds)]


def note_peak_rss(result: Result, mb: float, what: str = "peak RSS") -> None:
    """Keep one note per scenario: the highest peak RSS any round saw."""
    previous = getattr(result, "_peak_rss", 0.0)
    if mb > previous:
        result._peak_rss = mb
        result.notes = [n for n in result.notes if not n.startswith(what)] + [f"{what} {mb:.0f} MB"]


def rate(n: int, seconds: float) -> float:
    return n / seconds if seconds > 0 else float("inf")


class Stopwatch:
    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.start


def child_env(**extra: str) -> dict:
    """Children import queue_core and tests.bench from this checkout, whatever the current directory."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def spawn(args: list[str], *, cpu: int | None = None, **extra_env: str) -> subprocess.Popen:
    """``python ARGS`` in a child; ``-m MODULE`` runs under tests.bench.peak_rss, which reports its peak RSS.
    ``cpu``: the child and its threads run on that CPU only, as under ``taskset -c CPU``."""
    if args[:1] == ["-m"]:
        args = ["-m", "tests.bench.peak_rss", *args[1:]]
    return subprocess.Popen(
        [sys.executable, *args],
        cwd=ROOT,
        env=child_env(**extra_env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=None if cpu is None else lambda: os.sched_setaffinity(0, {cpu}),
    )


def compile_bytecode(root: Path) -> None:
    """Write the bytecode of queue_core and console in the checkout at ``root``, as pip does when it installs a
    package (the peers' included).

    An editable install or a fresh ``git worktree`` has none, and with ``PYTHONDONTWRITEBYTECODE`` set (this
    machine sets it) every worker process would compile our ~50 modules from source at start-up: ~0.06 s the
    peers' processes do not spend, and in ``tests.bench.ab`` ~40 µs of CPU a job of a 4 x 4 PostgreSQL drain
    of 5,000 jobs charged to the side without it.
    """
    for package in ("queue_core", "console"):
        compileall.compile_dir(root / package, quiet=1)


def first_cpu() -> int:
    """The lowest-numbered CPU this process may run on."""
    return min(os.sched_getaffinity(0))


def reap(process: subprocess.Popen, timeout: float = 120.0) -> tuple[int, float, str]:
    """Wait for a child we spawned: (exit code, peak RSS in MB as it reported it, the rest of its stderr)."""
    try:
        _out, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        _out, stderr = process.communicate()
    lines = (stderr or "").rstrip().splitlines()
    peak_kb = 0
    if lines and lines[-1].startswith(PEAK_RSS_MARK):
        peak_kb = int(lines.pop().split()[1])
    return process.returncode, peak_kb / 1024, "\n".join(lines)


def machine_summary() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} cores ({cpu}), {memory_gb:.0f} GB RAM, {platform.system()} {platform.release()}"


def versions() -> str:
    import sqlite3
    from importlib import metadata

    parts = [f"Python {platform.python_version()}", f"SQLite {sqlite3.sqlite_version}"]
    for name in ("peewee", "psycopg", "huey", "procrastinate", "pgqueuer"):
        try:
            parts.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            parts.append(f"{name} (not installed)")
    return ", ".join(parts)


def format_value(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "jobs/s":
        return f"{value:,.0f} jobs/s"
    return f"{value:,.1f} {unit}"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    lines = [
        "| " + " | ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)) + " |"
        for row in [header, ["-" * w for w in widths], *rows]
    ]
    return "\n".join(lines)
