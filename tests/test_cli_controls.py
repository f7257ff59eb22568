"""The admin CLI's operator controls (issue 13), run as a user runs them, on both backends."""

from __future__ import annotations

import json
from datetime import timedelta

from test_cli import cli  # noqa: F401 (the fixture: a real `python -m queue_core` process)

from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository


def test_enqueue_into_a_queue_pause_resume_and_list_queues(cli):  # noqa: F811
    job = json.loads(cli("enqueue", "mail-out", "--queue", "mail").stdout)
    assert job["queue"] == "mail" and job["cancel_requested"] is False
    cli("enqueue", "t")
    paused = json.loads(cli("pause", "mail").stdout)
    assert paused["name"] == "mail" and paused["paused"] is True and paused["counts"]["pending"] == 1
    table = cli("queues").stdout.splitlines()
    assert table[0].split() == ["QUEUE", "PAUSED", "PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "LATENCY"]
    assert [line.split()[:3] for line in table[1:]] == [["default", "no", "1"], ["mail", "yes", "1"]]
    assert json.loads(cli("resume", "mail").stdout)["paused"] is False
    rows = [json.loads(line) for line in cli("queues", "--json").stdout.splitlines()]
    assert [(row["name"], row["paused"]) for row in rows] == [("default", False), ("mail", False)]
    assert cli("list").stdout.splitlines()[0].split()[:5] == ["ID", "TYPE", "PRIORITY", "STATUS", "QUEUE"]


def test_pausing_an_unknown_queue_is_fine_and_a_bad_name_is_one_error_line(cli):  # noqa: F811
    assert json.loads(cli("pause", "not-yet").stdout)["paused"] is True
    for bad in ("", "x" * 256, "bell\a"):
        out = cli("pause", bad, expect=2)
        assert out.stdout == "" and len(out.stderr.splitlines()) == 1 and out.stderr.startswith("error: name")
    out = cli("enqueue", "t", "--queue", "", expect=2)
    assert out.stderr.startswith("error: queue")
    assert [json.loads(line)["name"] for line in cli("queues", "--json").stdout.splitlines()] == ["not-yet"]


def test_cancel_pending_running_final_and_unknown(cli, db_url):  # noqa: F811
    pending = json.loads(cli("enqueue", "t").stdout)
    cancelled = json.loads(cli("cancel", str(pending["id"])).stdout)
    assert cancelled["status"] == "cancelled"
    out = cli("cancel", str(pending["id"]), expect=2)
    assert out.stderr == f"error: cannot cancel job {pending['id']}: it is already cancelled\n"
    out = cli("cancel", "424242", expect=2)
    assert out.stderr == "error: no job with id 424242\n" and out.stdout == ""

    running = json.loads(cli("enqueue", "t").stdout)
    db = open_database(db_url)
    JobRepository(db).claim("w1")
    out = cli("cancel", str(running["id"]))
    job = json.loads(out.stdout)
    assert job["status"] == "running" and job["cancel_requested"] is True and "w1" in out.stderr
    assert "running (cancel requested)" in cli("list").stdout
    assert json.loads(cli("retry", str(pending["id"])).stdout)["status"] == "pending"
    db.close()


def test_workers_table_has_each_workers_state_on_its_line(cli, db_url):  # noqa: F811
    assert cli("workers").stdout.split() == [
        "WORKER",
        "STATE",
        "HOST",
        "PID",
        "QUEUES",
        "SLOTS",
        "RUNNING",
        "DONE",
        "FAILED",
        "SILENT",
    ]
    db = open_database(db_url)
    repo = JobRepository(db)
    repo.register_worker("alive", host="h1", pid=10, queues=["mail", "default"], concurrency=2, stale_after=600)
    repo.register_worker("gone", host="h2", pid=11, queues=None, concurrency=4, stale_after=600)
    repo.worker_stopped("gone")
    repo.register_worker("dead", host="h3", pid=12, queues=None, concurrency=1, stale_after=1)
    Worker = repo.WorkerRecord
    Worker.update(last_seen_at=repo.now() - timedelta(seconds=30)).where(Worker.id == "dead").execute()
    db.close()
    lines = cli("workers").stdout.splitlines()
    assert {line.split()[0]: line.split()[1:6] for line in lines[1:]} == {
        "alive": ["running", "h1", "10", "mail,default", "2"],
        "dead": ["lost", "h3", "12", "*", "1"],
        "gone": ["stopped", "h2", "11", "*", "4"],
    }
    rows = [json.loads(line) for line in cli("workers", "--json").stdout.splitlines()]
    assert [(row["id"], row["state"]) for row in rows] == [("alive", "running"), ("dead", "lost"), ("gone", "stopped")]
