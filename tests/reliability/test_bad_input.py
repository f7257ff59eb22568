"""Payloads and CLI arguments from Hypothesis: stored faithfully or refused clearly; never a traceback.

Issue 18 adds every admin command (each with its own options among the words), against a seeded database: a
refused command leaves every table as it was (every HTTP route, from the API's schema: tests/test_server_fuzz.py)."""

from __future__ import annotations

import argparse
import contextlib
import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import every_row

from queue_core.cli import admin as cli
from queue_core.errors import ValidationError
from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20,
)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))


@SETTINGS
@given(payload=st.dictionaries(st.text(), json_values, max_size=5))
def test_any_json_object_round_trips(repo, payload):
    job, _ = repo.create("t", payload)
    assert repo.find_by_id(job.id).payload == json.loads(json.dumps(payload))


def test_one_mebibyte_string_round_trips(repo):
    payload = {"blob": "é" * (1 << 20)}
    job, _ = repo.create("t", payload)
    assert repo.find_by_id(job.id).payload == payload


class Exploit:
    reduced = False

    def __reduce__(self):
        Exploit.reduced = True
        return (print, ("pwned",))


def test_reduce_style_objects_are_refused_and_never_reduced(repo):
    for payload in ({"x": Exploit()}, {"x": [1, {"y": Exploit()}]}, {Exploit(): 1}):
        with pytest.raises(ValidationError):
            repo.create("t", payload)
    assert Exploit.reduced is False
    assert sum(repo.counts().values()) == 0


def run_cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


words = st.sampled_from(
    ["enqueue", "list", "show", "stats", "retry", "reap", "prune", "--payload", "--priority", "--max-retries",
     "--idempotency-key", "--status", "--limit", "--older-than", "--after", "--delay", "--json", "echo", "1",
     "-1", "0", "1e309", "1e300", "1e12", "3e9", "nan", "high", "{}", "[]", '{"a": 1}', "{", "\x00", "💥", "--db"]
)  # fmt: skip


@SETTINGS
@given(argv=st.lists(words | st.text(max_size=8), max_size=6))
def test_fuzzed_cli_arguments_never_traceback(db_url, argv):
    if "--db" in argv:  # keep the fuzz inside this test's database
        argv = [a for a in argv if a != "--db"]
    code, _, err = run_cli([*argv, "--db", db_url] if argv and argv[0] in cli.COMMANDS else argv)
    assert code in (0, 2), (argv, code, err)
    assert "Traceback" not in err
    if code == 2:
        assert err.strip() and len(err.strip().splitlines()) == 1, err


# --- issue 18: every admin command; a refusal writes nothing ---------------------------------------------------

FUZZ = settings(max_examples=25, deadline=None, database=None, suppress_health_check=list(HealthCheck))
# Values people mistype: numbers out of range, not numbers, JSON that is not an object, control and
# non-BMP characters, and the names and ids of what the seeded database holds.
VALUES = ["1", "2", "3", "0", "-1", "1e309", "nan", "9" * 30, "1.5", "high", "{}", "[]", '{"a": 1}', "{", "\x00",
          "💥", "", " ", "default", "reports", "echo", "w1", "--", "-", "*/5 * * * * *", "'", '"', "\\",
          "a" * 300]  # fmt: skip


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    (commands,) = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    return dict(commands.choices)


COMMANDS = subcommands()


def options_of(command: str) -> list[str]:
    return sorted({flag for action in COMMANDS[command]._actions for flag in action.option_strings} - {"--db"})


def seed(repo: JobRepository) -> None:
    """One job in each state an admin command acts on (ids 1-4), a paused queue and a registered worker."""
    repo.create("echo", {"n": 1})
    repo.create("echo", {"n": 2}, queue="reports")
    failed, _ = repo.create("echo", {"n": 3}, max_retries=0)
    repo.create("echo", {"n": 4})
    claimed = repo.claim("w1")
    repo.fail(claimed.id, "boom", worker_id="w1", attempt=claimed.attempt)
    assert repo.find_by_id(failed.id) is not None
    repo.pause_queue("reports")


@pytest.fixture
def seeded(db_url):
    repo = JobRepository(open_database(db_url))
    seed(repo)
    yield db_url, repo
    repo.db.close()


def test_every_command_is_fuzzed():
    assert {"enqueue", "list", "show", "retry", "cancel", "pause", "resume", "queues", "workers", "prune"} <= set(
        COMMANDS
    ), sorted(COMMANDS)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_any_arguments_to_any_command_answer_clearly_and_a_refusal_writes_nothing(seeded, command):
    db_url, repo = seeded
    words = st.sampled_from(options_of(command) + VALUES) | st.text(max_size=6)

    @FUZZ
    @given(argv=st.lists(words, max_size=5))
    def fuzz(argv):
        before = every_row(repo)
        code, out, err = run_cli([command, *argv, "--db", db_url])
        assert "Traceback" not in err and "Traceback" not in out, (argv, err)
        assert code in (0, 1, 2), (argv, code, err)
        if code != 0:
            assert len(err.strip().splitlines()) >= 1 and err.strip().splitlines()[-1].startswith(
                ("error:", "usage")
            ), err
            assert every_row(repo) == before, (command, argv, err)

    fuzz()
