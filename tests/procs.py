"""Child-process entry points for the multi-process tests (importable under the spawn start method)."""

from __future__ import annotations


def claim_until_empty(db_url: str, worker_id: str, start, results, complete: bool = False) -> None:
    """Claim (and with ``complete``, complete) jobs until none is left; report the ids and any error."""
    from queue_core.store.database import open_database
    from queue_core.store.repository import JobRepository

    repo = JobRepository(open_database(db_url))
    start.wait()
    claimed, errors = [], []
    while True:
        try:
            job = repo.claim(worker_id)
            if job is not None and complete and repo.complete(job.id, worker_id=worker_id, attempt=job.attempt) is None:
                errors.append(f"job {job.id}: lost its claim before completing")
        except Exception as exc:  # any error at all fails the test, "database is locked" included
            errors.append(repr(exc))
            continue
        if job is None:
            break
        claimed.append(job.id)
    results.put((worker_id, claimed, errors))


def create_with_key(db_url: str, key: str, start, results) -> None:
    from queue_core.store.database import open_database
    from queue_core.store.repository import JobRepository

    repo = JobRepository(open_database(db_url))
    start.wait()
    try:
        job, created = repo.create("charge", {"order": 42}, idempotency_key=key)
        results.put((job.id, created, None))
    except Exception as exc:
        results.put((None, None, repr(exc)))


def run_until_empty(db_url: str, worker_id: str, start, results) -> None:
    claim_until_empty(db_url, worker_id, start, results, complete=True)


def drain_until_stopped(db_url: str, worker_id: str, start, stop, results) -> None:
    """Claim and complete jobs of every queue, idling while none is claimable, until ``stop`` is set;
    report (worker_id, [(job id, queue)] in claim order, errors)."""
    import time

    from queue_core.store.database import open_database
    from queue_core.store.repository import JobRepository

    repo = JobRepository(open_database(db_url))
    start.wait()
    claimed, errors = [], []
    while True:
        try:
            job = repo.claim(worker_id)
            if job is None:
                if stop.is_set():
                    break
                time.sleep(0.005)
                continue
            claimed.append((job.id, job.queue))
            time.sleep(0.001)  # the job's work: long enough that the drain is still going when the test pauses
            if repo.complete(job.id, worker_id=worker_id, attempt=job.attempt) is None:
                errors.append(f"job {job.id}: lost its claim before completing")
        except Exception as exc:  # any error fails the test
            errors.append(repr(exc))
    results.put((worker_id, claimed, errors))
