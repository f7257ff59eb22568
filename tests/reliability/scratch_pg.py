"""A throwaway PostgreSQL server of the test's own (initdb into a temporary directory, a free port), so a
test may restart it without touching the shared server other tests use."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path


def binaries() -> Path | None:
    """The newest PostgreSQL's bin directory that has initdb, pg_ctl and postgres, or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    for initdb in reversed(found):
        bin_dir = Path(initdb).parent
        if (bin_dir / "pg_ctl").exists() and (bin_dir / "postgres").exists():
            return bin_dir
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ScratchPostgres:
    """``initdb`` into ``root``, then start, restart and stop with ``pg_ctl``; as the ``postgres`` user when
    we are root (the server refuses to run as root)."""

    def __init__(self, root: Path, bin_dir: Path):
        self.bin_dir = bin_dir
        self.data = root / "data"
        self.sockets = root / "sockets"
        self.log = root / "postgres.log"
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self.user = "postgres" if os.geteuid() == 0 else None
        self.sockets.mkdir(parents=True)
        if self.user:
            shutil.chown(root, self.user)
            shutil.chown(self.sockets, self.user)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8")

    def _run(self, tool: str, *args: str, timeout: float = 120) -> None:
        command = [str(self.bin_dir / tool), *args]
        if self.user:
            command = ["runuser", "-u", self.user, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed ({done.returncode}): {done.stdout}{done.stderr}")

    def _pg_ctl(self, action: str) -> None:
        options = f"-p {self.port} -k {self.sockets} -c listen_addresses=127.0.0.1 -c max_connections=100 -c fsync=off"
        # -m fast: connected clients are cut off, as in a real restart for an upgrade.
        self._run("pg_ctl", action, "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "-m", "fast",
                  "-o", options)  # fmt: skip

    def start(self) -> None:
        self._pg_ctl("start")

    def restart(self) -> None:
        self._pg_ctl("restart")

    def stop_fast(self) -> None:
        """The first half of a restart: connected clients are cut off and the server is down until ``start``."""
        self._run("pg_ctl", "stop", "-D", str(self.data), "-w", "-t", "60", "-m", "fast")

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "stop", "-D", str(self.data), "-w", "-t", "60", "-m", "immediate")

    def wait_ready(self, timeout: float = 60) -> None:
        import psycopg

        deadline = time.monotonic() + timeout
        while True:
            try:
                psycopg.connect(self.url, connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
