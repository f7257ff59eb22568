"""A failed attempt keeps its handler's traceback beside its error: stored by ``fail`` (both backends), cut
at its middle when long, carried over HTTP, kept by the v16 migration's old rows, shown by the console."""

from __future__ import annotations

import json

import httpx
import pytest
from fastapi.testclient import TestClient
from support import reopened_at_version

from console.detail_text import error_history
from queue_core.client import HttpQueue
from queue_core.errors import ValidationError
from queue_core.server.app import create_app
from queue_core.store.database import open_database
from queue_core.store.pages import attempt_page
from queue_core.store.repository import JobRepository
from queue_core.validation import MAX_TRACEBACK_CHARS, validate_traceback

TB = (
    "Traceback (most recent call last):\n"
    '  File "app.py", line 3, in send\n    raise ValueError("boom")\nValueError: boom'
)


def failed_once(repo, traceback, max_retries=0):
    job, _ = repo.create("send", max_retries=max_retries, retry_backoff=0)
    claimed = repo.claim("w1")
    return repo.fail(claimed.id, "boom", worker_id="w1", attempt=claimed.attempt, traceback=traceback), job.id


def test_fail_keeps_the_traceback_with_the_attempts_error_and_none_when_there_is_none(repo):
    _, first = failed_once(repo, TB)
    _, second = failed_once(repo, None)
    [attempt] = repo.errors_for(first)
    assert (attempt.error, attempt.traceback) == ("boom", TB)
    assert attempt.to_dict()["traceback"] == TB
    assert repo.errors_for(second)[0].traceback is None
    assert repo.find_by_id(first).error == "boom"  # the job's own error stays the message


def test_a_long_traceback_keeps_its_first_line_and_its_end_whole_lines(repo):
    frames = "".join(f'  File "app.py", line {n}, in step{n}\n    step{n + 1}()\n' for n in range(3000))
    long = f"Traceback (most recent call last):\n{frames}ValueError: boom"
    _, job_id = failed_once(repo, long)
    kept = repo.errors_for(job_id)[0].traceback
    assert len(kept) <= MAX_TRACEBACK_CHARS < len(long)
    first, note, rest = kept.split("\n", 2)
    assert first == "Traceback (most recent call last):"
    assert note == f"  ... ({len(long) - len(first) - 1 - len(rest):,} characters cut)"
    assert long.endswith("\n" + rest) and rest.startswith('  File "app.py", line ')


def test_a_traceback_that_is_not_text_is_refused_and_nothing_is_written(repo):
    job, _ = repo.create("send")
    claimed = repo.claim("w1")
    with pytest.raises(ValidationError) as info:
        repo.fail(claimed.id, "boom", worker_id="w1", attempt=1, traceback=["frame"])
    assert info.value.field == "traceback" and "string" in info.value.message
    assert repo.find_by_id(job.id).status == "running" and repo.errors_for(job.id) == []


def test_a_traceback_is_stored_alike_on_both_backends_nul_and_undecodable_bytes_escaped(repo):
    odd = "Traceback (most recent call last):\nValueError: a\x00b \udcff"
    _, job_id = failed_once(repo, odd)
    assert (
        repo.errors_for(job_id)[0].traceback
        == validate_traceback(odd)
        == "Traceback (most recent call last):\nValueError: a\\x00b \\udcff"
    )
    assert validate_traceback("") is None


def test_a_version_15_database_upgrades_to_16_its_attempts_keeping_their_errors_without_tracebacks(db_url):
    db = open_database(db_url)
    repo = JobRepository(db)
    _, job_id = failed_once(repo, None, max_retries=1)
    db = reopened_at_version(db, db_url, 15, "ALTER TABLE job_errors DROP COLUMN traceback")
    repo = JobRepository(db)
    [attempt] = repo.errors_for(job_id)
    assert (attempt.error, attempt.traceback) == ("boom", None)
    claimed = repo.claim("w1")  # its retry fails again, now with a traceback
    repo.fail(claimed.id, "again", worker_id="w1", attempt=claimed.attempt, traceback=TB)
    assert [(e.error, e.traceback) for e in repo.errors_for(job_id)] == [("boom", None), ("again", TB)]
    db.close()


def test_the_attempt_page_cuts_each_traceback_to_its_end_in_the_database(repo):
    long = "Traceback (most recent call last):\n" + "".join(f"  frame {n:04}\n" for n in range(500)) + "E: x"
    _, job_id = failed_once(repo, long)
    [row] = attempt_page(repo, job_id, traceback_chars=100).rows
    assert (row.traceback, row.traceback_length, row.job_id) == (long[-100:], len(long), job_id)
    [row] = attempt_page(repo, job_id, traceback_chars=len(long)).rows
    assert row.traceback == long


# --- over HTTP ----------------------------------------------------------------------------------------


@pytest.fixture
def http(repo):
    with TestClient(create_app(repo), raise_server_exceptions=False) as client:
        yield client


def test_post_fail_takes_a_traceback_and_the_job_shows_it_in_its_errors(http, repo):
    job, _ = repo.create("send", max_retries=0)
    repo.claim("w1")
    response = http.post(f"/jobs/{job.id}/fail", json={"error": "boom", "worker_id": "w1", "traceback": TB})
    assert response.status_code == 200, response.text
    assert http.get(f"/jobs/{job.id}").json()["errors"][0]["traceback"] == TB


def test_post_fail_refuses_a_traceback_that_is_not_text_and_writes_nothing(http, repo):
    job, _ = repo.create("send")
    repo.claim("w1")
    response = http.post(f"/jobs/{job.id}/fail", json={"error": "boom", "worker_id": "w1", "traceback": 7})
    assert response.status_code == 422 and response.json()["errors"][0]["field"] == "traceback"
    assert repo.find_by_id(job.id).status == "running" and repo.errors_for(job.id) == []


def test_the_http_queue_sends_the_traceback(repo):
    with HttpQueue("http://testserver", client=TestClient(create_app(repo))) as queue:
        job, _ = queue.create("send", max_retries=0)
        queue.claim("w1")
        assert queue.fail(job.id, "boom", worker_id="w1", attempt=1, traceback=TB).status == "failed"
    assert repo.errors_for(job.id)[0].traceback == TB


def test_a_server_from_before_tracebacks_still_records_the_error(http, repo):
    # Such a server forbids the field, as today's forbids any field it does not know: 422, naming it.
    job, _ = repo.create("send")
    repo.claim("w1")
    unknown = http.post(f"/jobs/{job.id}/fail", json={"error": "boom", "worker_id": "w1", "stack": TB})
    assert unknown.status_code == 422 and unknown.json()["errors"][0]["field"] == "stack"
    sent = []

    def old_server(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        sent.append(body)
        if "traceback" in body:
            problem = unknown.json()
            problem["errors"] = [{**problem["errors"][0], "field": "traceback"}]
            return httpx.Response(422, json=problem)
        return http.post(request.url.path, json=body)

    client = httpx.Client(base_url="http://old", transport=httpx.MockTransport(old_server))
    with HttpQueue("http://old", client=client) as old:
        assert old.fail(job.id, "boom", worker_id="w1", attempt=1, traceback=TB).error == "boom"
    assert [("traceback" in body) for body in sent] == [True, False]
    assert [(e.error, e.traceback) for e in repo.errors_for(job.id)] == [("boom", None)]


# --- the console's job detail --------------------------------------------------------------------------


def test_the_detail_shows_each_attempts_traceback_under_its_error(repo):
    _, job_id = failed_once(repo, TB)
    text = error_history(attempt_page(repo, job_id)).plain
    lines = text.splitlines()
    assert lines[1:] == [
        "boom",
        "  Traceback (most recent call last):",
        '    File "app.py", line 3, in send',
        '      raise ValueError("boom")',
        "  ValueError: boom",
    ]


def test_the_detail_shows_a_long_tracebacks_end_from_a_lines_start_and_says_how_to_read_it_all(repo):
    long = "Traceback (most recent call last):\n" + "".join(f"  frame {n:04}\n" for n in range(500)) + "E: x"
    _, job_id = failed_once(repo, long)
    lines = error_history(attempt_page(repo, job_id, traceback_chars=100)).plain.splitlines()
    shown = long[-100:].split("\n")[1:]  # the first line the database kept begins inside a line
    hidden = len(long) - len("\n".join(shown))
    assert lines[2] == f"  … {hidden:,} earlier characters: python -m queue_core show {job_id} prints them"
    assert lines[3:] == ["  " + line for line in shown]


def test_an_exception_line_that_repeats_the_error_is_not_shown_twice(repo):
    job, _ = repo.create("send", max_retries=0)
    repo.claim("w1")
    repo.fail(job.id, "KeyError: 'x'", worker_id="w1", traceback="Traceback (most recent call last):\nKeyError: 'x'")
    lines = error_history(attempt_page(repo, job.id)).plain.splitlines()
    assert lines[1:] == ["KeyError: 'x'", "  Traceback (most recent call last):"]


def failed_each_time(repo, tracebacks):
    """One job that failed once per traceback (retried in between); its id."""
    job, _ = repo.create("send", max_retries=len(tracebacks), retry_backoff=0)
    for traceback in tracebacks:
        claimed = repo.claim("w1")
        repo.fail(claimed.id, "boom", worker_id="w1", attempt=claimed.attempt, traceback=traceback)
    return job.id


def test_a_traceback_repeated_by_later_attempts_is_shown_once_then_named(repo):
    other = TB.replace("line 3", "line 9")
    job_id = failed_each_time(repo, [TB, TB, None, other, TB, other])
    text = error_history(attempt_page(repo, job_id)).plain
    assert text.count("line 3, in send") == 1 and text.count("line 9, in send") == 1
    attempts = text.split("\n\n")
    shown = [["  " + line for line in tb.splitlines()] for tb in (TB, other)]
    assert [attempt.splitlines()[2:] for attempt in attempts] == [
        shown[0],
        ["  same traceback as attempt 1"],
        [],
        shown[1],
        ["  same traceback as attempt 1"],
        ["  same traceback as attempt 4"],
    ]


def test_tracebacks_with_the_same_end_but_not_the_same_length_are_both_shown(repo):
    long = "Traceback (most recent call last):\n" + "".join(f"  frame {n:04}\n" for n in range(500)) + "E: x"
    longer = long.replace("frame 0000\n", "frame 0000\n  frame extra\n")
    job_id = failed_each_time(repo, [long, longer])
    text = error_history(attempt_page(repo, job_id, traceback_chars=100)).plain
    assert "same traceback" not in text and text.count("frame 0499") == 2
