"""A SQLite file moved, deleted or replaced under a running server: every request that would touch the
database is a 503 saying so, nothing is written into the file the server still holds open, and no new
empty file appears at the path. Before, writes went on into the unlinked or renamed file (201, lost to
anyone opening the path) and ``/healthz`` answered 200."""

from __future__ import annotations

import os
import shutil
import sqlite3

import httpx
import pytest
from fastapi.testclient import TestClient
from live_server import LiveServer

from queue_core.server.app import create_app

pytestmark = pytest.mark.backends("sqlite")

PROBLEM = "application/problem+json"
SIDE_FILES = ("", "-wal", "-shm")


@pytest.fixture
def path(db_url) -> str:
    return db_url.removeprefix("sqlite:///")


@pytest.fixture
def http(repo):
    with TestClient(create_app(repo), raise_server_exceptions=False) as client:
        yield client


def move(source: str, target: str) -> None:
    for suffix in SIDE_FILES:
        if os.path.exists(source + suffix):
            os.rename(source + suffix, target + suffix)


def jobs_in(path: str) -> int:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT count(*) FROM jobs").fetchone()[0]


def assert_file_gone(response, path: str) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["content-type"] == PROBLEM
    assert "Retry-After" in response.headers
    problem = response.json()
    assert problem["status"] == 503 and problem["title"] == "Database file moved or deleted"
    assert path in problem["detail"] and "restart the server" in problem["detail"], problem
    assert "put the file back" in problem["detail"]


def test_a_renamed_file_is_a_503_and_the_renamed_file_gets_nothing(http, path):
    assert http.post("/jobs", json={"type": "t"}).status_code == 201
    old = path + ".old"
    move(path, old)
    assert_file_gone(http.post("/jobs", json={"type": "t"}), path)
    for route in ("/jobs", "/stats", "/queues", "/workers"):
        assert_file_gone(http.get(route), path)
    assert_file_gone(http.post("/jobs/claim", json={"worker_id": "w"}), path)
    assert not os.path.exists(path), "a new, empty database appeared at the path"
    assert jobs_in(old) == 1
    move(old, path)  # put back: served again
    assert http.post("/jobs", json={"type": "t"}).status_code == 201
    assert jobs_in(path) == 2


def test_a_deleted_file_makes_healthz_503_get_and_head(http, path):
    assert http.get("/healthz").status_code == 200
    for suffix in SIDE_FILES:
        os.unlink(path + suffix)
    assert_file_gone(http.get("/healthz"), path)
    head = http.head("/healthz")
    assert head.status_code == 503 and head.content == b""
    assert_file_gone(http.post("/jobs", json={"type": "t"}), path)
    assert not os.path.exists(path)


def test_a_file_replaced_by_another_at_the_path_is_a_503(http, path, tmp_path):
    assert http.post("/jobs", json={"type": "t"}).status_code == 201
    copy = tmp_path / "copy.db"
    shutil.copy(path, copy)  # a restore from a backup, say: another file (inode) at the same path
    os.replace(copy, path)
    response = http.post("/jobs", json={"type": "t"})
    assert_file_gone(response, path)
    assert "replaced" in response.json()["detail"]


def test_a_running_server_whose_directory_is_removed_answers_503(tmp_path):
    directory = tmp_path / "gone"
    directory.mkdir()
    path = str(directory / "q.db")
    with LiveServer(f"sqlite:///{path}") as live:
        assert httpx.post(f"{live.url}/jobs", json={"type": "t"}).status_code == 201
        shutil.rmtree(directory)
        assert_file_gone(httpx.post(f"{live.url}/jobs", json={"type": "t"}), path)
        assert_file_gone(httpx.get(f"{live.url}/healthz"), path)
        assert not directory.exists()
