"""A real ``python -m queue_core.server`` in a subprocess on a free loopback port, for end-to-end tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("QUEUE_DB_URL", "QUEUE_API_TOKEN", "QUEUE_API_READ_TOKEN")}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


class LiveServer:
    """Starts the server, waits until /healthz answers, and stops it (SIGTERM, then SIGKILL) on exit."""

    def __init__(self, db_url: str, *args: str, env: dict[str, str] | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "queue_core.server", "--db", db_url, "--port", str(self.port)]
        self.process = subprocess.Popen(
            [*command, "--log-level", "warning", *args],
            cwd=ROOT,
            env=child_env(**(env or {})),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def __enter__(self) -> LiveServer:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}: {self.process.stdout.read()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("server did not answer /healthz within 30 s")

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.stdout.read()


def run_module(module: str, *args: str, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess:
    """``python -m module args`` to completion, with this checkout importable and ``env`` added."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        env=child_env(**env),
        capture_output=True,
        text=True,
        timeout=120,
    )
