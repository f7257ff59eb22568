"""A job whose create() returned survives the process being SIGKILLed right after."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository

ROOT = Path(__file__).resolve().parents[2]

CREATE_THEN_DIE = """
import os, signal, sys
from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository
repo = JobRepository(open_database(sys.argv[1]))
for i in range(int(sys.argv[2])):
    job, _ = repo.create("durable", {"i": i})
    print(job.id, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("suffix", ["", "?synchronous=full"])
def test_created_job_survives_sigkill(db_url, suffix):
    url = db_url + suffix if db_url.startswith("sqlite") else db_url
    out = subprocess.run(
        [sys.executable, "-c", CREATE_THEN_DIE, url, "50"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
    )
    assert out.returncode == -9, out.stderr
    returned = [int(line) for line in out.stdout.split()]
    assert len(returned) == 50
    repo = JobRepository(open_database(url))
    stored = {job.id: job.payload["i"] for job in repo.list(limit=1000)}
    assert [stored[job_id] for job_id in returned] == list(range(50))
    if url.startswith("sqlite"):
        assert repo.db.execute_sql("PRAGMA integrity_check").fetchone()[0] == "ok"
