"""Ctrl-C during a long admin-CLI command that changes jobs in batches (a bulk ``--query`` action, ``prune``):
it stops after the batch in hand and says how far it got, rather than a blank line over half-done work."""

from __future__ import annotations

import signal

import pytest

from queue_core.cli.admin import main
from queue_core.store.bulk import BULK_BATCH
from queue_core.store.database import open_database
from queue_core.store.repository import PRUNE_BATCH, JobRepository


@pytest.fixture
def repo_on(db_url):
    db = open_database(db_url)
    yield JobRepository(db)
    db.close()


@pytest.fixture
def ctrl_c_after_first_batch(monkeypatch):
    """SIGINT, as ctrl-C in the terminal sends it, while the first batch's transaction is open."""
    batches = []
    forget = JobRepository._forget_deleted

    def forgetting(self, deleted):
        forget(self, deleted)
        batches.append(len(deleted))
        if len(batches) == 1:
            signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(JobRepository, "_forget_deleted", forgetting)
    return batches


def test_ctrl_c_stops_a_bulk_delete_after_its_batch_and_says_how_far_it_got(
    db_url, repo_on, capsys, ctrl_c_after_first_batch
):
    # Regression: at a million jobs, ctrl-C 30 s into `delete --query status:completed` printed a blank line
    # and exit 130: 146,000 of 879,820 jobs were deleted, and nothing said so.
    total = BULK_BATCH + 500
    repo_on.create_many([{"type": "report"} for _ in range(total)])
    assert main(["--db", db_url, "delete", "--query", "type:report"]) == 128 + signal.SIGINT
    out, err = capsys.readouterr()
    assert err == ""
    assert out == (
        f"stopped by ctrl-C: deleted {BULK_BATCH:,} of {total:,} pending/failed/completed/cancelled jobs"
        " matching type:report (0 skipped: changed meanwhile); the other 500 were not touched:"
        " run the command again for the rest\n"
    )
    assert ctrl_c_after_first_batch == [BULK_BATCH]  # the batch in hand finished; no other began
    assert repo_on.counts()["pending"] == 500
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back


def test_ctrl_c_stops_a_prune_after_its_batch_and_says_how_many_it_pruned(
    db_url, repo_on, capsys, ctrl_c_after_first_batch
):
    total = PRUNE_BATCH + 7
    repo_on.create_many([{"type": "report"} for _ in range(total)])
    repo_on.bulk("cancel", "type:report")
    assert main(["--db", db_url, "prune", "--older-than", "0"]) == 128 + signal.SIGINT
    out, err = capsys.readouterr()
    assert out == f'{{"pruned": {PRUNE_BATCH}}}\n'
    assert err == (
        f"stopped by ctrl-C after {PRUNE_BATCH:,} jobs: the others were not touched; run the command again"
        " for the rest\n"
    )
    assert ctrl_c_after_first_batch == [PRUNE_BATCH]
    assert repo_on.counts()["cancelled"] == 7
