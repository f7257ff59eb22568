"""What a worker, the admin CLI and the console load at start-up: nothing that only schedules or ``async def``
handlers need (croniter with dateutil.tz, asyncio: ~55 ms of every worker process's start-up), until used.

Each case runs in a fresh interpreter, as a worker process does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from support import ROOT, run_fresh

from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository


def run_worker(url: str, *handler_modules: str, path: str | None = None) -> dict:
    """``python -m queue_core.worker --burst`` in a fresh interpreter (``path`` first on its sys.path): its
    exit code and what it had loaded."""
    args = ["--db", url, "--burst", "--log-level", "warning"]
    for module in handler_modules:
        args += ["--handlers", module]
    return run_fresh(
        f"""
        import json, runpy, sys
        sys.argv = ["queue_core.worker", *{args!r}]
        try:
            runpy.run_module("queue_core.worker", run_name="__main__")
            code = 0
        except SystemExit as exit:
            code = exit.code
        print(json.dumps({{"code": code, "croniter": "croniter" in sys.modules, "asyncio": "asyncio" in sys.modules}}))
        """,
        path=path,
    )


def test_a_worker_with_plain_handlers_and_no_schedules_loads_neither_croniter_nor_asyncio(tmp_path):
    url = f"sqlite:///{tmp_path / 'q.db'}"
    repo = JobRepository(open_database(url))
    job, _ = repo.create("echo", {"message": "hi"})
    seen = run_worker(url)
    assert seen == {"code": 0, "croniter": False, "asyncio": False}
    assert repo.find_by_id(job.id).status == "completed"


def test_an_async_handler_and_a_schedule_load_what_they_need_when_declared(tmp_path):
    # The other side of the laziness: an async def handler still runs (asyncio loaded for it), and a module
    # declaring a schedule gets its cron read (croniter loaded) at import.
    (tmp_path / "lazy_handlers.py").write_text(
        textwrap.dedent("""
            from queue_core.handlers import handler
            from queue_core.worker.scheduler import Schedule

            NIGHTLY = Schedule(name="nightly", cron="0 3 * * *", type="nap")

            @handler("nap")
            async def nap(payload):
                return {"napped": payload["n"]}
        """)
    )
    url = f"sqlite:///{tmp_path / 'q.db'}"
    repo = JobRepository(open_database(url))
    job, _ = repo.create("nap", {"n": 2})
    seen = run_worker(url, "lazy_handlers", path=str(tmp_path))
    assert seen == {"code": 0, "croniter": True, "asyncio": True}
    done = repo.find_by_id(job.id)
    assert (done.status, done.result) == ("completed", {"napped": 2})


def test_the_admin_cli_and_the_console_do_not_load_croniter_at_import():
    seen = run_fresh("""
        import json, sys
        import queue_core, queue_core.cli.admin, queue_core.worker.cli, console.app
        print(json.dumps({"croniter": "croniter" in sys.modules}))
    """)
    assert seen == {"croniter": False}


def test_the_worker_program_freezes_its_start_up_and_main_called_from_a_program_does_not(tmp_path):
    # python -m queue_core.worker (and queue-worker) moves what start-up made out of the cyclic GC's way
    # (gc.freeze: no full collection, nor the interpreter's exit, walks it again); main() called by someone
    # else's program must not, or that program's garbage at the time would never be collected.
    (tmp_path / "freeze_handlers.py").write_text(
        textwrap.dedent("""
            import gc
            from queue_core.handlers import handler

            @handler("frozen")
            def frozen(payload):
                return {"frozen": gc.get_freeze_count()}
        """)
    )
    url = f"sqlite:///{tmp_path / 'q.db'}"
    repo = JobRepository(open_database(url))
    args = ["--db", url, "--burst", "--log-level", "warning", "--handlers", "freeze_handlers"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}

    def run(*command: str) -> None:
        out = subprocess.run([sys.executable, *command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr

    program, _ = repo.create("frozen", {})
    run("-m", "queue_core.worker", *args)
    called, _ = repo.create("frozen", {})
    run("-c", f"import sys; from queue_core.worker.cli import main; sys.exit(main({args!r}))")
    assert repo.find_by_id(program.id).result["frozen"] > 0
    assert repo.find_by_id(called.id).result == {"frozen": 0}
