"""What the one-slot complete-and-claim statement's shape costs beside its writes:
``python -m tests.bench.statement_shape``.

A one-slot SQLite worker runs one statement a job: ``UPDATE ... RETURNING`` that completes the job it ran and
claims the next (``Statements.complete_and_claim``). This loops that statement, as the worker's repository
compiles it, on the bare ``sqlite3`` connection of a fresh queue (no binding in Python, no rows built), beside
variants of its SQL that write the same rows: without the claim's priority-level bound (the recursive
``levels`` query: "Jobs scheduled for later at a higher priority" in README), without the paused-queue
check, returning three columns instead of every column of both rows, all three, and a hand-written minimum.
Every variant completes every job (checked). Rounds interleave the variants; the figures are µs of CPU a
job (the process's CPU time, so a busy machine moves them less than the wall clock). Options: ``-n`` jobs
per round (5000), ``--rounds`` (3).

The variants are measurements, not proposals: the priority bound and the paused-queue check are rules a
claim must keep.
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
from pathlib import Path

from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository
from queue_core.store.statements import claim_filters

TYPES = ["bench-noop", "a", "b", "c", "d"]  # a worker of five handler types, as the bench's
# The statement's parameters in order (its SQL has "?"s): named here so that variants can drop clauses.
NAMES = ["done", "running", "now", "worker", "now", "one", "result", "id", "worker", "attempt", "now", "one"]
NAMES += [f"type{i}" for i in range(8)] + ["now", "now"]
PAUSED = ' AND ("jobs"."queue" NOT IN (SELECT "t1"."name" FROM "queues" AS "t1" WHERE ("t1"."paused" = :one)))'
NARROW = 'RETURNING "jobs"."id", "jobs"."status", "jobs"."attempt"'
MINIMUM = (
    """UPDATE jobs SET status = CASE WHEN status = 'running' THEN 'completed' ELSE 'running' END,
 claimed_at = CASE WHEN status = 'running' THEN claimed_at ELSE :now END, worker_id = :worker, updated_at = :now,
 heartbeat_at = CASE WHEN status = 'running' THEN heartbeat_at END,
 attempt = CASE WHEN status = 'running' THEN attempt ELSE attempt + 1 END, result = NULL
 WHERE (id = :id AND status || '' = 'running' AND worker_id = :worker AND attempt = :attempt)
  OR id = (SELECT id FROM jobs INDEXED BY jobs_pending_claim WHERE status = 'pending' AND run_at <= :now
           AND type IN (:type0, :type1, :type2, :type3, :type4, :type5, :type6, :type7)
           ORDER BY priority DESC, run_at, id LIMIT 1)
 """
    + NARROW
)


def fresh(folder: Path, index: int, n: int) -> JobRepository:
    repo = JobRepository(open_database(f"sqlite:///{folder}/shape-{index}.db"))
    for start in range(0, n + 1, 5000):
        repo.create_many([{"type": TYPES[0]}] * min(5000, n + 1 - start))
    return repo


def variants(repo: JobRepository) -> dict[str, str]:
    """The worker's statement with named parameters, and its variants."""
    statements = repo.statements
    type_count, queue_count, _ = claim_filters(TYPES, None)
    compiled = statements.compiled.statement(
        statements._complete_and_claim, type_count, queue_count, statements.reads_past_paused()
    )
    pieces = compiled.sql.split("?")
    if len(pieces) != len(NAMES) + 1:
        raise SystemExit(f"the statement has {len(pieces) - 1} parameters, this bench knows {len(NAMES)}: update it")
    ours = pieces[0] + "".join(f":{name}{piece}" for name, piece in zip(NAMES, pieces[1:], strict=True))
    bound = re.search(r' AND \("jobs"\."priority" <= \(WITH RECURSIVE.*?\)\)\) ORDER BY', ours, re.S)
    if bound is None or PAUSED not in ours:
        raise SystemExit("the statement's shape changed: update this bench")
    no_bound = ours.replace(bound.group(0), ") ORDER BY")
    narrow = re.sub(r"RETURNING .*", NARROW, ours, flags=re.S)
    return {
        "the worker's statement": ours,
        "without the priority-level bound": no_bound,
        "without the paused-queue check": ours.replace(PAUSED, ""),
        "returning 3 columns": narrow,
        "all three": re.sub(r"RETURNING .*", NARROW, no_bound.replace(PAUSED, ""), flags=re.S),
        "a hand-written minimum": MINIMUM,
    }


def one_round(repo: JobRepository, sql: str, n: int) -> float:
    """µs of CPU a job for ``n`` rounds of ``sql`` on the repository's connection."""
    connection = repo.db.connection()
    job = repo.claim("shape", types=TYPES)
    narrow = NARROW in sql
    status_at, attempt_at = (1, 2) if narrow else (4, 16)
    fixed = {"done": "completed", "running": "running", "worker": "shape", "one": 1, "result": None}
    fixed.update({f"type{i}": TYPES[min(i, len(TYPES) - 1)] for i in range(8)})
    fixed = {name: value for name, value in fixed.items() if f":{name}" in sql}
    job_id, attempt = job.id, job.attempt
    stamp = repo.Job.updated_at.db_value  # the text SQLite keeps, as the repository binds it
    start = time.process_time()
    for _ in range(n):
        values = {**fixed, "now": stamp(repo.time.now()), "id": job_id, "attempt": attempt}
        for row in connection.execute(sql, values).fetchall():
            if row[status_at] == "running":
                job_id, attempt = row[0], row[attempt_at]
    cpu = time.process_time() - start
    completed = connection.execute("SELECT count(*) FROM jobs WHERE status = 'completed'").fetchone()[0]
    if completed != n:
        raise SystemExit(f"a variant completed {completed} of {n} jobs")
    return cpu / n * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=5000, help="jobs per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="shape-") as folder:
        index = 0
        for _ in range(args.rounds):
            for name, sql in variants(fresh(Path(folder), index, 0)).items():
                index += 1
                repo = fresh(Path(folder), index, args.n)
                results.setdefault(name, []).append(one_round(repo, sql, args.n))
                repo.db.close()
    base = statistics.median(next(iter(results.values())))
    print(f"n = {args.n}, median of {args.rounds} rounds, µs of CPU a job (× the worker's statement)")
    for name, values in results.items():
        median = statistics.median(values)
        print(f"{name:<36} {median:>7.1f} µs {median / base:>5.2f}  rounds {[round(v) for v in values]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
