"""A worker (and ``schedules``) of ``--handlers`` modules whose Queue names a database serves that database
when neither ``--db`` nor ``$QUEUE_DB_URL`` chooses one: it used ``sqlite:///queue.db``, an empty file, and
did nothing."""

from __future__ import annotations

import subprocess

from live_server import run_module

from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository

MODULE = """
from queue_core import Queue

queue = Queue({url!r})


@queue.task({kind!r})
def shout(word: str) -> str:
    return word.upper()


@queue.periodic("0 3 * * *", name="nightly-" + {kind!r})
def nightly() -> None:
    pass
"""


def write_module(folder, name: str, url: str, kind: str = "shout") -> None:
    (folder / f"{name}.py").write_text(MODULE.format(url=url, kind=kind))


def run(folder, module: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    return run_module(module, *args, cwd=folder, **env)


def enqueue_shout(url: str) -> int:
    db = open_database(url)
    try:
        job, _ = JobRepository(db).create("shout", {"word": "hi"})
        return job.id
    finally:
        db.close()


def result_of(url: str, job_id: int):
    db = open_database(url)
    try:
        return JobRepository(db).find_by_id(job_id).result
    finally:
        db.close()


def test_a_worker_serves_the_database_its_handler_modules_queue_names(tmp_path):
    url = f"sqlite:///{tmp_path}/tasks.db"
    write_module(tmp_path, "tasks_a", url)
    job_id = enqueue_shout(url)
    done = run(tmp_path, "queue_core.worker", "--handlers", "tasks_a", "--burst", "--log-level", "info")
    assert done.returncode == 0, done.stderr
    assert f"using {url}, the database the handler modules' Queue names" in done.stderr
    assert result_of(url, job_id) == "HI"
    assert not (tmp_path / "queue.db").exists()


def test_db_and_queue_db_url_still_choose(tmp_path):
    named, chosen = f"sqlite:///{tmp_path}/named.db", f"sqlite:///{tmp_path}/chosen.db"
    write_module(tmp_path, "tasks_b", named)
    for args, env in (((("--db", chosen)), {}), ((), {"QUEUE_DB_URL": chosen})):
        job_id = enqueue_shout(chosen)
        done = run(tmp_path, "queue_core.worker", "--handlers", "tasks_b", "--burst", *args, **env)
        assert done.returncode == 0, done.stderr
        assert result_of(chosen, job_id) == "HI"
    assert not (tmp_path / "named.db").exists()


def test_queues_naming_different_databases_are_one_error_line(tmp_path):
    write_module(tmp_path, "tasks_c", f"sqlite:///{tmp_path}/one.db")
    write_module(tmp_path, "tasks_d", f"sqlite:///{tmp_path}/two.db", kind="whisper")
    done = run(tmp_path, "queue_core.worker", "--handlers", "tasks_c", "--handlers", "tasks_d", "--burst")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "name different databases" in lines[0] and "--db" in lines[0], done.stderr
    assert not (tmp_path / "queue.db").exists()


def test_schedules_reads_the_database_the_handler_modules_queue_names(tmp_path):
    url = f"sqlite:///{tmp_path}/tasks.db"
    write_module(tmp_path, "tasks_e", url)
    assert run(tmp_path, "queue_core.worker", "--handlers", "tasks_e", "--burst").returncode == 0  # ticks once
    done = run(tmp_path, "queue_core", "schedules", "--handlers", "tasks_e", "--json")
    assert done.returncode == 0, done.stderr
    assert '"last_job_id": 1' in done.stdout
    assert not (tmp_path / "queue.db").exists()


SPAWNING = """
from queue_core import Queue

queue = Queue({url})


@queue.task("parent")
def parent() -> int:
    return child.enqueue(word="hi").id


@queue.task("child")
def child(word: str) -> str:
    return word.upper()
"""


def test_what_a_handler_enqueues_goes_to_the_database_the_worker_serves(tmp_path):
    # A handler's task.enqueue goes through its module's Queue, which opened $QUEUE_DB_URL or queue.db (Queue())
    # or its own URL: under --db or $QUEUE_DB_URL naming another database, the child jobs went there, where no
    # worker of these tasks ran them.
    chosen = f"sqlite:///{tmp_path}/chosen.db"
    (tmp_path / "tasks_f.py").write_text(SPAWNING.format(url=""))
    (tmp_path / "tasks_g.py").write_text(SPAWNING.format(url=repr(f"sqlite:///{tmp_path}/named.db")))
    for module, args, env in (("tasks_f", ("--db", chosen), {}), ("tasks_g", (), {"QUEUE_DB_URL": chosen})):
        db = open_database(chosen)
        try:
            job, _ = JobRepository(db).create("parent", {})
        finally:
            db.close()
        done = run(tmp_path, "queue_core.worker", "--handlers", module, "--burst", *args, **env)
        assert done.returncode == 0, done.stderr
        child_id = result_of(chosen, job.id)
        assert result_of(chosen, child_id) == "HI", module
    assert not (tmp_path / "queue.db").exists() and not (tmp_path / "named.db").exists()
