"""The server as an operator starts it: a real process on a loopback port, real sockets, real concurrency."""

from __future__ import annotations

import asyncio
import socket
import uuid

import httpx
import pytest
from live_server import LiveServer, free_port, run_module
from support import with_search_path

from queue_core.client import HttpQueue, RemoteQueueError
from queue_core.errors import ValidationError
from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository


@pytest.fixture
def server(db_url):
    with LiveServer(db_url) as live:
        yield live


async def post_concurrently(url: str, n: int, body: dict, headers: dict) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=n)  # one connection each: truly concurrent requests
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30) as client:
        start = asyncio.Event()

        async def one():
            await start.wait()
            return await client.post("/jobs", json=body, headers=headers)

        tasks = [asyncio.create_task(one()) for _ in range(n)]
        await asyncio.sleep(0.05)
        start.set()
        return await asyncio.gather(*tasks)


def test_twenty_concurrent_creates_with_one_key_make_one_job(server, db_url):
    body = {"type": "charge", "payload": {"order": 42}}
    responses = asyncio.run(post_concurrently(server.url, 20, body, {"Idempotency-Key": "order-42"}))
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] * 19 + [201], [r.text for r in responses if r.status_code not in (200, 201)]
    assert len({r.json()["id"] for r in responses}) == 1
    repo = JobRepository(open_database(db_url))
    assert [job.idempotency_key for job in repo.list()] == ["order-42"]


def test_the_guides_lifecycle_over_http_with_the_client(server):
    with HttpQueue(server.url) as queue:
        job, created = queue.create("send-invoice", {"invoice": 7}, priority="high", idempotency_key="inv-7")
        assert created and job.payload == {"invoice": 7} and job.priority_label == "high"
        again, created = queue.create("send-invoice", {"invoice": 7}, idempotency_key="inv-7")
        assert (again.id, created) == (job.id, False)
        claimed = queue.claim("w1")
        assert (claimed.id, claimed.status, claimed.attempt, claimed.worker_id) == (job.id, "running", 1, "w1")
        assert claimed.claimed_at.tzinfo is not None
        assert queue.claim("w2") is None
        assert queue.heartbeat([claimed.id], worker_id="w1") == [claimed.id]
        assert queue.complete(claimed.id, worker_id="w2") is None  # 409: not the holder
        assert queue.complete(claimed.id, worker_id="w1", attempt=1).status == "completed"
        assert queue.complete(claimed.id, worker_id="w1") is None  # 409: no longer running
        assert queue.complete(999) is None  # 404


def test_client_turns_problems_into_queue_errors(server):
    with HttpQueue(server.url) as queue:
        with pytest.raises(ValidationError) as info:
            queue.create("t", max_retries=-1)
        assert info.value.field == "max_retries"
        with pytest.raises(ValidationError) as info:
            queue.claim("")
        assert info.value.field == "worker_id"


def test_client_reports_an_unreachable_server_as_a_queue_error():
    with HttpQueue(f"http://127.0.0.1:{free_port()}", timeout=2) as queue, pytest.raises(RemoteQueueError) as info:
        queue.claim("w")
    assert "cannot reach the queue API" in str(info.value)


def test_token_from_the_environment_is_required(db_url):
    with LiveServer(db_url, env={"QUEUE_API_TOKEN": "env-token"}) as live:
        assert httpx.get(f"{live.url}/stats").status_code == 401
        assert httpx.get(f"{live.url}/stats", headers={"Authorization": "Bearer env-token"}).status_code == 200
        with HttpQueue(live.url, token="wrong") as queue, pytest.raises(RemoteQueueError) as info:
            queue.claim("w")
        assert info.value.status == 401
        with HttpQueue(live.url, token="env-token") as queue:
            assert queue.claim("w") is None


def run_server(*args: str, **env: str):
    return run_module("queue_core.server", *args, **env)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.1", "example.com"])
def test_a_non_loopback_bind_without_a_token_is_refused(db_url, host):
    result = run_server("--db", db_url, "--host", host, "--port", "1")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: refusing to listen on"), result.stderr
    assert "--token" in lines[0] and "--insecure" in lines[0]


def test_bad_arguments_and_database_urls_are_one_line_exit_2(tmp_path):
    for args in (["--port", "http"], ["--db", "mysql://nope/x"], ["--max-body-bytes", "0"]):
        result = run_server(*args)
        assert result.returncode == 2, result
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr, result.stderr


def test_a_server_that_cannot_listen_makes_no_database_file(tmp_path):
    # The database was opened (file and tables made) before the socket was bound: a server that could not
    # start left a new queue database behind.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        in_use = run_server("--db", f"sqlite:///{tmp_path / 'a.db'}", "--port", port)
    unknown = run_server("--db", f"sqlite:///{tmp_path / 'b.db'}", "--host", "no-such-host.invalid", "--insecure")
    for result in (in_use, unknown):
        assert result.returncode == 2 and "error: cannot listen on" in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    assert "Address already in use" in in_use.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_server_that_cannot_listen_makes_no_tables_in_a_postgresql_database(postgres_url):
    import psycopg

    schema = f"queue_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            url = with_search_path(postgres_url, schema)
            result = run_server("--db", url, "--host", "no-such-host.invalid", "--insecure")
            assert result.returncode == 2 and "error: cannot listen on" in result.stderr, result.stderr
            tables = admin.execute("SELECT count(*) FROM pg_tables WHERE schemaname = %s", (schema,)).fetchone()
            assert tables == (0,)
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")
