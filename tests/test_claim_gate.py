"""An idle worker's claim looks first, through its types' own index, whether any job of its types is there.

Without the look, a claim of types with nothing to do read every pending job of other types in claim order
(66 ms at 200,000 on SQLite, holding the write lock; 60 ms of PostgreSQL's CPU), at every wake-up of an
idle worker, and every new job of any type wakes it. The look must never keep a claim from a job it would
take: the gated claim and the plain one take the same jobs whatever the types, queues, pauses and times.
PostgreSQL's plans are checked in test_postgres.py.
"""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from queue_core.store.repository import JobRepository
from queue_core.store.statements import LOOK_PAST_PAUSED

TYPES = ["a", "b", "c"]
QUEUES = ["q1", "q2", "default"]
FILTERS = [
    (["a"], None),
    (["b", "c"], None),
    (["a", "b", "c"], None),
    (["z"], None),  # a type with no jobs at all
    (["a"], ["q1"]),
    (["c"], ["q2", "default"]),
    (["a", "b"], ["q3"]),  # a queue with no jobs
    # A worker with many handlers claims with every type: a long list is hashed on PostgreSQL (type_in).
    ([*(f"unused{i}" for i in range(40)), "b", "c"], None),
    ([*(f"unused{i}" for i in range(40)), "a"], ["q1", "default"]),
]


def claimed_ids(repo: JobRepository, types, queues, *, gated: bool) -> list[int]:
    """The ids a claim of 3 takes, rolled back so that the next claim sees the same jobs."""
    with repo.db.atomic() as transaction:
        jobs = repo.statements.claim("w", 3, types, queues, gated=gated)
        transaction.rollback()
    return sorted(job.id for job in jobs)


def test_the_gated_claim_takes_what_the_plain_claim_takes(repo, clock):
    rng = random.Random(7)
    for round_ in range(6):
        for _ in range(rng.randrange(0, 12)):
            run_at = clock.now + timedelta(seconds=rng.choice([-60, -1, 0, 30, 3600]))
            repo.create(rng.choice(TYPES), queue=rng.choice(QUEUES), priority=rng.randrange(-2, 3), run_at=run_at)
        for queue in QUEUES:  # pauses change from round to round
            (repo.pause_queue if rng.random() < 0.3 else repo.resume_queue)(queue)
        for types, queues in FILTERS:
            gated = claimed_ids(repo, types, queues, gated=True)
            assert gated == claimed_ids(repo, types, queues, gated=False), (round_, types, queues)
        clock.advance(seconds=45)  # some scheduled jobs fall due
    # The rounds did claim something, and found nothing where there was nothing.
    assert claimed_ids(repo, ["a", "b", "c"], None, gated=True)
    assert claimed_ids(repo, ["z"], None, gated=True) == []


def test_the_worker_s_own_claims_are_gated_when_idle_and_not_beside_completions(repo):
    compiled = repo.statements.compiled
    job, _ = repo.create("a")
    assert repo.claim_many("w", 1, types=["a"])[0].id == job.id  # idle: no completions to carry
    repo.create("a")
    done, jobs = repo.complete_and_claim_many([(job.id, 1, None)], 1, ["a"], worker_id="w")
    assert done == [(job.id, 1)] and len(jobs) == 1
    statements = {key: compiled.cache.get(key, None) for key in compiled}
    claims = [statement.sql for key, statement in statements.items() if key[0].endswith("._claim")]
    beside = [statement.sql for key, statement in statements.items() if key[0].endswith("._complete_and_claim")]
    assert claims and all('"probe"' in sql for sql in claims), claims
    assert beside and not any('"probe"' in sql for sql in beside), beside


def vm_steps(repo: JobRepository, run) -> int:
    """How many thousand SQLite virtual machine instructions ``run()`` took: the rows a statement read, without
    a clock."""
    steps = 0

    def count():
        nonlocal steps
        steps += 1
        return 0  # go on

    connection = repo.db.connection()
    connection.set_progress_handler(count, 1000)
    try:
        run()
    finally:
        connection.set_progress_handler(None, 1000)
    return steps


@pytest.mark.backends("sqlite")
def test_on_sqlite_an_idle_claim_of_other_types_reads_next_to_nothing(repo):
    repo.create_many([{"type": "email"}] * 3000)  # pending, due, in claim order before anything else
    gated = vm_steps(repo, lambda: claimed_ids(repo, ["report"], None, gated=True))
    plain = vm_steps(repo, lambda: claimed_ids(repo, ["report"], None, gated=False))
    assert plain > 20, plain  # the plain claim read the 3,000 jobs of the other type
    assert gated <= 2, (gated, plain)  # the look read one index range, empty
    # With a job of its type after the backlog, the gated claim reads on and takes it.
    job, _ = repo.create("report")
    assert claimed_ids(repo, ["report"], None, gated=True) == [job.id]


@pytest.mark.backends("sqlite")
def test_on_sqlite_an_idle_claim_reads_none_of_its_types_jobs_scheduled_for_later(repo, clock):
    later = clock.now + timedelta(hours=1)
    repo.create("email")  # due, of the same priority: the plain claim reads on from it, through the level
    repo.create_many([{"type": "remind", "run_at": later}] * 3000)
    gated = vm_steps(repo, lambda: claimed_ids(repo, ["remind"], None, gated=True))
    plain = vm_steps(repo, lambda: claimed_ids(repo, ["remind"], None, gated=False))
    assert plain >= 10, plain  # the plain claim read the 3,000 jobs not yet due
    assert gated <= 2, (gated, plain)  # due jobs of a type are one range of the type index: empty
    clock.advance(seconds=3600)
    assert len(claimed_ids(repo, ["remind"], None, gated=True)) == 3  # once due, claimed


@pytest.mark.backends("sqlite")
@pytest.mark.parametrize("queues", [None, ["default"]], ids=["any-queue", "one-queue"])
@pytest.mark.parametrize("gated", [False, True], ids=["beside-completions", "idle"])
def test_on_sqlite_a_claim_reads_its_claim_index_in_order_whatever_the_statistics(repo, queues, gated):
    # Regression: given the type index with run_at in it (schema v9), SQLite's planner took it for the
    # narrower and sorted every due job of the type to find one, 3.9 ms a claim at 10,000 jobs instead
    # of 0.2. The claim names its index; with ANALYZE's statistics too.
    repo.create_many([{"type": "t"}] * 2000)
    repo.db.execute_sql("ANALYZE")
    statements = repo.statements
    claim = statements.compiled.statement(statements._claim, 1, 1, None if queues is None else 1, gated, False)
    values = {"worker_id": "w", "type0": "t", **({} if queues is None else {"queue0": "default"})}
    params = claim.params(statements.time.bind(values))
    plan = " / ".join(row[-1] for row in repo.db.execute_sql(f"EXPLAIN QUERY PLAN {claim.sql}", params))
    index = "jobs_pending_claim" if queues is None else "jobs_queue_claim"
    assert f"SEARCH jobs USING INDEX {index} " in plan and "TEMP B-TREE" not in plan, plan
    assert len(claimed_ids(repo, ["t"], queues, gated=gated)) == 3


def expected_ids(jobs, types, queues, paused: set, now, n: int = 3) -> list[int]:
    """The ids a claim of ``n`` should take, worked out in Python: due pending jobs of queues not paused (of
    ``types`` and ``queues`` if given), highest priority first, then soonest due, then lowest id."""
    due = [
        job
        for job in jobs
        if job.run_at <= now
        and job.queue not in paused
        and (types is None or job.type in types)
        and (queues is None or job.queue in queues)
    ]
    due.sort(key=lambda job: (-job.priority, job.run_at, job.id))
    return sorted(job.id for job in due[:n])


def test_a_claim_takes_the_due_jobs_in_claim_order_whatever_waits_at_higher_priorities(repo, clock):
    # The claim starts at the highest priority that has a due job (Statements.due_level): a level whose
    # jobs all wait for later is skipped, and nothing else may be. Held to a model of the claim order
    # with priorities, times, types, queues and pauses drawn at random, rounds apart as jobs fall due.
    rng = random.Random(11)
    jobs, paused = [], set()
    for round_ in range(8):
        for _ in range(rng.randrange(0, 14)):
            offset = rng.choice([-60, -1, 0, 20, 30, 90, 3600])
            job, _ = repo.create(
                rng.choice(TYPES),
                queue=rng.choice(QUEUES),
                priority=rng.choice([-5, -1, 0, 0, 1, 3, 100]),
                run_at=clock.now + timedelta(seconds=offset),
            )
            jobs.append(job)
        for queue in QUEUES:
            if rng.random() < 0.3:
                repo.pause_queue(queue)
                paused.add(queue)
            else:
                repo.resume_queue(queue)
                paused.discard(queue)
        for types, queues in [*FILTERS, (None, None)]:
            for gated in (True, False):
                expected = expected_ids(jobs, types, queues, paused, clock.now)
                assert claimed_ids(repo, types, queues, gated=gated) == expected, (round_, types, queues, gated)
        clock.advance(seconds=25)
    assert expected_ids(jobs, None, None, set(), clock.now)  # the rounds had due jobs to find


def test_a_claim_behind_jobs_of_higher_priorities_scheduled_for_later_takes_the_due_ones(repo, clock):
    later = clock.now + timedelta(hours=1)
    repo.create_many([{"type": "t", "priority": "critical", "run_at": later}] * 5)
    repo.create_many([{"type": "t", "priority": "high", "run_at": later + timedelta(seconds=1)}] * 5)
    low = [repo.create("t", priority="low")[0].id for _ in range(2)]
    clock.advance(1)
    medium = repo.create("t", priority="medium")[0].id
    assert [repo.claim("w").id for _ in range(3)] == [medium, *low]
    assert repo.claim("w") is None  # nothing else is due
    clock.advance(seconds=3601)
    assert [repo.claim("w").priority for _ in range(10)] == [30] * 5 + [20] * 5  # due now: critical first
    assert repo.claim("w") is None


@pytest.mark.backends("sqlite")
@pytest.mark.parametrize("gated", [False, True], ids=["beside-completions", "idle"])
def test_on_sqlite_a_claim_passes_levels_that_wait_for_later_in_one_lookup_each(repo, clock, gated):
    # Regression: the claim index holds pending jobs by priority, then run_at, and a claim read every job
    # of a higher priority scheduled for later before it reached the due ones: 2.9 ms a claim on SQLite
    # with 20,000 critical jobs due in an hour, holding the write lock.
    later = clock.now + timedelta(hours=1)
    repo.create_many([{"type": "t", "priority": "critical", "run_at": later}] * 3000)
    repo.create_many([{"type": "t", "priority": "high", "run_at": later}] * 3000)
    due, _ = repo.create("t", priority="low")
    steps = vm_steps(repo, lambda: claimed_ids(repo, ["t"], None, gated=gated))
    assert steps <= 2, steps  # without the skip: the 6,000 jobs read one by one, 30 thousand steps
    assert claimed_ids(repo, ["t"], None, gated=gated) == [due.id]
    assert claimed_ids(repo, None, None, gated=gated) == [due.id]


@pytest.mark.backends("sqlite")
@pytest.mark.parametrize(
    "types, gated",
    [(["t"], False), (["t"], True), (None, False), (None, True)],
    ids=["typed-beside-completions", "typed-idle", "any-type-beside-completions", "any-type-idle"],
)
def test_on_sqlite_a_claim_passes_a_paused_queues_backlog_without_reading_it(repo, types, gated):
    # Regression: a paused queue's pending jobs stay in the claim index, in claim order among the others,
    # and every claim of every queue skipped them one by one: 79-82 ms a claim behind 200,000 on SQLite, holding
    # the write lock, from the moment an operator paused their queue.
    repo.create_many([{"type": "t", "queue": "reports"}] * 6000)
    mail, _ = repo.create("t", queue="mail")
    default, _ = repo.create("t")
    repo.pause_queue("reports")
    steps = vm_steps(repo, lambda: claimed_ids(repo, types, None, gated=gated))
    assert steps <= 2, steps  # without the detour: the 6,000 jobs read one by one, 30 thousand steps
    assert claimed_ids(repo, types, None, gated=gated) == [mail.id, default.id]
    repo.resume_queue("reports")
    assert len(claimed_ids(repo, types, None, gated=gated)) == 3  # resumed: its jobs come first again
    assert claimed_ids(repo, types, None, gated=gated) != [mail.id, default.id]


def test_another_process_pause_reaches_this_ones_claims_within_a_second(db_url, repo, monkeypatch):
    # Which statement a claim runs is a choice of speed only (both leave paused queues out), so the look at
    # the pauses is kept for PAUSES_RECHECKED seconds; a pause made here is seen at once.
    from queue_core.store import statements as statements_module
    from queue_core.store.database import open_database

    now = [1000.0]
    monkeypatch.setattr(statements_module, "monotonic", lambda: now[0])
    other = JobRepository(open_database(db_url))  # another process's repository, on the same file
    for queue in ("reports", "mail"):
        repo.create("t", queue=queue)
    assert repo.statements.reads_past_paused() is False
    other.pause_queue("reports")
    assert repo.statements.reads_past_paused() is False  # looked within the last second
    now[0] += statements_module.PAUSES_RECHECKED
    assert repo.statements.reads_past_paused() is True
    repo.resume_queue("reports")
    assert repo.statements.reads_past_paused() is False  # resumed here: seen at once
    repo.pause_queue("mail")
    assert repo.statements.reads_past_paused() is True
    other.db.close()


def test_a_paused_queue_without_pending_jobs_leaves_every_claim_the_plain_statement(repo, clock):
    # Nothing to read past, and the queue-by-queue read costs more than the plain one: an operator's pause
    # of a queue that is empty, or holds only jobs not pending, changes no statement.
    done, _ = repo.create("t", queue="reports")
    repo.claim("w", queues=["reports"])
    repo.complete(done.id, worker_id="w")
    repo.create("t", queue="reports", run_at=clock.now)
    repo.claim("w", queues=["reports"])  # running, not pending
    repo.pause_queue("idle")
    repo.pause_queue("reports")
    assert repo.statements.reads_past_paused() is False
    job, _ = repo.create("t", queue="reports")
    repo.statements.forget_pauses()  # (a create does not; the next look, within a second, sees it)
    assert repo.statements.reads_past_paused() is True
    assert claimed_ids(repo, None, None, gated=False) == []  # either statement leaves the paused queue out
    repo.resume_queue("reports")
    assert claimed_ids(repo, None, None, gated=False) == [job.id]


@pytest.mark.backends("sqlite")
@pytest.mark.parametrize("gated", [False, True], ids=["beside-completions", "idle"])
def test_on_sqlite_a_claim_of_named_queues_reads_none_of_a_paused_ones_jobs(repo, gated):
    # Regression: a claim of named queues skipped a paused one's jobs one by one (124 ms a claim behind
    # 200,000 on SQLite, holding the write lock), and a slot of that queue claimed at every wake-up.
    repo.create_many([{"type": "t", "queue": "reports"}] * 6000)
    mail, _ = repo.create("t", queue="mail")
    repo.pause_queue("reports")
    steps = vm_steps(repo, lambda: claimed_ids(repo, ["t"], ["reports"], gated=gated))
    assert steps <= 2, steps  # its only queue is paused: nothing read (30 thousand steps before)
    assert claimed_ids(repo, ["t"], ["reports"], gated=gated) == []
    steps = vm_steps(repo, lambda: claimed_ids(repo, ["t"], ["reports", "mail"], gated=gated))
    assert steps <= 2, steps
    assert claimed_ids(repo, ["t"], ["reports", "mail"], gated=gated) == [mail.id]
    repo.resume_queue("reports")
    assert len(claimed_ids(repo, ["t"], ["reports"], gated=gated)) == 3


@pytest.mark.backends("sqlite")
@pytest.mark.parametrize("backlog", [LOOK_PAST_PAUSED - 1, LOOK_PAST_PAUSED, LOOK_PAST_PAUSED + 1, 3000])
def test_on_sqlite_an_idle_claim_finds_a_job_behind_a_paused_backlog_of_its_types(repo, clock, backlog):
    # The idle claim's look reads only the first LOOK_PAST_PAUSED + 1 due jobs of its types while a queue is
    # paused: at any size of the paused backlog, before and past that bound, it must still find a job of its
    # types in another queue, and find none where there is none.
    repo.create_many([{"type": "t", "queue": "reports"}] * backlog)
    repo.pause_queue("reports")
    repo.create("u", queue="mail")  # another type in a queue not paused: not the claim's
    assert claimed_ids(repo, ["t"], None, gated=True) == []
    assert claimed_ids(repo, ["t"], ["reports", "mail"], gated=True) == []
    clock.advance(seconds=1)
    mail, _ = repo.create("t", queue="mail")  # behind the backlog in the type index's order
    assert claimed_ids(repo, ["t"], None, gated=True) == [mail.id]
    assert claimed_ids(repo, ["t", "u"], ["reports", "mail"], gated=True) == [mail.id - 1, mail.id]
    assert claimed_ids(repo, ["t"], ["reports"], gated=True) == []
    steps = vm_steps(repo, lambda: claimed_ids(repo, ["t"], None, gated=True))
    assert steps <= 2, steps
