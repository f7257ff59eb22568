"""Worker processes for the reliability tests: started with known ids, handlers from ``chaos_handlers``
(every execution written to a ledger first), each with a log of its own; some may be SIGKILLed."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class Fleet:
    """Worker processes with known ids, some of which a chaos loop kills."""

    def __init__(self, db_url: str, ledger: Path, log_dir: Path, *, stale_after: float, extra: tuple[str, ...] = ()):
        self.db_url, self.log_dir, self.stale_after, self.extra = db_url, log_dir, stale_after, extra
        self.ledger = ledger
        self.env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests" / "reliability")]),
            "CHAOS_LEDGER": str(ledger),
        }
        self.procs: dict[str, subprocess.Popen] = {}
        self.killed: set[str] = set()
        self.started = 0

    def start(self, prefix: str = "chaos") -> str:
        worker_id = f"{prefix}-{self.started}"
        self.started += 1
        log = open(self.log_dir / f"{worker_id}.log", "w")  # noqa: SIM115 - lives as long as the process
        self.procs[worker_id] = subprocess.Popen(
            [
                sys.executable, "-m", "queue_core.worker", "--db", self.db_url, "--handlers", "chaos_handlers",
                "--worker-id", worker_id, "--concurrency", "2", "--poll-interval", "0.05",
                "--stale-after", str(self.stale_after), "--shutdown-timeout", "10", *self.extra,
            ],
            env=self.env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        return worker_id

    def wait_started(self, worker_id: str, timeout: float = 60.0) -> None:
        log = self.log_dir / f"{worker_id}.log"
        deadline = time.monotonic() + timeout
        while f"started worker={worker_id}" not in log.read_text() and self.procs[worker_id].poll() is None:
            assert time.monotonic() < deadline, f"{worker_id} never said it started: {log.read_text()[-2000:]}"
            time.sleep(0.05)

    def alive(self) -> list[str]:
        return [w for w, p in self.procs.items() if p.poll() is None]

    def kill_one(self, rng: random.Random) -> None:
        worker_id = rng.choice(self.alive())
        self.procs[worker_id].send_signal(signal.SIGKILL)
        self.procs[worker_id].wait()
        self.killed.add(worker_id)

    def stop_all(self) -> dict[str, int]:
        for worker_id in self.alive():
            self.wait_started(worker_id)  # a SIGTERM before its handler is installed would kill it outright
            self.procs[worker_id].send_signal(signal.SIGTERM)
        return {w: p.wait(timeout=60) for w, p in self.procs.items() if w not in self.killed}

    def logs(self, tail: int | None = 2000) -> str:
        """The end of every worker's log (``tail`` characters of each), or the whole of each with ``tail=None``:
        a log to search for what happened must be read whole, a drain's log runs to hundreds of kilobytes."""
        texts = (p.read_text() for p in sorted(self.log_dir.glob("*.log")))
        return "\n".join(text if tail is None else text[-tail:] for text in texts)

    def runs(self, *, started: bool = False) -> dict[int, list[tuple]]:
        """Every execution the handlers recorded: job id -> [(attempt, worker id)] in order, with ``started``
        [(attempt, worker id, time.time() at the start)]."""
        runs = defaultdict(list)
        if not self.ledger.exists():
            return runs
        columns = "job_id, attempt, worker_id" + (", started" if started else "")
        with sqlite3.connect(self.ledger) as con:
            for job_id, *execution in con.execute(f"SELECT {columns} FROM executions ORDER BY rowid"):
                runs[job_id].append(tuple(execution))
        return runs


def iter_all(repo):
    after = 0
    while page := repo.list(limit=1000, after=after):
        yield from page
        after = page[-1].id
