"""A Queue used before ``os.fork`` and after it, in the parent and in every child: a web application served by
forked processes (``gunicorn --preload``: the app's module opened the queue's database at import, to create its
own tables on it, as README's outbox example does) or one that forks its own helpers.

A child that went on using the connection it inherited shared one socket with its parent and its siblings: on
PostgreSQL their statements and answers crossed ("server closed the connection unexpectedly" in the children,
jobs lost), and SQLite says never to use a connection across a fork. Each process now opens its own.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from live_server import child_env

from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository

pytestmark = pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="os.fork is POSIX-only")

CHILDREN = 3
EACH = 40

SCRIPT = textwrap.dedent(
    """
    import os
    import sys

    from queue_core import Queue

    queue = Queue(sys.argv[1])


    @queue.task("ping")
    def ping(n: int) -> None:
        pass


    ping.enqueue(n=0)  # the parent's connection, open when it forks
    inherited = queue.repository.db.connection()
    children = []
    for child in range({children}):
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                for n in range({each}):
                    ping.enqueue(n=(child + 1) * 1000 + n)
                if queue.repository.db.connection() is inherited:
                    print("child", child, "writes on its parent's connection", flush=True)
                    code = 3
            except Exception as exc:
                print("child", child, type(exc).__name__, exc, flush=True)
                code = 1
            os._exit(code)
        children.append(pid)
    for n in range({each}):
        ping.enqueue(n=-n - 1)
    codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]
    print("codes", codes, flush=True)
    sys.exit(0 if codes == [0] * len(children) else 1)
    """
).format(children=CHILDREN, each=EACH)


@pytest.mark.backends("sqlite", "postgresql")
def test_a_queue_opened_before_a_fork_works_in_the_parent_and_every_child(db_url, tmp_path):
    script = tmp_path / "forking_app.py"
    script.write_text(SCRIPT, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), db_url],
        cwd=tmp_path,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    db = open_database(db_url)
    try:
        payloads = sorted(job.payload["n"] for job in JobRepository(db).list(type="ping", limit=1000))
    finally:
        db.close()
    expected = [0, *(-n - 1 for n in range(EACH))]
    expected += [(child + 1) * 1000 + n for child in range(CHILDREN) for n in range(EACH)]
    assert payloads == sorted(expected)  # every process's jobs, each once
