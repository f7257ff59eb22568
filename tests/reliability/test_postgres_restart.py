"""PostgreSQL restarted twice in the middle of a drain (issue 18): workers, the HTTP API and the console ride
it out without a restart of their own.

The server restarted is a throwaway one this test starts (``scratch_pg``), never the shared one at 5432 that
other tests use. 4 worker processes drain 5,000 jobs whose handler writes each execution to a ledger first.
The first restart is ``pg_ctl restart``; the second is the same stop and start with the database held away
long enough to look at what the API and the console say meanwhile (503 problem+json, a banner).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import httpx
import pytest
from fleet import Fleet, iter_all
from live_server import LiveServer
from scratch_pg import ScratchPostgres, binaries

from console.app import QueueConsole
from console.widgets.jobs.stats_bar import StatsBar
from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository

JOBS, WORKERS = 5_000, 4
# Heartbeats stop while the database is away; a claim must not look stale from that alone, or a job would be
# reaped and run twice for no crash at all. The outages here last seconds.
STALE_AFTER = 20.0
WAIT = 120.0


@pytest.fixture
def scratch_pg():
    bin_dir = binaries()
    if bin_dir is None:
        if os.environ.get("CI"):
            pytest.fail("CI is set but initdb/pg_ctl were not found under /usr/lib/postgresql/*/bin or on PATH")
        pytest.skip("initdb/pg_ctl not found (install PostgreSQL's server package) to run the restart test")
    # Not pytest's tmp_path: its parent is private to root, and the server runs as the postgres user.
    root = Path(tempfile.mkdtemp(prefix="queue-restart-"))
    pg = ScratchPostgres(root, bin_dir)
    pg.start()
    pg.wait_ready()
    yield pg
    pg.stop()
    shutil.rmtree(root, ignore_errors=True)


async def until(condition, what: str, timeout: float = WAIT) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await asyncio.to_thread(condition):
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)


def completed(url: str) -> int:
    db = open_database(url)
    try:
        return JobRepository(db).counts()["completed"]
    except Exception:
        return -1  # the database is away: not yet
    finally:
        db.close()


def api_status(server: LiveServer) -> tuple[int, str, str]:
    response = httpx.get(f"{server.url}/stats", timeout=10)
    return response.status_code, response.headers.get("content-type", ""), response.text


def banner(app: QueueConsole) -> str:
    return str(app.query_one(StatsBar).render())


@pytest.mark.asyncio
@pytest.mark.timeout(900)
async def test_postgres_restarted_twice_mid_drain(scratch_pg, tmp_path):
    url = scratch_pg.url
    repo = JobRepository(open_database(url))
    with repo.db.atomic():
        repo.create_many([{"type": "record", "payload": {"i": i, "max_sleep": 0.002}} for i in range(JOBS)])
    repo.db.close()
    fleet = Fleet(url, tmp_path / "ledger.db", tmp_path, stale_after=STALE_AFTER)
    for _ in range(WORKERS):
        fleet.start("drain")
    pids = {w: p.pid for w, p in fleet.procs.items()}
    seen_503 = []
    with LiveServer(url) as server:
        server_pid = server.process.pid
        app = QueueConsole(JobRepository(open_database(url)), refresh_interval=0.3, db_label="scratch")
        async with app.run_test(size=(120, 40)) as pilot:
            await until(lambda: completed(url) >= JOBS // 5, "a fifth of the drain")
            await asyncio.to_thread(scratch_pg.restart)  # 1: pg_ctl restart, as an upgrade would
            await until(lambda: completed(url) >= JOBS // 2, "the drain to carry on after the first restart")

            await asyncio.to_thread(scratch_pg.stop_fast)  # 2: the same restart, held down for a look
            await until(lambda: api_status(server)[0] == 503, "the API's 503")
            status, content_type, body = api_status(server)
            seen_503.append(status)
            assert content_type == "application/problem+json" and "Traceback" not in body, body
            assert "database is unavailable" in body
            await until(lambda: "disconnected" in banner(app), "the console's banner")
            assert app.is_running
            await asyncio.to_thread(scratch_pg.start)

            await until(lambda: api_status(server)[0] == 200, "the API to recover by itself")
            await until(lambda: "pending" in banner(app), "the console to recover by itself")
            await until(lambda: completed(url) == JOBS, "every job completed")
            await pilot.pause(0.5)
            assert app.is_running and "disconnected" not in banner(app)
        assert server.process.poll() is None and server.process.pid == server_pid, "the server must not have exited"
    alive = fleet.alive()
    exit_codes = fleet.stop_all()
    logs = fleet.logs(tail=None)  # whole: the restarts' errors are 100-200 KB before a log's end

    assert seen_503 == [503]
    assert sorted(alive) == sorted(pids), f"workers exited during the drain: {exit_codes}\n{fleet.logs()}"
    assert {w: p.pid for w, p in fleet.procs.items()} == pids and set(exit_codes.values()) == {0}, exit_codes
    repo = JobRepository(open_database(url))
    jobs = list(iter_all(repo))
    assert len(jobs) == JOBS and {job.status for job in jobs} == {"completed"}
    assert sum(repo.counts().values()) == JOBS
    runs = fleet.runs()
    assert set(runs) == {job.id for job in jobs}, "every job ran"
    reruns = {job_id: executions for job_id, executions in runs.items() if len(executions) > 1}
    # A second run is explained only by an acknowledgement that never got through on the first worker.
    ack_errors = re.findall(r"error worker=(\S+) during=(complete\S*|fail|release)", logs)
    unexplained = [
        (job_id, ex) for job_id, ex in reruns.items() if not {w for _, w in ex[:-1]} <= {w for w, _ in ack_errors}
    ]
    assert not unexplained, unexplained
    assert len(reruns) <= len(ack_errors)
    errors = re.findall(r"error worker=\S+ during=(\S+)", logs)
    assert errors, "the restarts should have shown up in the workers' logs"
    print(
        f"\npostgres restart: {JOBS} jobs, 2 restarts, {WORKERS} workers + server + console, 0 process restarts; "
        f"worker errors logged by call: {dict(Counter(errors))} ({len(ack_errors)} on an ack); "
        f"{len(reruns)} jobs ran twice"
    )
