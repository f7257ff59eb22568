"""What only PostgreSQL does: SKIP LOCKED claims, the server's clock, NOTIFY/LISTEN wake-ups, churn tuning."""

from __future__ import annotations

import itertools
import logging
import os
import re
import threading
import time
from datetime import UTC, datetime, timedelta

import psycopg
import psycopg.sql
import pytest

from queue_core.errors import DatabaseURLError
from queue_core.store import notify
from queue_core.store import repository as repository_module
from queue_core.store.compiled import numbered
from queue_core.store.database import open_database
from queue_core.store.notify import JOBS_CHANNEL, listen_for_jobs
from queue_core.store.repository import JobRepository
from queue_core.store.schema import SCHEMA_VERSION, schema_version
from queue_core.store.statements import LOOK_PAST_PAUSED, _count, _padded
from queue_core.validation import MAX_TYPES

postgres_only = pytest.mark.backends("postgresql")

CLAIM_TYPES = ["t", "u"]
# PREPARE needs the types an IN list of parameters leaves open; the claim's one NULL is heartbeat_at,
# its times are timestamps (bound from a test clock, else the server's now()).
PARAMETER_TYPES = {bool: "boolean", str: "text", int: "bigint", type(None): "timestamp", datetime: "timestamp"}


def claim_statement(
    repo: JobRepository,
    types: list[str] | None = CLAIM_TYPES,
    *,
    gated: bool = False,
    past_paused: bool = False,
    queues: list[str] | None = None,
) -> tuple[str, list]:
    """The SQL and parameters of a worker's claim of 4 jobs of ``types`` (None: any) from ``queues`` (None: any):
    as an idle worker claims (``gated``: it looks first whether any job of its types is there) or as a busy
    one does beside its completions; ``past_paused``: the claim run while a queue is paused."""
    statements = repo.statements
    types, queues = _padded(types), _padded(queues)
    claim = statements.compiled.statement(statements._claim, 4, _count(types), _count(queues), gated, past_paused)
    filters = {
        **({} if types is None else numbered("type", types)),
        **({} if queues is None else numbered("queue", queues)),
    }
    return claim.sql, claim.params(statements.time.bind({"worker_id": "w", **filters}))


def claim_plan(
    repo: JobRepository, types: list[str] | None = CLAIM_TYPES, *, generic: bool, gated: bool = False, **options
) -> str:
    """EXPLAIN ANALYZE of the statement a worker's claim of 4 jobs runs, as a prepared statement (psycopg prepares
    what a connection runs five times), planned generically or with these values."""
    return prepared_plan(repo, *claim_statement(repo, types, gated=gated, **options), generic=generic)


def prepared_plan(repo: JobRepository, sql: str, params: list, *, generic: bool, infer_types: bool = False) -> str:
    """EXPLAIN ANALYZE of ``sql`` as a prepared statement, planned generically or with ``params``; with
    ``infer_types`` PostgreSQL infers the parameters' types from the statement (a None may stand for any)."""
    counter = itertools.count(1)
    numbered_sql = re.sub("%s", lambda _: f"${next(counter)}", sql)
    db = repo.db
    mode = "force_generic_plan" if generic else "force_custom_plan"
    kinds = "" if infer_types else "(" + ", ".join(PARAMETER_TYPES[type(value)] for value in params) + ")"
    with db.atomic() as transaction:  # EXPLAIN ANALYZE claims: rolled back
        db.execute_sql(f"SET LOCAL plan_cache_mode = {mode}")
        db.execute_sql(f"PREPARE planned{kinds} AS {numbered_sql}")
        # EXECUTE's arguments as literals: parameters there would need the types again.
        arguments = ", ".join(psycopg.sql.Literal(value).as_string(db.connection()) for value in params)
        rows = db.execute_sql(f"EXPLAIN (ANALYZE, COSTS OFF) EXECUTE planned({arguments})").fetchall()
        db.execute_sql("DEALLOCATE planned")
        transaction.rollback()
    return "\n".join(row[0] for row in rows)


def host_clock_must_not_be_used():
    raise AssertionError("the host's clock was read; PostgreSQL without a test clock must use now()")


def server_now(db) -> datetime:
    return db.execute_sql("SELECT now()").fetchone()[0].astimezone(UTC)


@postgres_only
def test_without_a_test_clock_every_time_comes_from_the_server(db, monkeypatch):
    monkeypatch.setattr(repository_module, "utc_now", host_clock_must_not_be_used)
    repo = JobRepository(db)
    before = server_now(db)
    job, _ = repo.create("t", max_retries=1, retry_backoff=0)
    claimed = repo.claim("w1")
    assert claimed.id == job.id
    assert repo.fail(job.id, "boom", worker_id="w1").status == "pending"
    assert repo.claim("w2").id == job.id
    assert repo.heartbeat([job.id], worker_id="w2") == [job.id]
    assert repo.reap_stale(timedelta(hours=1)) == 0
    assert repo.complete(job.id, worker_id="w2").status == "completed"
    assert repo.prune(timedelta(hours=1)) == 0
    assert repo.throughput()["completed"] > 0
    after = server_now(db)
    stored = repo.find_by_id(job.id)
    for moment in (stored.created_at, stored.run_at, stored.claimed_at, stored.heartbeat_at, stored.updated_at):
        assert before <= moment <= after
    assert repo.errors_for(job.id)[0].created_at >= before


@pytest.mark.backends("sqlite")
def test_sqlite_uses_the_host_clock(db, monkeypatch):
    fixed = datetime(2031, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    monkeypatch.setattr(repository_module, "utc_now", lambda: fixed)
    repo = JobRepository(db)
    job, _ = repo.create("t")
    assert job.created_at == job.run_at == fixed
    assert repo.claim("w").claimed_at == fixed


@postgres_only
def test_a_host_clock_an_hour_ahead_cannot_reap_a_live_job(db, monkeypatch):
    repo = JobRepository(db)
    repo.create("t")
    job = repo.claim("w-live")
    repo.heartbeat([job.id], worker_id="w-live")
    # Another host whose clock runs an hour fast reaps with a 5-minute threshold: the server decides.
    monkeypatch.setattr(repository_module, "utc_now", lambda: datetime.now(UTC) + timedelta(hours=1))
    assert JobRepository(db).reap_stale(timedelta(minutes=5)) == 0
    assert repo.find_by_id(job.id).worker_id == "w-live"


@postgres_only
def test_claimers_skip_rows_another_claimer_has_locked(db, db_url, repo):
    first, _ = repo.create("t", priority="high")
    second, _ = repo.create("t")
    with psycopg.connect(db_url) as other:  # a claimer caught mid-transaction, holding the best job
        other.execute("SELECT id FROM jobs WHERE id = %s FOR UPDATE", (first.id,))
        # A claim that waited for the lock would hit this timeout and raise instead of hanging the test.
        db.execute_sql("SET statement_timeout = '5s'")
        assert repo.claim("w").id == second.id
        assert repo.claim("w") is None
        other.rollback()
    assert repo.claim("w").id == first.id


@postgres_only
@pytest.mark.parametrize("generic", [False, True], ids=["custom", "generic"])
@pytest.mark.parametrize("types", [["report"], ["report", "invoice", "audit"]], ids=["one-type", "three-types"])
def test_an_idle_claim_of_types_with_no_jobs_reads_none_of_the_other_types_backlog(db, generic, types):
    # 3,000 pending jobs of another type, in claim order before anything of the worker's: the claim's scan of
    # the pending index would read them all (60 ms at 200,000) at every wake-up of an idle worker.
    repo = JobRepository(db)
    repo.create_many([{"type": "email"}] * 3000)
    db.execute_sql("ANALYZE jobs")
    plan = claim_plan(repo, types, generic=generic, gated=True)
    probe = re.search(r"Index Scan using jobs_type_due on jobs probe \(actual [^)]*rows=(\d+)", plan)
    assert probe and probe.group(1) == "0", plan  # found nothing of these types, through their own index
    assert re.search(r"Scan using \w+ on jobs t1 \(never executed\)", plan), plan  # the claim's read never began
    assert "Rows Removed by Filter: 3000" not in plan and "Seq Scan on jobs" not in plan, plan
    # A job of one of its types: the look finds it, and the claim reads on and takes it (rolled back here).
    repo.create(types[-1])
    plan = claim_plan(repo, types, generic=generic, gated=True)
    assert re.search(r"Update on jobs \(actual [^)]*rows=1 ", plan), plan
    # Beside completions (a busy worker) the claim is not gated: its types had work a moment ago.
    assert "probe" in claim_statement(repo, types, gated=True)[0]
    assert "probe" not in claim_statement(repo, types, gated=False)[0]


@postgres_only
@pytest.mark.parametrize("generic", [False, True], ids=["custom", "generic"])
def test_an_idle_claim_reads_none_of_its_types_jobs_scheduled_for_later(db, generic):
    repo = JobRepository(db)
    later = server_now(db) + timedelta(hours=1)
    repo.create_many([{"type": "remind", "run_at": later}] * 3000)
    db.execute_sql("ANALYZE jobs")
    plan = claim_plan(repo, ["remind"], generic=generic, gated=True)
    # Due jobs of a type are one range of the type index (v9): the look reads an empty range, not 3,000 rows.
    probe = re.search(r"Index Scan using jobs_type_due on jobs probe \(actual [^)]*rows=(\d+)", plan)
    assert probe and probe.group(1) == "0", plan
    assert re.search(r"Index Cond: .*run_at <=", plan) and "Rows Removed by Filter: 3000" not in plan, plan
    assert re.search(r"Scan using \w+ on jobs t1 \(never executed\)", plan), plan


@postgres_only
@pytest.mark.parametrize("generic", [False, True], ids=["custom", "generic"])
@pytest.mark.parametrize(
    "types, gated",
    [(["t"], False), (["t"], True), (None, False)],
    ids=["typed-beside-completions", "typed-idle", "any-type"],
)
def test_a_claim_passes_a_paused_queues_backlog_without_reading_it(db, generic, types, gated):
    # Regression: a paused queue's jobs stay in the pending index, in claim order among the others, and every
    # claim skipped them one by one: 35 ms of the server's CPU a claim behind 200,000 (71 ms for an idle
    # worker's claim of their type, whose look read them too), from the moment an operator paused the queue.
    repo = JobRepository(db)
    repo.create_many([{"type": "t", "queue": "reports"}] * 3000)
    db.execute_sql("ANALYZE jobs")  # statistics that know the backlog only, as they are until the next ANALYZE
    mail, _ = repo.create("t", queue="mail")
    default, _ = repo.create("t")
    repo.create_many([{"type": "x", "queue": "default"}] * 30)
    repo.pause_queue("reports")
    assert repo.statements.reads_past_paused() is True
    plan = claim_plan(repo, types, generic=generic, gated=gated, past_paused=True)
    read = [
        int(rows) * int(loops) for rows, loops in re.findall(r"on jobs \w+ \(actual [^)]*rows=(\d+) loops=(\d+)", plan)
    ]
    removed = [int(rows) for rows in re.findall(r"Rows Removed by Filter: (\d+)", plan)]
    # Each queue's first jobs in its own claim order (with statistics that saw one queue, the planner took the
    # pending index in claim order for a queue's read, filtered by queue, when the read's order did not name
    # the queue: 38-93 ms a claim behind 200,000), and the look's few.
    assert re.search(r"Index Scan using jobs_pending_queue_claim on jobs each", plan), plan
    assert read and max(read) <= LOOK_PAST_PAUSED + 1, plan
    assert max(removed, default=0) < 100 and not re.search(r"Seq Scan on jobs\b", plan), plan
    claimed = 2 if types else 4  # the two jobs of type t not paused, or those and two of type x
    assert re.search(rf"Update on jobs \(actual [^)]*rows={claimed} ", plan), plan
    ids = [job.id for job in repo.claim_many("w", 4, types=types)]
    assert ids == ([mail.id, default.id] if types else [mail.id, default.id, default.id + 1, default.id + 2])
    repo.resume_queue("reports")
    assert len(repo.claim_many("w", 4, types=types)) == 4  # resumed: its jobs are claimed again


@postgres_only
@pytest.mark.parametrize("generic", [False, True], ids=["custom", "generic"])
def test_on_a_table_never_analyzed_a_claim_of_named_queues_passes_a_paused_ones_backlog(db, generic):
    # With no statistics, a queue's read of one type took the type index as the narrower, read every due job
    # of the type (the paused queue's too) and sorted them: 8 ms a claim behind 60,000, 30 ms behind 200,000.
    repo = JobRepository(db)
    db.execute_sql("ALTER TABLE jobs SET (autovacuum_enabled = false)")  # never analyzed while the test runs
    repo.create_many([{"type": "t", "queue": "reports"}] * 60_000)  # below ~30,000 the plan was right
    mail = repo.create_many([{"type": "t", "queue": "mail"}] * 40)
    repo.pause_queue("reports")
    assert db.execute_sql("SELECT reltuples < 0 FROM pg_class WHERE oid = 'jobs'::regclass").fetchone()[0]
    plan = claim_plan(repo, ["t"], generic=generic, past_paused=True, queues=["reports", "mail"])
    # The choice of jobs: the CTE (the UPDATE after it takes the chosen ids).
    choice = plan.split("CTE Scan on claimable")[0]
    removed = [int(rows) for rows in re.findall(r"Rows Removed by Filter: (\d+)", choice)]
    assert re.search(r"Index Scan using jobs_pending_queue_claim on jobs each", choice), plan
    assert max(removed, default=0) < 100 and "jobs_type_due" not in choice, plan
    assert re.search(r"Update on jobs \(actual [^)]*rows=4 ", plan), plan
    claimed = [job.id for job in repo.claim_many("w", 4, types=["t"], queues=["reports", "mail"])]
    assert claimed == [job.id for job in mail[:4]]


@postgres_only
@pytest.mark.parametrize("generic", [False, True], ids=["custom", "generic"])
@pytest.mark.parametrize("past_paused", [False, True], ids=["plain", "queue-by-queue"])
def test_a_claim_of_a_worker_s_many_types_hashes_them_and_reads_in_claim_order(db, generic, past_paused):
    # Regression: a worker claims with every type it has a handler for (up to MAX_TYPES). A list of parameters
    # is searched name by name on each job the claim reads, the list built again each time: 24 us a job with
    # 1,000 types, 0.5 s a claim beside completions behind 20,000 jobs of other types. The types are hashed
    # once per statement instead (a hashed SubPlan), and the read stays the pending index in claim order.
    repo = JobRepository(db)
    repo.create_many([{"type": "other"}] * 3000)
    mine, _ = repo.create("m999")
    db.execute_sql("ANALYZE jobs")
    types = [f"m{i}" for i in range(MAX_TYPES)]
    plan = claim_plan(repo, types, generic=generic, past_paused=past_paused)
    read = plan.split("CTE Scan on claimable")[0]
    filters = [line for line in read.splitlines() if "Filter:" in line]
    assert not [line for line in filters if "ANY" in line], plan  # no job's type sought through a list
    assert re.search(r"ProjectSet \(actual [^)]*rows=1024 loops=1\)", read), plan  # hashed once: 1,024 names
    assert not re.search(r"Seq Scan on jobs\b", read), plan
    if not past_paused:  # queue by queue, the first jobs of each queue are sorted together, by design
        assert "Sort" not in read, plan
    assert re.search(r"Update on jobs \(actual [^)]*rows=1 ", plan), plan
    assert [job.id for job in repo.claim_many("w", 4, types=types)] == [mine.id]


@postgres_only
def test_claims_read_queue_by_queue_skip_the_jobs_another_claimer_has_locked(db, db_url, repo):
    repo.create_many([{"type": "t", "queue": "reports"}] * 5)
    first, _ = repo.create("t", queue="mail", priority="high")
    second, _ = repo.create("t", queue="mail")
    third, _ = repo.create("t")
    repo.pause_queue("reports")
    with psycopg.connect(db_url) as other:  # a claimer caught mid-transaction, holding the best job
        other.execute("SELECT id FROM jobs WHERE id = %s FOR UPDATE", (first.id,))
        db.execute_sql("SET statement_timeout = '5s'")  # a claim that waited for the lock would raise
        assert [job.id for job in repo.claim_many("w", 2)] == [second.id, third.id]
        assert repo.claim("w") is None
        other.rollback()
    assert repo.claim("w").id == first.id


@postgres_only
def test_claim_plan_reads_the_partial_pending_index_even_as_a_generic_plan(db, repo):
    db.execute_sql(
        "INSERT INTO jobs (type, payload, priority, status, retry_count, max_retries, created_at, updated_at, run_at) "
        "SELECT 't', '{}', 0, 'completed', 0, 3, now(), now(), now() FROM generate_series(1, 5000)"
    )
    repo.create("t")
    db.execute_sql("ANALYZE jobs")
    # psycopg prepares a statement run often; PostgreSQL may then plan it once for any parameters
    # (a generic plan), which can use a partial index only if the predicate is in the SQL text.
    plan = claim_plan(repo, generic=True)
    assert "SKIP LOCKED" in claim_statement(repo)[0]
    assert "jobs_pending_claim" in plan and "LockRows" in plan, plan
    assert not re.search(r"Seq Scan on jobs\b", plan), plan  # the claimed rows found by id, not by a scan


@postgres_only
@pytest.mark.parametrize("generic", [False, True], ids=["custom", "generic"])
def test_with_statistics_a_claim_reads_the_pending_index_in_order_and_touches_only_its_jobs(db, generic):
    repo = JobRepository(db)
    repo.create_many([{"type": "t", "payload": {}} for _ in range(3000)])  # a backlog, all pending
    db.execute_sql("ANALYZE jobs")
    plan = claim_plan(repo, generic=generic)
    assert "jobs_pending_claim" in plan, plan
    assert "Sort" not in plan, plan  # not every pending job sorted to find four
    assert not re.search(r"Seq Scan on jobs\b", plan), plan  # the claimed rows found by id, not by a scan


@postgres_only
def test_a_generic_plan_of_the_reap_reads_the_running_jobs_not_every_job(db, repo, clock):
    # A worker's connection plans prepared statements generically (use_generic_plans); its reap is prepared
    # once it has run five times. With "status = $1" that plan walked the primary key over every job.
    repo.create_many([{"type": "t"} for _ in range(3000)])
    db.execute_sql("UPDATE jobs SET status = 'completed'")
    repo.create("t")
    repo.claim("w")
    db.execute_sql("ANALYZE jobs")
    Job = repo.Job
    sql, params = Job.select().where(repo._stale(clock.now - timedelta(seconds=60))).order_by(Job.id).sql()
    plan = prepared_plan(repo, sql, params, generic=True)
    assert "jobs_status_updated" in plan, plan
    assert "jobs_pkey" not in plan and not re.search(r"Seq Scan on jobs\b", plan), plan
    clock.advance(120)
    assert repo.reap_stale(timedelta(seconds=60)) == 1  # and the reap still finds the stale claim


@postgres_only
def test_a_generic_plan_of_a_completion_finds_the_held_job_by_its_id_not_among_the_running_ones(db, repo, monkeypatch):
    # Statistics of a backlog say almost no job is running: "status = 'running'" then looked cheaper than the
    # id to the planner, whose plan walked every running entry of the status index (dead ones too, until
    # vacuum) to find the held jobs, at every ack. The acks compare the status as an expression no index
    # covers (StatusField.checked), so the id's primary key is the only way in.
    repo.create_many([{"type": "t"} for _ in range(3000)])
    db.execute_sql("ANALYZE jobs")  # statistics of a backlog: no job running
    held = repo.claim_many("w", 4)
    plans = []
    original = db.execute_sql

    def spy(sql, params=None, *args, **kwargs):
        if sql.startswith(("UPDATE", "WITH")):
            # Planned (and run, rolled back) before it runs for real, while the jobs are held.
            plans.append(prepared_plan(repo, sql, params, generic=True, infer_types=True))
        return original(sql, params, *args, **kwargs)

    monkeypatch.setattr(db, "execute_sql", spy)
    # One ack and a claim (one statement); two acks and a claim (the batched acks' statement); one ack alone.
    done, claimed = repo.complete_and_claim_many([(held[0].id, held[0].attempt, None)], 1, None, worker_id="w")
    assert [job_id for job_id, _ in done] == [held[0].id] and len(claimed) == 1
    acks = [(job.id, job.attempt, None) for job in held[1:3]]
    done, claimed = repo.complete_and_claim_many(acks, 1, None, worker_id="w")
    assert sorted(job_id for job_id, _ in done) == [held[1].id, held[2].id] and len(claimed) == 1
    assert repo.complete(held[3].id, worker_id="w", attempt=held[3].attempt).status == "completed"
    assert len(plans) == 3  # PostgreSQL writes two acks and the claim as one statement too
    for plan in plans:
        assert "jobs_pkey" in plan and "jobs_status_updated" not in plan, plan


@postgres_only
def test_a_generic_plan_of_prune_reads_the_status_index_even_with_nothing_to_prune(db, repo, clock):
    # "status IN ($1, $2, $3) AND updated_at < $4" planned generically was a scan of the whole table, read
    # to its end whenever nothing was old enough.
    repo.create_many([{"type": "t"} for _ in range(3000)])
    db.execute_sql("UPDATE jobs SET status = 'completed'")
    db.execute_sql("ANALYZE jobs")
    for status in ("completed", "failed", "cancelled"):
        sql, params = repo._prunable(status, clock.now - timedelta(days=1), 1000).sql()
        plan = prepared_plan(repo, sql, params, generic=True)
        assert "jobs_status_updated" in plan and not re.search(r"Seq Scan on jobs\b", plan), plan
    clock.advance(2 * 86400)
    assert repo.prune(timedelta(days=1), batch=1000) == 3000 and repo.counts()["completed"] == 0


@postgres_only
def test_completions_are_written_before_the_claim_locks_a_job(db_url, live_repo):
    """A batch's completions and the next claim are one statement. Were the claim first, it could hold a job
    while its completions wait for a lock; with another slot doing the same the other way round, the two
    deadlock (seen under load: PostgreSQL broke it after its 1 s deadlock_timeout). Completing first, a
    statement waits only before it claims."""
    repo = live_repo
    for _ in range(2):
        repo.create("t")
    held = repo.claim_many("w", 2)
    waiting, _ = repo.create("t")
    result = []
    with psycopg.connect(db_url) as other:
        # Another claim caught holding one of the jobs this worker completes (see Statements'
        # complete_and_claim_many: a claim can lock a row its snapshot showed pending).
        other.execute("SELECT id FROM jobs WHERE id = %s FOR UPDATE", (held[0].id,))
        acks = [(job.id, job.attempt, None) for job in held]
        thread = threading.Thread(target=lambda: result.append(repo.complete_and_claim_many(acks, 2, worker_id="w")))
        thread.start()
        try:
            me = other.execute("SHOW application_name").fetchone()[0]
            blocked = (
                "SELECT count(*) FROM pg_locks JOIN pg_stat_activity USING (pid)"
                " WHERE NOT granted AND application_name = %s"
            )
            deadline = time.monotonic() + 10
            while other.execute(blocked, (me,)).fetchone()[0] == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            # Blocked on its completions, the statement has not locked the job it will claim.
            other.execute("SELECT id FROM jobs WHERE id = %s FOR UPDATE NOWAIT", (waiting.id,))
        finally:
            other.rollback()
            thread.join(10)
    done, claimed = result[0]
    assert sorted(done) == sorted((job.id, job.attempt) for job in held)
    assert [job.id for job in claimed] == [waiting.id]


@postgres_only
def test_jobs_table_is_tuned_for_churn(db):
    options = db.execute_sql("SELECT reloptions FROM pg_class WHERE oid = 'jobs'::regclass").fetchone()[0]
    assert "fillfactor=80" in options and "autovacuum_vacuum_scale_factor=0.01" in options
    definition = {index.name: index.sql for index in db.get_indexes("jobs")}["jobs_pending_claim"]
    assert "WHERE" in definition and "'pending'" in definition


@postgres_only
def test_a_version_2_database_gets_the_churn_settings_and_keeps_its_jobs(db_url):
    db = open_database(db_url)
    JobRepository(db).create("t", {"kept": True})
    db.execute_sql("UPDATE queue_meta SET value = '2' WHERE key = 'schema_version'")
    db.execute_sql("DROP INDEX jobs_pending_claim")
    db.execute_sql("ALTER TABLE jobs RESET (fillfactor)")
    db.close()

    db = open_database(db_url)
    assert schema_version(db) == SCHEMA_VERSION
    assert JobRepository(db).list()[0].payload == {"kept": True}
    assert "jobs_pending_claim" in {index.name for index in db.get_indexes("jobs")}
    options = db.execute_sql("SELECT reloptions FROM pg_class WHERE oid = 'jobs'::regclass").fetchone()[0]
    assert "fillfactor=80" in options
    db.close()


@postgres_only
@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/no_such_database_here", "no_such_database_here"),
        ("/test?bogus=1", "bogus"),
        ("/test?options=-csearch_path%3Dno_such_schema", "no schema"),
    ],
)
def test_a_url_that_cannot_be_opened_is_one_clear_line(postgres_url, path, reason):
    base = postgres_url.split("?")[0].rsplit("/", 1)[0]
    with pytest.raises(DatabaseURLError) as info:
        open_database(base + path)
    message = str(info.value)
    assert message.startswith("cannot open") and reason in message and "\n" not in message


@postgres_only
def test_a_search_path_schema_that_does_not_exist_says_to_create_it(postgres_url):
    """README, PostgreSQL: the schema must exist first. PostgreSQL's own "no schema has been selected to create
    in" named neither the schema nor what to do about it."""
    base = postgres_url.split("?")[0]
    with pytest.raises(DatabaseURLError) as info:
        open_database(base + "?options=-csearch_path%3Dno_such_schema")
    assert "CREATE SCHEMA no_such_schema" in str(info.value)


def test_postgres_url_without_psycopg_says_what_to_install(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "psycopg", None)
    with pytest.raises(DatabaseURLError) as info:
        open_database("postgresql://postgres@127.0.0.1:5432/test")
    assert "queue-core[postgres]" in str(info.value)


# --- NOTIFY / LISTEN --------------------------------------------------------------------------------


class Wakeups:
    """Counts wake-ups, and lets a test wait for the next one."""

    def __init__(self):
        self.count = 0
        self.event = threading.Event()

    def __call__(self):
        self.count += 1
        self.event.set()

    def wait(self, timeout=10.0) -> bool:
        woke = self.event.wait(timeout)
        self.event.clear()
        return woke


@pytest.fixture
def wakeups(db):
    counter = Wakeups()
    listener = listen_for_jobs(db, counter)
    assert listener.wait_listening(10)
    yield counter
    listener.stop(timeout=5)


@postgres_only
def test_whatever_makes_a_job_claimable_now_wakes_listeners(repo, clock, wakeups):
    job, _ = repo.create("t", max_retries=1, retry_backoff=0)
    assert wakeups.wait()
    repo.claim("w")
    repo.release(job.id, worker_id="w")  # a stopping worker's job
    assert wakeups.wait()
    repo.claim("w")
    repo.fail(job.id, "boom")  # retried at once (retry_backoff=0)
    assert wakeups.wait()
    repo.claim("w")
    repo.fail(job.id, "boom again")  # no retries left: failed, nothing to claim
    assert not wakeups.wait(0.3)
    repo.retry(job.id)  # the operator's retry
    assert wakeups.wait()
    repo.claim("w")
    clock.advance(600)
    assert repo.reap_stale(timedelta(seconds=60)) == 1  # a dead worker's job
    assert wakeups.wait()


@postgres_only
@pytest.mark.parametrize(
    "specs",
    [
        [{"type": "t"}] * 3,  # every column shared: no array, the rows counted by generate_series
        [{"type": "t", "payload": {"n": n}} for n in range(3)],  # a column that varies: unpacked from JSON
    ],
    ids=["alike", "varying"],
)
def test_create_many_wakes_listeners_at_commit(db, repo, wakeups, specs):
    with db.atomic():
        repo.create_many(specs)
        assert not wakeups.wait(0.3)  # the NOTIFY rides in the INSERT: delivered with its commit
    assert wakeups.wait()
    repo.create_many([{"type": "t", "idempotency_key": "k"}])
    assert wakeups.wait()
    repo.create_many([{"type": "t", "idempotency_key": "k"}])  # nothing new: nothing to wake for
    assert not wakeups.wait(0.3)


@postgres_only
def test_a_queue_in_another_schema_does_not_wake_this_one(db, repo, wakeups):
    db.execute_sql("SELECT pg_notify(%s, 'some_other_queue')", (JOBS_CHANNEL,))
    assert not wakeups.wait(0.3)
    repo.create("t")
    assert wakeups.wait()


@postgres_only
def test_a_notification_is_sent_at_commit_not_before(db, repo, wakeups):
    with db.atomic():
        repo.create("t")
        assert not wakeups.wait(0.3)  # not visible to claimers yet, so nobody is woken yet
    assert wakeups.wait()


@postgres_only
def test_listener_reconnects_after_losing_its_connection(db, repo, monkeypatch):
    # Its own listener, named: the other test processes' listeners (every worker's, on this server) are not
    # this test's to terminate, and their own reconnections would satisfy its wait.
    name = f"listener-test-{os.getpid()}-{time.monotonic_ns()}"
    monkeypatch.setitem(db.connect_params, "application_name", name)
    wakeups = Wakeups()
    listener = listen_for_jobs(db, wakeups)
    assert listener.wait_listening(10)

    def listening_pids():
        rows = db.execute_sql(
            "SELECT pid FROM pg_stat_activity WHERE query = %s AND application_name = %s",
            (f"LISTEN {JOBS_CHANNEL}", name),
        )
        return {pid for (pid,) in rows.fetchall()}

    try:
        old = listening_pids()
        assert old
        db.execute_sql("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", (list(old),))
        deadline = time.monotonic() + 15
        while not (listening_pids() - old) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert listening_pids() - old, "the listener did not LISTEN again"
        repo.create("t")
        assert wakeups.wait()
    finally:
        listener.stop(timeout=5)


@postgres_only
def test_a_listener_says_once_in_one_line_that_it_lost_its_connection_and_once_that_it_is_back(
    db, repo, monkeypatch, caplog
):
    # Regression: with the database away, it logged a three-line warning at every try, every second.
    monkeypatch.setattr(notify, "RECONNECT_DELAY", 0.01)
    connect, serve, calls = psycopg.connect, notify.JobListener._serve, itertools.count()
    refused = 'connection to server at "127.0.0.1", port 5432 failed: Connection refused\n\tIs the server running?'

    def connecting(*args, **kwargs):  # the first connection works; the three tries after its loss are refused
        if 1 <= next(calls) <= 3:
            raise psycopg.OperationalError(refused)
        return connect(*args, **kwargs)

    def serving(self, conn, schema):  # the first connection is lost at once, the next one serves
        if not getattr(self, "dropped", False):
            self.dropped = True
            raise psycopg.OperationalError("server closed the connection unexpectedly\n\tThis probably means ...")
        return serve(self, conn, schema)

    monkeypatch.setattr(psycopg, "connect", connecting)
    monkeypatch.setattr(notify.JobListener, "_serve", serving)
    caplog.set_level(logging.DEBUG, logger=notify.__name__)
    counter = Wakeups()
    listener = listen_for_jobs(db, counter)
    try:
        deadline = time.monotonic() + 15
        while "job listener is listening again" not in caplog.messages and time.monotonic() < deadline:
            time.sleep(0.02)
        records = [r for r in caplog.records if r.name == notify.__name__]
        said = [(r.levelname, r.getMessage()) for r in records]
        assert [level for level, _ in said] == ["WARNING", "DEBUG", "DEBUG", "DEBUG", "INFO"], said
        assert said[0][1] == (
            "job listener lost its connection (server closed the connection unexpectedly); polling covers until "
            "it is back"
        )
        assert all("\n" not in message for _, message in said) and "Connection refused" in said[1][1]
        repo.create("t")
        assert counter.wait()  # listening again, on its fifth connection
    finally:
        listener.stop(timeout=5)


def test_a_listener_waits_longer_between_tries_while_the_database_stays_away():
    delays = [notify.RECONNECT_DELAY]
    for _ in range(6):
        delays.append(notify.next_reconnect_delay(delays[-1]))
    assert delays == [1.0, 2.0, 4.0, 5.0, 5.0, 5.0, 5.0]


@postgres_only
def test_an_idle_listener_reads_its_connection_only_when_something_arrives_and_stops_at_once(db, repo, monkeypatch):
    """It waited in notifies(timeout=0.2) before: five reads a second while idle, and every worker's stop
    waited up to 0.2 s for the thread to look. Now it waits on its socket and a bell that stop() rings."""
    empty_reads = []  # reads that brought nothing: the idle wake-ups (other tests' notifications bring some)
    notifies = psycopg.Connection.notifies

    def counted(self, **kwargs):
        got = list(notifies(self, **kwargs))
        if not got:
            empty_reads.append(kwargs)
        yield from got

    monkeypatch.setattr(psycopg.Connection, "notifies", counted)
    counter = Wakeups()
    listener = listen_for_jobs(db, counter)
    assert listener.wait_listening(10)
    time.sleep(1.0)  # idle for this schema
    assert len(empty_reads) <= 2, empty_reads  # the first look, at what came with LISTEN's reply (and a spare)
    repo.create("t")
    assert counter.wait()
    listener.stop(timeout=5)
    assert not listener.is_alive()
    listener.stop(timeout=5)  # a second stop is harmless


@postgres_only
def test_heartbeats_are_hot_updates_that_touch_no_index(db, repo, clock):
    def hot_and_all_updates():
        db.execute_sql("SELECT pg_stat_force_next_flush()")
        row = db.execute_sql(
            "SELECT n_tup_hot_upd, n_tup_upd FROM pg_stat_user_tables WHERE relid = 'jobs'::regclass"
        ).fetchone()
        return row[0] or 0, row[1] or 0

    job, _ = repo.create("t")
    repo.claim("w")
    hot_before, updates_before = hot_and_all_updates()
    for _ in range(20):
        clock.advance(1)
        repo.heartbeat([job.id], worker_id="w")
    hot_after, updates_after = hot_and_all_updates()
    assert updates_after - updates_before == 20
    assert hot_after - hot_before == 20  # fillfactor leaves room, and heartbeat_at is in no index


def test_errors_never_show_the_password():
    with pytest.raises(DatabaseURLError) as info:
        open_database("postgresql://queue:s3cret@127.0.0.1:1/queue")
    assert "s3cret" not in str(info.value) and "queue:***@127.0.0.1:1/queue" in str(info.value)


@postgres_only
@pytest.mark.parametrize("in_transaction", [False, True], ids=["alone", "in-a-transaction"])
def test_a_create_that_loses_the_race_for_its_key_returns_the_winners_job(db_url, repo, in_transaction):
    """Two creates of one key at once: the one whose INSERT waited on the other's uncommitted row returns
    that job with created=False, also inside the application's own transaction (transactional enqueue),
    which its failed INSERT must not abort."""
    winner_db = open_database(db_url)
    outcome = []

    def create():
        try:
            if in_transaction:
                with repo.db.atomic():
                    outcome.append(repo.create("t", {"n": 1}, idempotency_key="k"))
                    repo.create("after", {})  # the transaction goes on
            else:
                outcome.append(repo.create("t", {"n": 1}, idempotency_key="k"))
        except Exception as exc:  # the assertion below shows it
            outcome.append(exc)

    try:
        with winner_db.atomic():
            winner, _ = JobRepository(winner_db).create("t", {"n": 1}, idempotency_key="k")
            thread = threading.Thread(target=create)
            thread.start()
            with psycopg.connect(db_url, autocommit=True) as watcher:
                me = watcher.execute("SHOW application_name").fetchone()[0]
                blocked = (
                    "SELECT count(*) FROM pg_locks JOIN pg_stat_activity USING (pid)"
                    " WHERE NOT granted AND application_name = %s"
                )
                deadline = time.monotonic() + 10
                while watcher.execute(blocked, (me,)).fetchone()[0] == 0 and time.monotonic() < deadline:
                    time.sleep(0.01)
        thread.join(10)
    finally:
        winner_db.close()
    assert len(outcome) == 1 and not isinstance(outcome[0], Exception), outcome
    job, created = outcome[0]
    assert (job.id, created) == (winner.id, False)
    assert repo.counts()["pending"] == (2 if in_transaction else 1)  # the winner's job, and "after"


@pytest.mark.backends("postgresql")
@pytest.mark.parametrize(("asked", "expected"), [(None, "10"), ("3", "3")])
def test_a_connection_gives_up_on_a_silent_server_after_connect_timeout(db_url, asked, expected):
    """libpq waits for ever, psycopg 130 s, for a server that does not answer: a stopping worker's reconnect to a
    hung host held its exit that long. 10 s unless the URL's ``connect_timeout`` says otherwise. (The test's own
    schema: an open of the server's database itself would make the queue's tables in its public schema.)"""
    url = db_url if asked is None else db_url + "&connect_timeout=3"
    db = open_database(url)
    try:
        dsn = dict(part.split("=", 1) for part in db.connection().info.dsn.split())
        assert dsn["connect_timeout"] == expected
    finally:
        db.close()
