"""Payloads and CLI arguments from Hypothesis: stored faithfully or refused clearly; never a traceback."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from queue_core.cli import admin as cli
from queue_core.errors import ValidationError

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
