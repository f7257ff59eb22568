"""Child-process entry points for the multi-process tests (importable under the spawn start method)."""

from __future__ import annotations


def claim_until_empty(db_url: str, worker_id: str, start, results) -> None:
    from queue_core.db import open_database
    from queue_core.repository import JobRepository

    repo = JobRepository(open_database(db_url))
    start.wait()
    claimed, errors = [], []
    while True:
        try:
            job = repo.claim(worker_id)
        except Exception as exc:  # any error at all fails the test, "database is locked" included
            errors.append(repr(exc))
            continue
        if job is None:
            break
        claimed.append(job.id)
    results.put((worker_id, claimed, errors))


def create_with_key(db_url: str, key: str, start, results) -> None:
    from queue_core.db import open_database
    from queue_core.repository import JobRepository

    repo = JobRepository(open_database(db_url))
    start.wait()
    try:
        job, created = repo.create("charge", {"order": 42}, idempotency_key=key)
        results.put((job.id, created, None))
    except Exception as exc:
        results.put((None, None, repr(exc)))
