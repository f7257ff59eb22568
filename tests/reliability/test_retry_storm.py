"""A job type that always fails backs off and ends failed, while healthy job types keep flowing."""

from __future__ import annotations

import itertools
import time

from queue_core.worker import Worker
from queue_core.worker.handlers import HandlerRegistry

# A round of failing attempts must take less time than the back-off, or the storm is simply always due and its
# priority rightly takes every slot. A failed attempt costs about five healthy completions (its error row and
# traceback); at 20 storm jobs and a 0.1 s base a round took 0.4 s on a loaded machine, longer than every wait,
# and the healthy jobs ran only after the storm. Four jobs against a 0.2 s base leave most of each wait free.
STORM_JOBS, HEALTHY_JOBS, MAX_RETRIES, BASE = 4, 300, 3, 0.2


def test_retry_storm_backs_off_and_healthy_jobs_keep_flowing(live_repo):
    handlers = HandlerRegistry(with_builtins=False)

    def storm(payload):
        raise RuntimeError("downstream is down")

    def healthy(payload):
        pass

    handlers.register("storm", storm)
    handlers.register("healthy", healthy)
    for i in range(STORM_JOBS):
        live_repo.create("storm", {"i": i}, max_retries=MAX_RETRIES, retry_backoff=BASE, priority="high")
    for i in range(HEALTHY_JOBS):
        live_repo.create("healthy", {"i": i})

    worker = Worker(live_repo, worker_id="w", concurrency=2, registry=handlers, poll_interval=0.01,
                    max_poll_interval=0.05)  # fmt: skip
    started = time.monotonic()
    worker.start()
    try:
        deadline = started + 60
        while time.monotonic() < deadline:
            counts = live_repo.counts()
            if counts["pending"] == counts["running"] == 0:
                break
            time.sleep(0.05)
    finally:
        worker.stop(timeout=5)

    counts = live_repo.counts()
    assert counts == {"pending": 0, "running": 0, "completed": HEALTHY_JOBS, "failed": STORM_JOBS, "cancelled": 0}
    storm_ids = [job.id for job in live_repo.list(status="failed", limit=1000)]
    for job_id in storm_ids:
        attempts = live_repo.errors_for(job_id)
        assert [e.attempt for e in attempts] == list(range(1, MAX_RETRIES + 2))
        gaps = [(b.created_at - a.created_at).total_seconds() for a, b in itertools.pairwise(attempts)]
        for k, gap in enumerate(gaps):  # equal jitter: never less than half of base * 2**k
            assert gap >= BASE * 2**k / 2, (job_id, gaps)
    # The storm had priority and still did not starve the healthy type: healthy jobs finished while the
    # failing ones were waiting out their back-off, not only after the storm ended.
    last_storm_attempt = max(live_repo.errors_for(i)[-1].created_at for i in storm_ids)
    first_storm_attempt = min(live_repo.errors_for(i)[0].created_at for i in storm_ids)
    healthy_jobs = live_repo.list(status="completed", limit=1000)
    during = [j for j in healthy_jobs if first_storm_attempt < j.updated_at < last_storm_attempt]
    assert len(during) > HEALTHY_JOBS // 10, (len(during), first_storm_attempt, last_storm_attempt)
