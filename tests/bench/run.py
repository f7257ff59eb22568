"""Run every scenario, the compared ones round by round in turn, and print medians, ratios and the issue's targets.

python -m tests.bench [--quick] [--backend sqlite|postgresql|all] [--only NAME] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from . import console_refresh, peers, scenarios, workers
from .backends import PostgresBackend, SqliteBackend
from .measure import ROOT, Result, compile_bytecode, format_value, machine_summary, markdown_table, versions
from .scenarios import Context

# Jobs per round and rounds, per backend. PostgreSQL commits wait for an fsync here (~1-3 ms), so its
# peers drain at a few hundred jobs/s: a smaller N keeps the full run near ten minutes.
# PostgreSQL drains 5,000 jobs: with fewer, four processes spend most of the drain starting Python.
FULL = {"sqlite": {"n": 10_000, "rounds": 5}, "postgresql": {"n": 5000, "rounds": 3}}
QUICK = {"sqlite": {"n": 300, "rounds": 2}, "postgresql": {"n": 300, "rounds": 2}}


# (name for --only, scenario) pairs, run in this order; these first on every backend.
REFERENCE_AND_OURS = [
    ("raw", scenarios.raw_insert),
    ("raw", scenarios.raw_drain),
    ("ours", scenarios.ours_create),
    ("ours", scenarios.ours_create_many),
    ("ours", scenarios.ours_drain_in_process),
    ("ours", scenarios.ours_bulk_retry),
]


def sqlite_plan(ctx: Context) -> list:
    return [
        *REFERENCE_AND_OURS,
        ("huey", peers.huey_enqueue),
        ("huey", peers.huey_drain),
        ("workers", lambda c: workers.worker_drains(c, [1, 2, 4], concurrent=[1], one_cpu=True)),
        ("latency", lambda c: workers.pickup_latency(c, 2 if c.quick else 8)),
        ("console", lambda c: console_refresh.refresh_times([10_000] if c.quick else [10_000, 100_000, 1_000_000])),
        ("console", lambda c: console_refresh.view_refresh_times(10_000 if c.quick else 1_000_000)),
        ("console", lambda c: console_refresh.console_rss(10_000 if c.quick else 1_000_000)),
        ("console", lambda c: console_refresh.console_rss(10_000 if c.quick else 1_000_000, all_views=True)),
    ]


def postgres_plan(ctx: Context) -> list:
    # The peers drain at a few hundred jobs/s here: one process count each keeps --quick short.
    drain_processes = [4] if ctx.quick else [1, 4]
    return [
        *REFERENCE_AND_OURS,
        ("procrastinate", lambda c: peers.procrastinate_scenarios(c, drain_processes)),
        ("pgqueuer", lambda c: peers.pgqueuer_scenarios(c, drain_processes)),
        ("workers", lambda c: workers.worker_drains(c, [1, 2, 4], concurrent=[4], pooled=[(4, 4), (4, 1)])),
        # Four times the usual backlog: a claim that grew with the backlog (one planned without statistics
        # sorted every pending job) shows as a rate well below the drain above.
        ("workers", lambda c: workers.worker_drains(replace(c, n=4 * c.n), [], concurrent=[4], backlog=True)),
        ("latency", lambda c: workers.pickup_latency(c, 2 if c.quick else 8)),
    ]


# Scenarios measured as rates and compared with one another: their rounds interleave (round 1 of every one,
# then round 2...), so a stretch of a slower machine (a busy neighbour on a shared host) falls on every side
# of a ratio alike instead of on whichever scenario ran then. The rest (latency, the console's refreshes and
# memory) run once, after them.
INTERLEAVED = frozenset({"raw", "ours", "huey", "procrastinate", "pgqueuer", "workers"})


def run_backend(name: str, args, workdir: Path, sizes: dict) -> list[Result]:
    try:
        backend = (SqliteBackend if name == "sqlite" else PostgresBackend)(workdir)
    except Exception as exc:  # e.g. no PostgreSQL server: say so in the table, run the rest
        failed = Result(f"{name}.backend", f"{name}: cannot open the database", 0, "jobs/s")
        failed.error = f"{type(exc).__name__}: {exc}".splitlines()[0]
        return [failed]
    ctx = Context(backend, sizes["n"], sizes["rounds"], workdir, args.quick)
    plan = sqlite_plan(ctx) if name == "sqlite" else postgres_plan(ctx)
    chosen = [(n, s) for n, s in plan if not (args.only and args.only not in n) and n not in (args.skip or ())]
    merged: dict[str, Result] = {}  # by key, in the order first produced
    try:
        one_round = replace(ctx, rounds=1)
        for round_number in range(ctx.rounds):
            for scenario_name, scenario in chosen:
                if scenario_name in INTERLEAVED:
                    for result in run_scenario(scenario_name, scenario, one_round, f"round {round_number + 1}"):
                        merge_round(merged, result)
        for scenario_name, scenario in chosen:
            if scenario_name not in INTERLEAVED:
                for result in run_scenario(scenario_name, scenario, ctx, ""):
                    merged[result.key] = result
    finally:
        backend.close()
    return list(merged.values())


def run_scenario(name: str, scenario, ctx: Context, when: str) -> list[Result]:
    started = time.perf_counter()
    try:
        produced = scenario(ctx)
    except ImportError as exc:  # a peer that is not installed: say so in the table, run the rest
        produced = Result(f"{name}.{ctx.backend.name}", f"{name}: not installed", 0, "jobs/s")
        produced.error = f"{exc}; pip install -e '.[bench]'"
    produced = produced if isinstance(produced, list) else [produced]
    for result in produced:
        report_progress(result, time.perf_counter() - started, when)
    return produced


def merge_round(merged: dict[str, Result], result: Result) -> None:
    """Add one round's ``result`` to the one of its key: its values, the highest peak RSS note, any error."""
    kept = merged.setdefault(result.key, result)
    if kept is result:
        return
    kept.values.extend(result.values)
    kept.error = kept.error or result.error
    peak = getattr(result, "_peak_rss", None)
    if peak is not None and peak > getattr(kept, "_peak_rss", 0.0):
        kept._peak_rss, kept.notes = peak, result.notes
    # A lower peak than the one kept is not another note ("peak RSS 51 MB; peak RSS 50 MB").
    others = [note for note in result.notes if peak is None or "peak RSS" not in note]
    kept.notes += [note for note in others if note not in kept.notes]


def report_progress(result: Result, seconds: float, when: str = "") -> None:
    shown = result.error or format_value(result.median, result.unit)
    when = f" {when}" if when else ""
    print(f"  {result.key:<34} {shown}  ({seconds:.1f}s{when})", file=sys.stderr, flush=True)


# --- the tables -----------------------------------------------------------------------------------


def reference_of(result: Result) -> str | None:
    """The raw reference a scenario is compared with: same backend, same kind of work."""
    backend, rest = result.key.split(".", 1)
    if rest.startswith("raw."):
        return None
    if "drain" in rest or "steady" in rest:
        return f"{backend}.raw.drain"
    if "enqueue" in rest or "create" in rest:
        return f"{backend}.raw.insert"
    return None


def ratio(results: dict[str, Result], numerator: str, denominator: str) -> float | None:
    a, b = results.get(numerator), results.get(denominator)
    if a is None or b is None or a.median is None or b.median is None or not b.median:
        return None
    return a.median / b.median


def results_table(results: list[Result]) -> str:
    by_key = {r.key: r for r in results}
    rows = []
    for r in results:
        reference = reference_of(r)
        vs_raw = ratio(by_key, r.key, reference) if reference else None
        spread = f"{min(r.values):,.0f}–{max(r.values):,.0f}" if len(r.values) > 1 and r.unit == "jobs/s" else ""
        if r.values and r.unit != "jobs/s":
            spread = f"{min(r.values):,.1f}–{max(r.values):,.1f}" if len(r.values) > 1 else ""
        rows.append(
            [
                r.label if not r.key.startswith("postgresql.") else f"[pg] {r.label}",
                f"{r.n:,}" if r.n else "",
                r.error or format_value(r.median, r.unit),
                spread,
                f"{vs_raw:.2f}" if vs_raw is not None else "",
                "; ".join(r.notes),
            ]
        )
    return markdown_table(["scenario", "N", "median", "min–max", "× raw", "notes"], rows)


# Issue 17's targets: (description, numerator key, denominator key or None for an absolute threshold, required).
TARGETS = [
    (
        "SQLite drain, 1 worker process (default settings) ≥ 1.2× Huey's consumer",
        "sqlite.ours.drain_1p",
        "sqlite.huey.drain",
        1.2,
    ),
    (
        "SQLite drain, 1 worker process --concurrency 4 ≥ 2× Huey's consumer",
        "sqlite.ours.drain_1p_c4",
        "sqlite.huey.drain",
        2.0,
    ),
    # The same two without start-up: ours from their rows, Huey's from the polls of its queue.
    (
        "… the same two, start-up and exit in neither: 1 worker process ≥ 1.2× Huey's consumer",
        "sqlite.ours.steady_1p",
        "sqlite.huey.steady",
        1.2,
    ),
    (
        "… and --concurrency 4 ≥ 2× Huey's consumer",
        "sqlite.ours.steady_1p_c4",
        "sqlite.huey.steady",
        2.0,
    ),
    ("SQLite: 2 worker processes ≥ 1.0× one", "sqlite.ours.drain_2p", "sqlite.ours.drain_1p", 1.0),
    ("SQLite single create ≥ 0.8× Huey's enqueue", "sqlite.ours.create", "sqlite.huey.enqueue", 0.8),
    # Against the raw loop, which starts no process: the drains from their first claim to their last
    # completion, start-up in neither (the rule); with start-up they are in the results table.
    (
        "PostgreSQL drain, 4 processes (--concurrency 4) ≥ 3× the raw claim+complete loop, start-up in neither",
        "postgresql.ours.steady_4p_c4",
        "postgresql.raw.drain",
        3.0,
    ),
    (
        "PostgreSQL drain, 4 processes (--concurrency 4) ≥ 5× pgqueuer's 4 processes, start-up in both",
        "postgresql.ours.drain_4p_c4",
        "postgresql.pgqueuer.drain_4p",
        5.0,
    ),
    # How our product runs four processes: one command forks them once it has started (pgqueuer has no such
    # option; its four processes are four commands).
    (
        "… the same, our 4 processes as one command (--processes 4), start-up in both",
        "postgresql.ours.drain_4p_c4_pool",
        "postgresql.pgqueuer.drain_4p",
        5.0,
    ),
    # pgqueuer's drain mode waits ~4 s before it exits (peers.PGQUEUER_WINDOW): with start-up and exit the
    # ratio above is mostly that wait; this one compares the drains themselves.
    (
        "… the same, start-up and exit in neither (first pick to last completion, from each one's rows)",
        "postgresql.ours.steady_4p_c4",
        "postgresql.pgqueuer.steady_4p",
        5.0,
    ),
    (
        "… the same with default settings (1 slot a process) ≥ 3× raw, start-up in neither",
        "postgresql.ours.steady_4p",
        "postgresql.raw.drain",
        3.0,
    ),
    (
        "… the same, our 4 processes as one command (--processes 4)",
        "postgresql.ours.steady_4p_pool",
        "postgresql.raw.drain",
        3.0,
    ),
    (
        "PostgreSQL create_many ≥ 1.5× pgqueuer's batch enqueue",
        "postgresql.ours.create_many",
        "postgresql.pgqueuer.enqueue_batch",
        1.5,
    ),
]
# Upper bounds: (description, key, maximum). The console's are issue 17's "no worse" (its figures before).
CEILINGS = [
    ("SQLite pick-up latency of an idle worker ≤ 50 ms (median)", "sqlite.ours.pickup_latency", 50.0),
    ("SQLite idle worker < 2 % of a core", "sqlite.ours.idle_cpu", 2.0),
    ("console refresh with 1M jobs no worse than 13.8 ms (median)", "sqlite.console.refresh_1000000", 13.8),
    ("console peak RSS no worse than 66 MB", "sqlite.console.rss", 66.0),
    ("zero 'database is locked' errors (SQLite workers)", "sqlite.ours.locked_errors", 0.0),
]


def targets_table(results: list[Result]) -> str:
    by_key = {r.key: r for r in results}
    rows = []
    for description, numerator, denominator, required in TARGETS:
        if denominator is None:
            value = by_key[numerator].median if numerator in by_key else None
            shown = format_value(value, "jobs/s")
        else:
            value = ratio(by_key, numerator, denominator)
            shown = f"{value:.2f}×" if value is not None else "-"
        verdict = "not measured" if value is None else ("met" if value >= required else "MISSED")
        rows.append([description, shown, verdict])
    for description, key, maximum in CEILINGS:
        value = by_key[key].median if key in by_key else None
        shown = format_value(value, by_key[key].unit) if value is not None else "-"
        verdict = "not measured" if value is None else ("met" if value <= maximum else "MISSED")
        rows.append([description, shown, verdict])
    return markdown_table(["target", "measured", "verdict"], rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small N and 3 rounds: a smoke run (under 2 minutes)")
    parser.add_argument("--backend", choices=["sqlite", "postgresql", "all"], default="all")
    parser.add_argument(
        "--only", metavar="NAME", help="run only raw, ours, huey, procrastinate, pgqueuer, workers, latency or console"
    )
    parser.add_argument("--skip", metavar="NAME", action="append", help="leave out raw, ours, huey, ... (repeatable)")
    parser.add_argument("--json", metavar="FILE", help="also write every round's value to FILE")
    parser.add_argument(
        "-n", type=int, help="jobs per round (default: SQLite 10000, PostgreSQL 5000; 300 with --quick)"
    )
    parser.add_argument(
        "--rounds", type=int, help="rounds per scenario (default: SQLite 5, PostgreSQL 3; 2 with --quick)"
    )
    args = parser.parse_args(argv)
    sizes = {name: dict(size) for name, size in (QUICK if args.quick else FULL).items()}
    for size in sizes.values():
        size["n"] = args.n or size["n"]
        size["rounds"] = args.rounds or size["rounds"]
    backends = ["sqlite", "postgresql"] if args.backend == "all" else [args.backend]

    compile_bytecode(ROOT)
    started = time.perf_counter()
    workdir = Path(tempfile.mkdtemp(prefix="queue-core-bench-"))
    results: list[Result] = []
    try:
        for name in backends:
            print(f"{name}: N={sizes[name]['n']}, {sizes[name]['rounds']} rounds", file=sys.stderr, flush=True)
            results.extend(run_backend(name, args, workdir, sizes[name]))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    print(f"Machine: {machine_summary()}")
    print(f"Versions: {versions()}")
    for name in backends:
        print(f"{name}: N = {sizes[name]['n']:,} jobs per round, median of {sizes[name]['rounds']} rounds")
    command = " ".join(["python -m tests.bench", *(sys.argv[1:] if argv is None else argv)])
    print(f"Run at {time.strftime('%Y-%m-%d %H:%M %Z')}: {command}")
    print()
    print(results_table(results))
    print()
    print(targets_table(results))
    print(f"\n(run took {time.perf_counter() - started:.0f}s)")
    if args.json:
        Path(args.json).write_text(json.dumps([r.__dict__ | {"median": r.median} for r in results], indent=1))
    return 0
