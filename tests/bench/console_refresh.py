"""The console's refresh (``console.snapshot.load_snapshot``: counts + visible windows) on big databases.

Databases of 10k, 100k and 1M jobs are written once with raw ``executemany`` into a cache folder
(``$BENCH_CACHE`` or ``~/.cache/queue-core-bench``) and reused by later runs; refreshes only read them.
"""

from __future__ import annotations

import os
import random
import sqlite3
import statistics
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from queue_core.store.database import DEFAULT_PAGE_SIZE, open_database
from queue_core.store.models import SQLITE_TIME_FORMAT
from queue_core.store.repository import JobRepository
from queue_core.store.schema import SCHEMA_VERSION

from .measure import Result, reap, spawn

CACHE = Path(os.environ.get("BENCH_CACHE") or Path.home() / ".cache" / "queue-core-bench")
TYPES = [f"type-{i}" for i in range(12)]
# A long-lived queue: mostly finished jobs, a backlog and some failures; RUNNING jobs (what the workers'
# threads hold at once, a third of them stale) among the newest.
MIX = (("completed", 0.90), ("pending", 0.07), ("failed", 0.03))
RUNNING = 200
DATA_VERSION = 2  # bump when the generated rows change, so cached databases are rebuilt
STALE_AFTER = timedelta(seconds=300)
REFRESHES = 15


def big_database(n: int) -> str:
    """The URL of a cached SQLite database holding ``n`` jobs (built on first use, ~1.5 s per 100k)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    # The page size is the file's for good: a new default needs new files.
    path = CACHE / f"console-{n}-schema{SCHEMA_VERSION}-data{DATA_VERSION}-page{DEFAULT_PAGE_SIZE}.db"
    url = f"sqlite:///{path}"
    if path.exists():
        return url
    building = path.with_suffix(".building")
    for leftover in CACHE.glob(building.name + "*"):
        leftover.unlink()
    open_database(f"sqlite:///{building}").close()  # queue_core's schema and indexes
    connection = sqlite3.connect(building, isolation_level=None)
    connection.execute("PRAGMA synchronous = OFF")  # a cache we can rebuild: no need to survive a crash
    connection.execute("BEGIN")
    connection.executemany(
        "INSERT INTO jobs (type, payload, priority, status, retry_count, max_retries, claimed_at, worker_id,"
        " error, created_at, updated_at, run_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, 3, ?, ?, ?, ?, ?, ?, ?)",
        _rows(n),
    )
    connection.execute("COMMIT")
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    building.rename(path)
    return url


def _rows(n: int):
    rng = random.Random(n)
    start = datetime.now(UTC).replace(tzinfo=None) - timedelta(days=7)
    statuses = [status for status, share in MIX for _ in range(int(share * 100))]
    for i in range(n):
        created = start + timedelta(seconds=i * 7 * 86400 / n)
        newest = n - i  # 1 for the last job
        status = "running" if newest <= 10 * RUNNING and newest % 10 == 0 else statuses[i % len(statuses)]
        stamp = created.strftime(SQLITE_TIME_FORMAT)
        finished = (created + timedelta(seconds=rng.uniform(0.01, 5))).strftime(SQLITE_TIME_FORMAT)
        claimed = stamp if status != "pending" else None
        worker = f"host-{i % 8}" if status != "pending" else None
        error = "ValueError: boom" if status == "failed" else None
        heartbeat = finished if status == "running" and i % 3 else None
        updated = finished if status in ("completed", "failed") else stamp
        priority = rng.choice((0, 0, 0, 10, 20, 30))
        yield (TYPES[i % len(TYPES)], f'{{"i":{i}}}', priority, status, 0, claimed, worker, error, stamp, updated,
               stamp, heartbeat)  # fmt: skip


def load_snapshot_function():
    """The console's one-refresh read, or None while the console is not there."""
    try:
        from console.snapshot import load_snapshot
    except ImportError:
        return None
    return load_snapshot


def refresh_times(sizes: list[int]) -> list[Result]:
    results = []
    load_snapshot = load_snapshot_function()
    for n in sizes:
        result = Result(f"sqlite.console.refresh_{n}", f"console refresh (load_snapshot), {n:,} jobs", n, "ms")
        results.append(result)
        if load_snapshot is None:
            result.error = "console.snapshot not found"
            continue
        db = open_database(big_database(n))
        repo = JobRepository(db)
        load_snapshot(repo, stale_after=STALE_AFTER)  # warm the page cache: we measure refreshes, not disk
        for _ in range(REFRESHES):
            start = time.perf_counter()
            load_snapshot(repo, stale_after=STALE_AFTER)
            result.values.append((time.perf_counter() - start) * 1000)
        db.close()
        result.notes.append(f"{REFRESHES} refreshes, p90 {statistics.quantiles(result.values, n=10)[-1]:.1f} ms")
    return results


# Every view of the console (issue 15), as its refresh reads it: the live tables and the header always, plus
# what the view on screen shows. "query" is the live view narrowed by an operator's query no index serves:
# the console searches it once on its own thread (store.search, timed as "search" here) and each refresh
# reads the matches found, by id.
VIEWS = ("tables", "scheduled", "completed", "cancelled", "queues", "workers", "schedules", "activity", "query")
VIEW_QUERY = "type:type-3 boom"  # free text: every failed job of type-3 matches


def view_refresh_times(n: int) -> list[Result]:
    """One refresh of each view on a database of ``n`` jobs (median of REFRESHES)."""
    try:
        from console.snapshot import load_snapshot, read_queues, read_workers
        from queue_core.store.query import parse_query
        from queue_core.store.search import FoundJobs, search
    except ImportError:
        return []
    # The reads the console's views add to a refresh (console.views.view_reads); no schedules here.
    view_reads = {"queues": read_queues, "workers": read_workers, "schedules": lambda repo, now: []}
    db = open_database(big_database(n))
    repo = JobRepository(db)
    searched = Result(f"sqlite.console.search_{n}", f"console query search ({VIEW_QUERY}), {n:,} jobs", n, "ms")
    steps = list(search(repo, parse_query(VIEW_QUERY)))
    searched.values = [steps[0].seconds * 1000]
    searched.notes.append(f"first step {steps[0].searched:,} jobs; then: {steps[-1].text()}")
    found = FoundJobs(parse_query(VIEW_QUERY), steps[-1])
    results = [searched]
    for view in VIEWS:
        reads = {view: view_reads[view]} if view in view_reads else {}
        result = Result(f"sqlite.console.view_{view}_{n}", f"console refresh, view {view}, {n:,} jobs", n, "ms")
        results.append(result)
        query = found if view == "query" else None
        shown = "tables" if view == "query" else view
        options = {"stale_after": STALE_AFTER, "view": shown, "extra_reads": reads, "query": query}
        start, cpu = time.perf_counter(), time.process_time()
        load_snapshot(repo, **options)  # warm the page cache (and the activity's settled minutes)
        first, cpu_times = (time.perf_counter() - start) * 1000, [(time.process_time() - cpu) * 1000]
        for _ in range(REFRESHES):
            start, cpu = time.perf_counter(), time.process_time()
            load_snapshot(repo, **options)
            result.values.append((time.perf_counter() - start) * 1000)
            cpu_times.append((time.process_time() - cpu) * 1000)
        # CPU time as well: on a machine others share, the wall clock also counts their load.
        result.notes.append(
            f"{REFRESHES} refreshes, p90 {statistics.quantiles(result.values, n=10)[-1]:.1f} ms, "
            f"CPU median {statistics.median(cpu_times[1:]):.1f} ms; first {first:.1f} ms (CPU {cpu_times[0]:.1f})"
        )
    db.close()
    return results


def console_rss(n: int, *, all_views: bool = False) -> Result:
    """Peak RSS of the console app in a child process, showing a database of ``n`` jobs for a few refreshes
    (the Jobs view; with ``all_views``, every view in turn and a searched query)."""
    key, label = ("rss_all_views", "every view") if all_views else ("rss", "Jobs view")
    result = Result(f"sqlite.console.{key}", f"console peak RSS, {label}, {n:,} jobs", n, "MB")
    child = spawn(["-m", "tests.bench.console_probe", big_database(n), *(["--all-views"] if all_views else [])])
    code, rss, stderr = reap(child, timeout=300)
    if code != 0:
        result.error = f"console probe failed: {stderr.strip().splitlines()[-1] if stderr.strip() else code}"
    else:
        result.values = [rss]
        result.notes.append(stderr.strip().splitlines()[-1] if stderr.strip() else "")
    return result
