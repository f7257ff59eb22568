"""The worker program's log lines: a job event's line written straight to the stream is the line the logging
module writes, and anything else listening on the way gets every event through the logging module."""

from __future__ import annotations

import io
import json
import logging
import os
import random
import subprocess
import sys
import time
from datetime import UTC, datetime

import pytest

from queue_core.worker import logs
from queue_core.worker.events import WorkerEvent

NOW = 1764936036.123456  # 2025-12-05T12:00:36.123Z


@pytest.fixture
def worker_logging(monkeypatch):
    """``configure_logging`` into a buffer at a fixed time; the process's logging as it was afterwards."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level, logging.getLogger("httpx").level, logs._lines)
    monkeypatch.setattr(time, "time", lambda: NOW)

    def configure(fmt: str, level: str = "info") -> io.StringIO:
        buffer = io.StringIO()
        # Here, not at setup: pytest puts its own capture in sys.stderr when the test starts.
        monkeypatch.setattr(sys, "stderr", buffer)
        logs.configure_logging(level, fmt)
        return buffer

    yield configure
    root.handlers[:], level, httpx_level, logs._lines = saved
    root.setLevel(level)
    logging.getLogger("httpx").setLevel(httpx_level)


def event(kind: str, **fields) -> WorkerEvent:
    values = {"worker_id": "w1", "job_id": 7, "job_type": "echo", "attempt": 2, "duration": 0.25, "error": None}
    message = fields.pop("message", f"{kind} job=7 type=echo attempt=2 worker=w1 duration=0.250s")
    values.update(fields)
    return WorkerEvent(kind=kind, message=message, **values)


def through_logging_module(buffer: io.StringIO, ev: WorkerEvent) -> str:
    """The line the logging module writes for ``ev``: a filter that lets everything through keeps the direct
    path out of the way."""
    keep_all = logging.Filter()
    logs.logger.addFilter(keep_all)
    try:
        before = buffer.tell()
        logs.log_event(ev)
        return buffer.getvalue()[before:]
    finally:
        logs.logger.removeFilter(keep_all)


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize(
    "ev",
    [event("claimed", duration=None), event("completed"), event("failed", error='boom "quoted" ü')],
    ids=["claimed", "completed", "failed"],
)
def test_a_job_event_line_is_the_line_the_logging_module_writes(worker_logging, fmt, ev):
    buffer = worker_logging(fmt)
    assert logs._lines.write(logs.EVENT_LEVELS.get(ev.kind, logging.INFO), ev)  # the direct path took it
    logs._lines.write_waiting()  # an INFO line waits to be written with others (LINE_DELAY)
    direct = buffer.getvalue()
    assert direct == through_logging_module(buffer, ev)
    assert direct.count("\n") == 1 and direct.endswith("\n")
    if fmt == "text":
        level = "WARNING" if ev.kind == "failed" else "INFO"
        assert direct == f"2025-12-05T12:00:36.123Z {level} {ev.message}\n"
    else:
        data = json.loads(direct)
        assert (data["time"], data["logger"], data["event"], data["job_id"]) == (
            "2025-12-05T12:00:36.123Z",
            "queue_core.worker",
            ev.kind,
            7,
        )
        assert data["error"] == ev.error and data["message"] == ev.message


@pytest.mark.parametrize(
    "listener",
    [
        "handler on queue_core",
        "second root handler",
        "filter on the worker's logger",
        "logger not propagating",
        "another formatter",
    ],
)
def test_anything_else_on_the_way_gets_the_event_through_the_logging_module(worker_logging, listener):
    buffer = worker_logging("text")
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record)

    keep = Keep()
    parent, root = logging.getLogger("queue_core"), logging.getLogger()
    if listener == "handler on queue_core":
        parent.addHandler(keep)
    elif listener == "second root handler":
        root.addHandler(keep)
    elif listener == "filter on the worker's logger":
        logs.logger.addFilter(lambda record: seen.append(record) or True)
    elif listener == "logger not propagating":
        logs.logger.propagate = False
        logs.logger.addHandler(keep)
    else:
        root.handlers[0].setFormatter(logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
    try:
        ev = event("completed")
        assert logs._lines.write(logging.INFO, ev) is False
        logs.log_event(ev)
    finally:
        parent.removeHandler(keep)
        root.removeHandler(keep)
        logs.logger.filters.clear()
        logs.logger.propagate = True
        logs.logger.removeHandler(keep)
    if listener != "another formatter":
        assert [record.worker_event for record in seen] == [ev]
    expected = {
        "logger not propagating": "",
        "another formatter": f"INFO:queue_core.worker:{ev.message}\n",
    }.get(listener, f"2025-12-05T12:00:36.123Z INFO {ev.message}\n")
    assert buffer.getvalue() == expected


def test_a_level_that_drops_the_event_writes_nothing(worker_logging):
    buffer = worker_logging("text", level="warning")
    logs.log_event(event("completed"))
    assert buffer.getvalue() == ""
    logs.log_event(event("failed", error="x"))
    assert buffer.getvalue().startswith("2025-12-05T12:00:36.123Z WARNING failed job=7")


def test_the_stamp_is_datetime_s_to_the_millisecond():
    rng = random.Random(3)
    stamps = [0.0, NOW, 1727647850.6, 1764936036.9999996, 1764936036.9994999, 1764936036.0004999]
    stamps += [rng.uniform(1.7e9, 1.8e9) for _ in range(20_000)]
    stamps += [rng.randrange(1_700_000_000, 1_800_000_000) + rng.randrange(1000) / 1000 for _ in range(20_000)]
    for created in stamps:
        expected = datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        assert logs._timestamp(created) == expected, created


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_huge_error_is_cut_in_its_log_line(worker_logging, fmt):
    """A handler's 200,000-character message made a 200,000-character line; the line keeps its first 2,000."""
    from queue_core.worker.events import LOG_ERROR_CHARS, describe

    huge = "x" * 200_000
    message = describe("failed", "w1", None, 0.25, huge, "")
    buffer = worker_logging(fmt)
    logs.log_event(event("failed", error=huge, message=message))
    line = buffer.getvalue()
    copies = 2 if fmt == "json" else 1  # a JSON line has the error field beside the message
    assert copies * LOG_ERROR_CHARS < len(line) < copies * (LOG_ERROR_CHARS + 300)
    assert line.count("198,000 more characters") == copies


class CountingStream(io.StringIO):
    """A stream that counts its writes (each one a system call on a real pipe)."""

    writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


@pytest.fixture
def counting(worker_logging, monkeypatch):
    """Call it in the test (pytest adds its own capture to the root logger as the test starts): configures the
    worker's logging into a stream that counts its writes."""

    def configure() -> CountingStream:
        stream = CountingStream()
        worker_logging("text")
        monkeypatch.setattr(logging.getLogger().handlers[0], "stream", stream)
        return stream

    return configure


def test_a_jobs_info_lines_wait_and_go_in_one_write(counting, monkeypatch):
    counted = counting()
    monkeypatch.setattr(logs, "LINE_DELAY", 0.05)
    # Under the handler's lock (re-entrant here), which the writer thread needs: however long this thread is
    # held up on a busy machine, the six lines are all waiting when the writer gets to them.
    with logging.getLogger().handlers[0].lock:
        for kind in ("claimed", "completed") * 3:
            logs.log_event(event(kind, duration=None))
        assert counted.getvalue() == "" and counted.writes == 0  # waiting
    deadline = time.monotonic() + 10
    while not counted.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert counted.getvalue().count("\n") == 6 and counted.writes == 1
    assert [line.split()[2] for line in counted.getvalue().splitlines()] == ["claimed", "completed"] * 3


def test_a_warning_and_any_other_line_are_written_at_once_after_the_lines_waiting(counting, monkeypatch):
    counted = counting()
    monkeypatch.setattr(logs, "LINE_DELAY", 60)  # only the warning and the other line write them
    logs.log_event(event("claimed", duration=None))
    logs.log_event(event("failed", error="boom"))  # a WARNING: now, the waiting line first, in one write
    assert [line.split()[1:3] for line in counted.getvalue().splitlines()] == [
        ["INFO", "claimed"],
        ["WARNING", "failed"],
    ]
    assert counted.writes == 1
    logs.log_event(event("completed"))
    logging.getLogger("some.library").warning("a line of its own")  # through the logging module
    assert counted.getvalue().splitlines()[-2:] == [
        f"2025-12-05T12:00:36.123Z INFO {event('completed').message}",
        "2025-12-05T12:00:36.123Z WARNING a line of its own",
    ]


def test_the_lines_waiting_are_written_at_exit_by_the_logging_modules_flush(counting, monkeypatch):
    counted = counting()
    monkeypatch.setattr(logs, "LINE_DELAY", 60)
    logs.log_event(event("completed"))
    assert counted.getvalue() == ""
    for handler in logging.getLogger().handlers:
        handler.flush()  # what logging.shutdown does at the interpreter's exit
    assert counted.getvalue() == f"2025-12-05T12:00:36.123Z INFO {event('completed').message}\n"


def test_a_batch_this_big_is_written_without_waiting(counting, monkeypatch):
    counted = counting()
    monkeypatch.setattr(logs, "LINE_DELAY", 60)
    monkeypatch.setattr(logs, "LINE_BATCH", 500)
    for _ in range(10):
        logs.log_event(event("completed"))
    assert counted.writes >= 1 and 500 <= len(counted.getvalue()) < 1000


class BrokenPipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_broken_stream_drops_the_lines_waiting_and_never_raises_into_the_caller(worker_logging, monkeypatch):
    """What reads the worker's stderr went away (a `| tee` that exited): logging goes on without raising, as
    the logging module's own lines do, even with job lines waiting."""
    worker_logging("text")
    monkeypatch.setattr(logs, "LINE_DELAY", 60)
    handler = logging.getLogger().handlers[0]
    monkeypatch.setattr(handler, "stream", BrokenPipe())
    reported = []
    monkeypatch.setattr(handler, "handleError", reported.append)
    logs.log_event(event("completed"))  # waits
    logs.logger.warning("SIGTERM received: stopping")  # would write the waiting line first: the pipe is gone
    logs.log_event(event("failed", error="boom"))  # a WARNING event: written at once, refused
    handler.flush()
    assert logs._lines.waiting == [] and len(reported) >= 1


# --- a failed attempt's line carries its handler's traceback (a worker process, as an operator runs it) ---

RAISING_HANDLERS = """\
import asyncio
import time

from queue_core.handlers import handler


def charge(card):
    raise ValueError(f"card {card} declined")  # the raising line


@handler("sync-fails")
def sync_fails(payload):
    charge(payload["card"])


@handler("async-fails")
async def async_fails(payload):
    await asyncio.sleep(0)
    raise LookupError("no invoice " + "x" * 5000)  # the async raising line


@handler("async-hangs")
async def async_hangs(payload):
    await asyncio.sleep(60)  # where the deadline finds it


@handler("sync-hangs")
def sync_hangs(payload):
    time.sleep(3)


@handler("returns-a-set")
def returns_a_set(payload):
    return {1}
"""


def line_of(fragment: str) -> int:
    """The line of ``RAISING_HANDLERS`` that holds ``fragment``."""
    return next(n for n, line in enumerate(RAISING_HANDLERS.splitlines(), 1) if fragment in line)


def burst_of(module: str, source: str, worker_env, tmp_path, *args) -> str:
    """The stderr of a ``--burst`` worker of handler module ``module`` (written from ``source``)."""
    (tmp_path / f"{module}.py").write_text(source)
    done = subprocess.run(
        [sys.executable, "-m", "queue_core.worker", "--burst", "--handlers", module, *args],
        cwd=tmp_path,
        env={**worker_env, "PYTHONPATH": f"{tmp_path}{os.pathsep}{worker_env['PYTHONPATH']}"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


def run_failing_jobs(repo, worker_env, tmp_path, *args) -> tuple[str, dict[str, int]]:
    ids = {
        "sync-fails": repo.create("sync-fails", {"card": 77}, max_retries=0)[0].id,
        "async-fails": repo.create("async-fails", max_retries=0)[0].id,
        "async-hangs": repo.create("async-hangs", max_retries=0, timeout=0.3)[0].id,
        "sync-hangs": repo.create("sync-hangs", max_retries=0, timeout=0.3)[0].id,
        "returns-a-set": repo.create("returns-a-set", max_retries=0)[0].id,
    }
    stderr = burst_of("raising_handlers", RAISING_HANDLERS, worker_env, tmp_path, *args)
    for job_id in ids.values():
        assert repo.find_by_id(job_id).status == "failed"
    return stderr, ids


def failed_blocks(stderr: str) -> dict[str, str]:
    """Per job type, its ``failed`` line and the lines after it up to the next line of the log."""
    blocks: dict[str, str] = {}
    current = None
    for line in stderr.splitlines():
        if line[:4].isdigit():  # a log line starts with its timestamp; a traceback's lines do not
            current = None
            if " WARNING failed job=" in line:
                current = line.split(" type=")[1].split()[0]
                blocks[current] = line
            continue
        if current is not None:
            blocks[current] += "\n" + line
    return blocks


def test_a_failed_attempt_logs_its_handlers_traceback_once_under_its_line(live_repo, worker_env, tmp_path):
    stderr, ids = run_failing_jobs(live_repo, worker_env, tmp_path, "--log-level", "warning")
    blocks = failed_blocks(stderr)
    handlers_file = str(tmp_path / "raising_handlers.py")

    sync = blocks["sync-fails"].splitlines()
    assert sync[0].endswith('error="card 77 declined": no retries left after 1 attempt')
    assert sync[1] == "Traceback (most recent call last):"
    assert sync[2] == f'  File "{handlers_file}", line {line_of("charge(payload")}, in sync_fails'
    assert sync[4] == f'  File "{handlers_file}", line {line_of("# the raising line")}, in charge'
    assert '    raise ValueError(f"card {card} declined")  # the raising line' in sync
    assert sync[-1] == "ValueError: card 77 declined"
    assert "queue_core" not in blocks["sync-fails"]  # the handler's frames, none of the worker's

    async_lines = blocks["async-fails"].splitlines()
    assert f'  File "{handlers_file}", line {line_of("# the async raising line")}, in async_fails' in async_lines
    assert '    raise LookupError("no invoice " + "x" * 5000)  # the async raising line' in async_lines
    assert async_lines[-1].startswith("LookupError: no invoice xxx") and "more characters)" in async_lines[-1]
    assert len(async_lines[-1]) < 2100  # clipped as the line's error is
    assert "queue_core" not in blocks["async-fails"]

    hangs = blocks["async-hangs"].splitlines()
    assert f'  File "{handlers_file}", line {line_of("# where the deadline")}, in async_hangs' in hangs
    assert hangs[-1] == (
        "AttemptTimedOut: timed out after 0.3s (the job's timeout): the handler was waiting here when it was cancelled"
    )
    # No frame of the handler to show: a plain function's timeout (the slot's own waiting), a result not stored.
    assert blocks["sync-hangs"].count("\n") == 0 and "timed out after 0.3s" in blocks["sync-hangs"]
    assert blocks["returns-a-set"].count("\n") == 0
    assert stderr.count("Traceback (most recent call last):") == 3  # once per failed attempt that has one
    # The job keeps its error as it was: the message, no traceback (its attempt keeps that, below).
    assert live_repo.find_by_id(ids["sync-fails"]).error == "card 77 declined"


def test_each_failed_attempt_keeps_the_traceback_its_line_showed(live_repo, worker_env, tmp_path):
    stderr, ids = run_failing_jobs(live_repo, worker_env, tmp_path, "--log-level", "warning")
    blocks = failed_blocks(stderr)
    for kind in ("sync-fails", "async-fails", "async-hangs"):
        [attempt] = live_repo.errors_for(ids[kind])
        assert attempt.traceback == blocks[kind].split("\n", 1)[1], kind  # the lines under its failed line
    assert "queue_core" not in live_repo.errors_for(ids["sync-fails"])[0].traceback  # the handler's frames
    # No frame of the handler: no traceback, the error alone.
    for kind in ("sync-hangs", "returns-a-set"):
        [attempt] = live_repo.errors_for(ids[kind])
        assert attempt.traceback is None and attempt.error, kind


def test_in_json_the_traceback_stays_inside_the_failed_record(live_repo, worker_env, tmp_path):
    stderr, _ids = run_failing_jobs(live_repo, worker_env, tmp_path, "--log-format", "json", "--log-level", "warning")
    records = [json.loads(line) for line in stderr.splitlines()]  # every line a record
    failed = {record["job_type"]: record for record in records if record.get("event") == "failed"}
    handlers_file = str(tmp_path / "raising_handlers.py")
    assert (
        f'File "{handlers_file}", line {line_of("# the raising line")}, in charge' in failed["sync-fails"]["exception"]
    )
    assert failed["sync-fails"]["exception"].endswith("ValueError: card 77 declined")
    assert (
        f'File "{handlers_file}", line {line_of("# the async raising line")}, in async_fails'
        in failed["async-fails"]["exception"]
    )
    assert "timed out after 0.3s" in failed["async-hangs"]["exception"]
    assert "exception" not in failed["sync-hangs"] and "exception" not in failed["returns-a-set"]


def test_an_embedded_workers_failed_line_has_its_traceback_under_it_in_the_programs_own_logging(worker_logging):
    """README's recipe for an embedded Worker (``on_event=log_event`` and ``logging.basicConfig``): the failed
    line came alone, without the traceback the headless worker's line has under it, as logging's own
    formatters do not read the event."""
    worker_logging("text")  # saves the process's logging, restored after the test
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(logging.Formatter(logging.BASIC_FORMAT))  # what logging.basicConfig() sets
    logging.getLogger().handlers[:] = [handler]
    logs._lines = None  # no worker program: the embedding program's logging alone
    tb = 'Traceback (most recent call last):\n  File "jobs.py", line 3, in charge\n    raise X\nValueError: boom'
    failed, completed = event("failed", error="boom", traceback=tb), event("completed")
    logs.log_event(failed)
    logs.log_event(completed)
    expected = f"WARNING:queue_core.worker:{failed.message}\n{tb}\nINFO:queue_core.worker:{completed.message}\n"
    assert buffer.getvalue() == expected


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_failed_line_with_a_traceback_is_the_line_the_logging_module_writes(worker_logging, fmt):
    tb = 'Traceback (most recent call last):\n  File "jobs.py", line 3, in charge\n    raise X\nValueError: boom'
    ev = event("failed", error="boom", traceback=tb)
    buffer = worker_logging(fmt)
    assert logs._lines.write(logging.WARNING, ev)  # the direct path took it
    direct = buffer.getvalue()
    assert direct == through_logging_module(buffer, ev)
    if fmt == "text":
        assert direct == f"2025-12-05T12:00:36.123Z WARNING {ev.message}\n{tb}\n"
    else:
        assert direct.count("\n") == 1 and json.loads(direct)["exception"] == tb  # one record, one line


def test_json_log_lines_stay_json_on_a_stderr_that_cannot_write_every_character(repo, worker_env, tmp_path):
    # On such a stderr, the stream's backslashreplace wrote "ë" as \xeb: not JSON, and a log shipper dropped it.
    job = repo.create("echo", {"name": "Zoë ✓ 😀"})[0]
    done = subprocess.run(
        [sys.executable, "-m", "queue_core.worker", "--burst", "--log-format", "json"],
        cwd=tmp_path,
        env={**worker_env, "PYTHONIOENCODING": "ascii"},
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stderr.decode("ascii").splitlines()]
    assert f'echo job {job.id}: {{"name": "Zoë ✓ 😀"}}' in [line["message"] for line in lines]
    assert repo.find_by_id(job.id).status == "completed"


HOSTILE_HANDLER = """
from queue_core import handler


@handler("hostile")
def hostile(payload):
    raise ValueError("red \\x1b[31mALERT\\x1b[0m \\u202eesrever\\nsecond line \\x07")
"""


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_handlers_error_text_cannot_act_on_the_operators_terminal(repo, worker_env, tmp_path, fmt):
    # The failed line and the traceback under it wrote ESC (colours, cursor moves), BEL and U+202E (which
    # reverses the rest of the line) as they were: a handler's exception text acted on the terminal.
    job = repo.create("hostile", max_retries=0)[0]
    stderr = burst_of("hostile_handler", HOSTILE_HANDLER, worker_env, tmp_path, "--log-format", fmt)
    assert all(line.isprintable() for line in stderr.splitlines()), stderr
    message = "red \x1b[31mALERT\x1b[0m \u202eesrever\nsecond line \x07"
    if fmt == "json":  # the escapes are JSON's: a reader gets the text back as it was
        failed = next(line for line in map(json.loads, stderr.splitlines()) if line.get("event") == "failed")
        assert failed["error"] == message and failed["exception"].endswith(f"ValueError: {message}")
    else:
        assert "ValueError: red \\u001b[31mALERT\\u001b[0m \\u202eesrever\nsecond line \\u0007\n" in stderr
    assert repo.find_by_id(job.id).error == message  # the job keeps the text as raised
