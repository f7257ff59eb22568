"""What SQLite's page size and the job indexes cost per job: ``python -m tests.bench.schema_levers``.

The SQLite drain and ``create`` targets of issue 17 are bound by the per-transaction cost of our own SQL
(see README, Performance). This measures the schema's levers on a bare ``sqlite3`` connection, no ORM and no
worker: one-row INSERTs (autocommit), and one ``BEGIN IMMEDIATE`` per job holding the previous job's
complete and the next claim, as a one-slot worker does. Each variant starts from queue_core's schema (a
fresh file from ``open_database``) and changes it; rounds interleave the variants so that a machine that
drifts moves them all alike. Options: ``-n`` jobs per round (5000), ``--rounds`` (3).

The variants are experiments, not proposals: dropping an index the console's reads use would trade its
refresh at 1M jobs for these numbers, and a smaller page costs the console's range reads (README says how
much).
"""

from __future__ import annotations

import argparse
import itertools
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from queue_core.store.database import DEFAULT_PAGE_SIZE, open_database

from .raw import CLAIM, COMPLETE, RawQueue, sqlite_connection

# name -> (page size, statements run on the fresh schema)
VARIANTS: dict[str, tuple[int, list[str]]] = {
    f"queue_core's schema ({DEFAULT_PAGE_SIZE // 1024} KiB pages)": (DEFAULT_PAGE_SIZE, []),
    "4 KiB pages (SQLite's default; queue_core's before 2 KiB)": (4096, []),
    "1 KiB pages": (1024, []),
    "v9's claim index, every job by status (no INDEXED BY)": (
        DEFAULT_PAGE_SIZE,
        [
            "DROP INDEX jobs_pending_claim",
            "CREATE INDEX jobs_claim ON jobs (status, priority DESC, run_at, id)",
        ],
    ),
    "type index without status": (
        DEFAULT_PAGE_SIZE,
        ["DROP INDEX jobs_type_due", "CREATE INDEX jobs_type ON jobs (type)"],
    ),
    "the claim's pending-only index and nothing else (the floor)": (
        DEFAULT_PAGE_SIZE,
        [
            "DROP INDEX jobs_type_due",
            "DROP INDEX jobs_status_updated",
            "DROP INDEX jobs_queue_claim",
        ],
    ),
}


def fresh(folder: Path, numbers, page_size: int, statements: list[str]) -> Path:
    path = folder / f"levers-{next(numbers)}.db"
    connection = sqlite3.connect(path)
    connection.execute(f"PRAGMA page_size = {page_size}")  # before the first table: the file's page size
    connection.execute("VACUUM")
    connection.close()
    open_database(f"sqlite:///{path}").close()  # queue_core's schema, WAL
    connection = sqlite3.connect(path, isolation_level=None)
    for statement in statements:
        connection.execute(statement)
    connection.close()
    return path


def one_round(path: Path, n: int) -> tuple[float, float]:
    """(INSERTs a second, complete + claim transactions a second) on the database at ``path``."""
    raw = RawQueue(sqlite_connection(str(path)), postgres=False)
    pending_index = raw.connection.execute("SELECT 1 FROM sqlite_master WHERE name = 'jobs_pending_claim'").fetchone()
    start = time.perf_counter()
    for _ in range(n):
        raw.insert_one()
    inserts = n / (time.perf_counter() - start)
    claim = CLAIM.format(lock="")
    if pending_index:  # named, as queue_core's claim names it (statements.claim_source)
        claim = claim.replace("FROM jobs WHERE", "FROM jobs INDEXED BY jobs_pending_claim WHERE")
    connection, previous, jobs = raw.connection, None, 0
    start = time.perf_counter()
    while True:
        connection.execute("BEGIN IMMEDIATE")
        if previous is not None:
            connection.execute(COMPLETE, (raw.now(), previous, "levers", 0))
        now = raw.now()
        row = connection.execute(claim, ("levers", now, now, now)).fetchone()
        connection.execute("COMMIT")
        if row is None:
            break
        previous, jobs = row[0], jobs + 1
    drains = jobs / (time.perf_counter() - start)
    connection.close()
    return inserts, drains


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=5000, help="jobs per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    numbers = itertools.count()
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="levers-") as folder:
        for _ in range(args.rounds):
            for name, (page_size, statements) in VARIANTS.items():
                path = fresh(Path(folder), numbers, page_size, statements)
                results[name].append(one_round(path, args.n))
    base_insert, base_drain = (statistics.median(v[i] for v in results[next(iter(VARIANTS))]) for i in (0, 1))
    print(f"SQLite {sqlite3.sqlite_version}, n = {args.n}, median of {args.rounds} rounds")
    print(f"{'variant':<62} {'INSERT/s':>9} {'×':>5} {'complete+claim/s':>17} {'×':>5}")
    for name, values in results.items():
        inserts, drains = (statistics.median(v[i] for v in values) for i in (0, 1))
        print(f"{name:<62} {inserts:>9,.0f} {inserts / base_insert:>5.2f} {drains:>17,.0f} {drains / base_drain:>5.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
