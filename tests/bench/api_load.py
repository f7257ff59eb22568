"""Requests/s of the HTTP API on loopback: POST /jobs, and a worker's claim + complete round trip.

    python tests/bench/api_load.py [--duration 10] [--connections 16] [--threads 2]

Starts ``python -m queue_core.server`` on a fresh SQLite file and a free 127.0.0.1 port, then drives
it with wrk (``apt-get install wrk``; Lua scripts beside this file) or, without wrk, with a bounded
httpx/asyncio loop. Round trips are counted as jobs completed in the database, so a claim that
found nothing does not count. Timings are for this report only; no test asserts them.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from live_server import LiveServer  # noqa: E402

JOB = {"type": "bench", "payload": {"to": "ann@example.com", "n": 1}, "priority": "high"}


def run_wrk(script: str, url: str, args) -> dict:
    command = ["wrk", f"-t{args.threads}", f"-c{args.connections}", f"-d{args.duration}s", "-s", str(HERE / script)]
    out = subprocess.run([*command, url], capture_output=True, text=True, check=True).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    latency = re.search(r"Latency\s+(\S+)", out).group(1)
    return {"requests_per_s": rate, "non_2xx": int(errors.group(1)) if errors else 0, "mean_latency": latency}


async def run_httpx(kind: str, url: str, args) -> dict:
    done = 0
    limits = httpx.Limits(max_connections=args.connections)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30) as client:
        deadline = time.monotonic() + args.duration

        async def loop(worker: str):
            nonlocal done
            while time.monotonic() < deadline:
                if kind == "post":
                    await client.post("/jobs", json=JOB)
                    done += 1
                    continue
                claimed = await client.post("/jobs/claim", json={"worker_id": worker})
                done += 1
                if claimed.status_code == 200:
                    await client.post(f"/jobs/{claimed.json()['id']}/complete", json={"worker_id": worker})
                    done += 1

        await asyncio.gather(*(loop(f"bench-{i}") for i in range(args.connections)))
    return {"requests_per_s": done / args.duration, "non_2xx": None, "mean_latency": None}


def completed(url: str) -> int:
    return httpx.get(f"{url}/stats").json()["counts"]["completed"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=10, help="seconds per phase")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2, help="wrk threads")
    parser.add_argument("--tool", choices=["wrk", "httpx"], default="wrk" if shutil.which("wrk") else "httpx")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, LiveServer(f"sqlite:///{folder}/bench.db") as server:
        print(f"tool={args.tool} duration={args.duration}s connections={args.connections} server={server.url}")
        for phase, script in (("POST /jobs", "post_job.lua"), ("claim+complete", "claim_complete.lua")):
            before, start = completed(server.url), time.monotonic()
            if args.tool == "wrk":
                result = run_wrk(script, server.url, args)
            else:
                result = asyncio.run(run_httpx("post" if script == "post_job.lua" else "round", server.url, args))
            elapsed = time.monotonic() - start
            line = f"{phase:15} {result['requests_per_s']:8.0f} requests/s"
            if phase == "claim+complete":
                line += f"  ({(completed(server.url) - before) / elapsed:.0f} round trips/s, jobs completed)"
            if result["non_2xx"] is not None:
                line += f"  non-2xx={result['non_2xx']} mean latency={result['mean_latency']}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
