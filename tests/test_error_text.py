"""Errors are stored whatever text a handler's exception carries (issue 19, defect 5), on both backends."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("raw", "stored"),
    [
        ("a\x00b", "a\\x00b"),  # PostgreSQL refuses NUL in text: made visible instead
        ("\x00", "\\x00"),
        ("lone \ud800 surrogate", "lone \\ud800 surrogate"),  # not UTF-8: kept, escaped
        ("tab\tand newline\n stay", "tab\tand newline\n stay"),
    ],
)
def test_fail_stores_any_error_text_readably(repo, raw, stored):
    job, _ = repo.create("t", max_retries=1)
    claimed = repo.claim("w1")
    requeued = repo.fail(job.id, raw, worker_id="w1", attempt=claimed.attempt)
    assert (requeued.status, requeued.error) == ("pending", stored)
    assert [e.error for e in repo.errors_for(job.id)] == [stored]
