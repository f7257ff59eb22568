"""``queue-console --serve`` (issue 16, item 7): the console in a browser through textual-serve, loopback by
default; on any other address read-only unless ``--insecure`` (issue 18)."""

from __future__ import annotations

import base64
import contextlib
import os
import socket
import subprocess
import sys
import time

import httpx
import pytest

from console.options import parse_args
from console.serve import app_argv, origin_refusal


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def served_console(db_url: str, *flags: str):
    """``queue-console --serve`` on a free loopback port, once it answers: yields the port."""
    port = free_port()
    command = [sys.executable, "-m", "console", "--db", db_url, "--serve", "--port", str(port), *flags]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=os.environ.copy())
    try:
        page = None
        for _ in range(200):  # up to 20 s for the server to listen
            try:
                page = httpx.get(f"http://127.0.0.1:{port}/", timeout=2)
                break
            except httpx.TransportError:
                if server.poll() is not None:
                    break
                time.sleep(0.1)
        assert page is not None, server.stderr.read().decode() if server.poll() is not None else "never listened"
        assert page.status_code == 200
        assert "queue-console" in page.text and "textual" in page.text.lower()
        yield port
    finally:
        server.terminate()
        server.wait(10)


@pytest.mark.backends("sqlite")
def test_serve_answers_with_the_console_page(db_url):
    with served_console(db_url, "--read-only"):
        pass


def websocket_handshake(port: int, origin: str | None) -> bytes:
    """The status line the console's websocket answers a handshake from a page of ``origin``."""
    lines = [
        "GET /ws HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}",
        "Sec-WebSocket-Version: 13",
        *([f"Origin: {origin}"] if origin else []),
    ]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        return sock.recv(4096).split(b"\r\n", 1)[0]


@pytest.mark.backends("sqlite")
def test_a_page_of_another_origin_cannot_drive_the_console(db_url):
    """Any web page the operator visits may open a websocket to 127.0.0.1:8000: the console refuses it,
    or the page could type keys into a console that deletes jobs (cross-site websocket hijacking)."""
    with served_console(db_url) as port:
        for origin in ("https://evil.example", f"http://evil.example:{port}", "null"):
            assert b" 403 " in websocket_handshake(port, origin), origin
        assert b" 101 " in websocket_handshake(port, f"http://localhost:{port}")
        assert b" 101 " in websocket_handshake(port, f"http://127.0.0.1:{port}")


@pytest.mark.parametrize(
    ("origin", "host", "loopback", "allowed"),
    [
        (None, "127.0.0.1:8000", True, True),  # not a browser
        ("http://127.0.0.1:8000", "127.0.0.1:8000", True, True),
        ("http://localhost:9000", "127.0.0.1:8000", True, True),  # a tunnel's other port, localhost typed
        ("http://[::1]:8000", "[::1]:8000", True, True),
        ("https://evil.example", "127.0.0.1:8000", True, False),
        ("http://evil.example:8000", "evil.example:8000", True, False),  # DNS rebinding
        ("null", "127.0.0.1:8000", True, False),  # a sandboxed frame, a file
        ("http://[::1", "127.0.0.1:8000", True, False),
        ("https://queue.example.com", "queue.example.com", False, True),
        ("https://evil.example", "queue.example.com", False, False),
    ],
)
def test_origin_refusal(origin, host, loopback, allowed):
    assert (origin_refusal(origin, host, loopback=loopback) is None) is allowed


def test_the_served_app_gets_the_options_without_the_servers_own():
    argv = ["--db", "sqlite:///q.db", "--serve", "--host=127.0.0.1", "--port", "9000", "--insecure", "--read-only"]
    assert app_argv(argv) == ["--read-only"]  # --db goes as $QUEUE_DB_URL (below)
    assert app_argv(["--ser", "--po", "9000", "--refresh", "2", "--db=sqlite:///q.db"]) == ["--refresh", "2"]


def test_serve_is_loopback_by_default_and_read_only_on_another_address_unless_insecure(capsys):
    args = parse_args(["--serve"], environ={})
    assert (args.host, args.port, args.read_only) == ("127.0.0.1", 8000, False)
    assert not parse_args(["--serve", "--host", "::1"], environ={}).read_only
    # Issue 18: a non-loopback address serves read-only unless --insecure.
    assert parse_args(["--serve", "--host", "0.0.0.0"], environ={}).read_only
    assert parse_args(["--serve", "--host", "example.com"], environ={}).read_only
    assert parse_args(["--serve", "--host", "0.0.0.0", "--read-only"], environ={}).read_only
    insecure = parse_args(["--serve", "--host", "0.0.0.0", "--insecure"], environ={})
    assert insecure.insecure and not insecure.read_only
    assert parse_args(["--serve", "--host", "0.0.0.0"], environ={"QUEUE_CONSOLE_READ_ONLY": "1"}).read_only
    for argv in (["--serve", "--host", "0.0.0.0", "--demo"], ["--port", "9000"]):
        with pytest.raises(SystemExit) as info:
            parse_args(argv, environ={})
        assert info.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(line.startswith("error: ") for line in err)
    assert "not loopback" in err[0] and "read-only" in err[0] and "--insecure" in err[0]


def served_commands(monkeypatch) -> list[tuple[str, str, int]]:
    """textual-serve's Server replaced: what it was asked to serve (command, host, port), and nothing served."""
    import textual_serve.server

    started = []

    class FakeServer:
        def __init__(self, command, host, port, title):
            started.append((command, host, port))

        def serve(self):
            pass

    monkeypatch.setattr(textual_serve.server, "Server", FakeServer)
    monkeypatch.delenv("QUEUE_DB_URL", raising=False)  # restored after the test: serve() sets it
    return started


def test_a_non_loopback_address_serves_the_console_read_only(monkeypatch, capsys):
    from console import app as console_app

    started = served_commands(monkeypatch)
    with pytest.raises(SystemExit) as info:
        console_app.main(["--db", "sqlite:///q.db", "--serve", "--host", "0.0.0.0", "--port", "9001"])
    assert info.value.code == 0
    ((command, host, port),) = started
    assert (host, port) == ("0.0.0.0", 9001)
    assert command.endswith("-m console --read-only") and os.environ["QUEUE_DB_URL"] == "sqlite:///q.db"
    assert "read-only" in capsys.readouterr().err


@pytest.mark.parametrize("joined", [False, True], ids=["--db URL", "--db=URL"])
def test_the_served_command_never_holds_the_database_password(monkeypatch, capsys, joined):
    """textual-serve prints the command it serves at start, and each tab's process shows it in ps: the
    --db URL (and its password) goes to those processes in $QUEUE_DB_URL, which neither shows."""
    from console import app as console_app

    started = served_commands(monkeypatch)
    url = "postgresql://queue:s3cret@db.internal/queue?password=s3cret"
    argv = [f"--db={url}"] if joined else ["--db", url]
    with pytest.raises(SystemExit):
        console_app.main([*argv, "--serve", "--read-only"])
    ((command, _, _),) = started
    assert "s3cret" not in command and command.endswith("-m console --read-only")
    assert os.environ["QUEUE_DB_URL"] == url  # the tab's console opens the same database
    assert "s3cret" not in capsys.readouterr().err
