"""queue_core.store.compiled: a replayed statement is the SQL peewee builds, and its rows are peewee's objects."""

from __future__ import annotations

from datetime import timedelta

import peewee as pw
import pytest

from queue_core.store.compiled import (
    STATEMENT_CACHE_SIZE,
    CompiledStatement,
    CompiledStatements,
    RowReader,
    StatementCache,
    column_names,
)
from queue_core.validation import MAX_TYPES


def claim_query(repo, worker_id, n, types, now):
    return repo.statements.claim_query(worker_id, repo.statements.due(n, types, None, now), now)


def test_replayed_sql_and_parameters_equal_what_peewee_builds(repo, clock):
    Job = repo.Job

    def build(m, n):  # the count is part of the statement's shape (written into its SQL), not a parameter
        types = [m.text("type0", Job.type), m.text("type1", Job.type)]
        return claim_query(repo, m.text("worker_id", Job.worker_id), n, types, m.time("now", Job.run_at))

    for worker_id, n, types, now in [
        ("w1", 1, ["a", "b"], clock.now),
        ("another worker", 7, ["send-invoice", "x"], clock.now + timedelta(days=3, microseconds=5)),
    ]:
        statement = CompiledStatement(repo.db, lambda m, n=n: build(m, n))
        expected_sql, expected_params = claim_query(repo, worker_id, n, types, now).sql()
        values = {"worker_id": worker_id, "type0": types[0], "type1": types[1], "now": now}
        assert statement.sql == expected_sql
        assert statement.params(values) == expected_params


def test_replayed_claim_takes_the_same_jobs_as_the_peewee_query(repo, clock):
    for priority in (0, 20, 10, 20):
        repo.create("t", priority=priority)
    expected = [job.id for job in sorted(repo.Job.select(), key=lambda j: (-j.priority, j.id))]
    claimed = [repo.claim("w").id for _ in range(4)]
    assert claimed == expected
    assert repo.claim("w") is None


def test_rows_are_the_objects_peewee_would_build(repo, clock):
    repo.create("t", {"nested": [1, {"a": None}]}, priority=15, retry_backoff=2.5, idempotency_key="k")
    repo.claim("w")
    repo.create("u")
    Job = repo.Job
    expected = list(Job.select().order_by(Job.id))
    cursor = repo.db.execute_sql(*Job.select().order_by(Job.id).sql())
    read = RowReader(Job).models(cursor)
    assert [job.__data__ for job in read] == [job.__data__ for job in expected]
    assert [job._dirty for job in read] == [job._dirty for job in expected] == [set(), set()]
    assert read[0].payload == {"nested": [1, {"a": None}]} and read[0].claimed_at == clock.now
    assert read[1].to_dict() == expected[1].to_dict()


def test_a_reader_follows_its_cursor_columns_when_they_change(repo, clock):
    # The layout is kept between reads and compared by column names (psycopg: read from its result, as
    # bytes): another column set or order is worked out again, never read with the last one's converters.
    job, _ = repo.create("t", {"a": 1}, priority=7)
    Job = repo.Job
    reader = RowReader(Job)
    first = [(Job.id, Job.payload, Job.updated_at), (Job.updated_at, Job.priority, Job.id), (Job.payload,)]
    for columns in first * 2:
        [row] = reader.models(repo.db.execute_sql(*Job.select(*columns).sql()))
        expected = {field.name: getattr(job, field.name) for field in columns}
        assert {field.name: row.__data__[field.name] for field in columns} == expected
    cursor = repo.db.execute_sql(*Job.select(Job.id, Job.type).sql())
    assert [name.decode() if isinstance(name, bytes) else name for name in column_names(cursor)] == ["id", "type"]


def test_a_marker_folded_into_the_sql_text_is_refused(repo):
    Job = repo.Job

    def build(m):
        return Job.select().where(Job.type == pw.SQL(repr(m.text("type", Job.type))))

    with pytest.raises(RuntimeError, match="not bound parameters"):
        CompiledStatement(repo.db, build)


def test_a_marker_bound_without_its_fields_conversion_is_refused(repo):
    Job = repo.Job

    def build(m, converted):
        now = m.time("now", Job.updated_at)
        later = Job.claimed_at.to_value(now) if converted else now  # a CASE value skips the field's db_value
        claimed_at = pw.Case(None, [(Job.status == "running", Job.claimed_at)], later)
        return Job.update(updated_at=now, claimed_at=claimed_at)

    with pytest.raises(RuntimeError, match=r"\['now'\] are bound without their field's conversion"):
        CompiledStatement(repo.db, lambda m: build(m, converted=False))
    statement = CompiledStatement(repo.db, lambda m: build(m, converted=True))
    assert [name for name, _ in statement.slots if name is not None] == ["now", "now"]


def test_complete_with_and_without_fencing(repo):
    first, _ = repo.create("t")
    second, _ = repo.create("t")
    job = repo.claim("w")
    assert repo.complete(job.id, worker_id="other") is None
    assert repo.complete(job.id, worker_id="w", attempt=job.attempt + 1) is None
    done = repo.complete(job.id, worker_id="w", attempt=job.attempt)
    assert (done.id, done.status) == (first.id, "completed")
    repo.claim("w")
    assert repo.complete(second.id).status == "completed"
    assert repo.complete(second.id) is None


def test_statement_cache_keeps_at_most_its_size_dropping_the_least_recently_used():
    cache = StatementCache(3)
    built = []

    def build(key):
        built.append(key)
        return f"statement {key}"

    for key in ("a", "b", "c", "a", "d"):  # "a" is used again before "d" comes: "b" is the oldest
        assert cache.get(key, lambda key=key: build(key)) == f"statement {key}"
    assert built == ["a", "b", "c", "d"] and len(cache) == 3
    cache.get("b", lambda: build("b"))
    assert built[-1] == "b" and len(cache) == 3


def test_claims_with_ever_longer_type_lists_keep_a_bounded_number_of_statements(repo):
    # Issue 19 defect 8: each distinct len(types) compiled and kept a statement for good (a server went
    # from 74 MB to 519 MB over 100 claims).
    repo.create("t99")
    # Every length up to 130, then lengths in steps that still reach each padded size up to MAX_TYPES.
    for n in [*range(1, 131), *range(131, MAX_TYPES, 97), MAX_TYPES]:
        types = [f"t{i}" for i in range(n)]
        repo.claim("w", types=types)
        repo.claim_many("w", 2, types=types)
        repo.complete_and_claim(424242, types, worker_id="w", attempt=1)
    assert len(repo.statements.compiled) <= STATEMENT_CACHE_SIZE
    # Claim statements come in few shapes: type lists are padded to the next power of two.
    claim_shapes = {key[1] for key in repo.statements.compiled if key[0].endswith("._claim")}
    assert claim_shapes <= {2**k for k in range(MAX_TYPES.bit_length() + 1)}
    assert repo.find_by_id(1).status == "running"


def test_values_that_do_not_name_exactly_the_markers_are_refused(repo, clock):
    Job = repo.Job

    def build(m):
        now = m.time("now", Job.updated_at)
        return Job.update(updated_at=now).where(Job.id == m.integer("job_id", Job.id)).returning(Job)

    statement = CompiledStatement(repo.db, build)
    # An extra value is one the caller meant to apply and this statement would drop (an attempt it does
    # not check, say); a missing one would leave a parameter unfilled.
    for values in ({"job_id": 1, "now": clock.now, "attempt": 2}, {"job_id": 1}):
        with pytest.raises(ValueError, match=r"do not match the markers \['job_id', 'now'\]"):
            statement.execute(values)
    statement.execute({"job_id": 1, "now": clock.now})


def shaped_claim(m, type_count, *, seen):
    seen.append(type_count)
    types = m.texts("type", type_count, pw.CharField())
    return pw.Select(columns=[pw.SQL("1")]).where(pw.SQL("1").in_(types) if types else pw.SQL("1 = 1"))


def test_a_statement_is_keyed_by_its_builder_and_exactly_the_arguments_it_is_built_from(repo):
    compiled, seen = CompiledStatements(repo.db, rows_as=repo.Job), []

    def build(m, type_count):  # a local function: only to count builds here
        return shaped_claim(m, type_count, seen=seen)

    build.__qualname__ = "shaped_claim"
    first = compiled.statement(build, 2)
    assert compiled.statement(build, 2) is first and seen == [2]
    assert compiled.statement(build, 3) is not first and compiled.statement(build, None) is not first
    assert seen == [2, 3, None] and list(compiled) == [("shaped_claim", 2), ("shaped_claim", 3), ("shaped_claim", None)]
    assert first.params({"type0": "a", "type1": "b"}) == ["a", "b"]


def test_a_builder_that_could_read_what_its_key_does_not_hold_is_refused(repo):
    compiled = CompiledStatements(repo.db, rows_as=repo.Job)
    shape = [1]

    def closure(m):
        return shaped_claim(m, shape[0], seen=[])

    for builder in (closure, lambda m: shaped_claim(m, 1, seen=[])):
        with pytest.raises(TypeError, match="use a function or a method"):
            compiled.statement(builder)


def test_every_hot_path_statement_is_keyed_by_its_shape(repo):
    repo.create("t")
    repo.create("t", run_at=repo.now())
    job = repo.claim("w", types=["t", "u", "v"])
    repo.complete(job.id)
    repo.complete(job.id, worker_id="w", attempt=job.attempt)
    repo.complete_and_claim(job.id, worker_id="w", attempt=job.attempt)
    keys = set(repo.statements.compiled)
    # The claim's count is part of its shape (written into its SQL for PostgreSQL's generic plans), and
    # whether it looks first for a job of its types (an idle claim does: test_claim_gate.py), and whether it
    # reads queue by queue past a paused one (none is paused here).
    assert {key for key in keys if key[0].endswith("._claim")} == {("Statements._claim", 1, 4, None, True, False)}
    assert {key[1:] for key in keys if key[0].endswith("._complete")} == {(False, False), (True, True)}
    assert any(key[0].endswith("._complete_and_claim") and key[1:] == (None, None, False) for key in keys)
    # SQLite reads back nothing (its clock is this host's; the id is the last rowid); PostgreSQL the row its
    # server clock stamped.
    assert any(key[0].endswith(("._insert", "._insert_row")) for key in keys)


def test_kept_rows_are_reused_only_while_the_raw_row_is_unchanged(repo, clock):
    for i in range(2):
        repo.create("t", {"i": i})
    Job = repo.Job
    reader = RowReader(Job)
    query = Job.select(Job.id, Job.status, Job.updated_at).order_by(Job.id)

    def read(keep="pending"):
        return reader.named(repo.db.execute_sql(*query.sql()), keep=keep)

    before = read()
    clock.advance(5)
    repo.claim("w")  # the first job changes: status and updated_at
    after = read()
    assert after[1] is before[1]  # unchanged: the row built last time
    assert after[0] is not before[0] and (after[0].status, after[0].updated_at) == ("running", clock.now)
    assert after == reader.named(repo.db.execute_sql(*query.sql()))  # equal to a read that keeps nothing
    assert read(keep="other")[1] is not before[1]  # each name keeps its own rows
    # Other columns that happen to hold the same values: the rows kept for the old columns are not reused.
    third = repo.create("pending")[0]  # its type reads as its status does
    by_status = Job.select(Job.id, Job.status).where(Job.id == third.id)
    by_type = Job.select(Job.id, Job.type).where(Job.id == third.id)
    assert reader.named(repo.db.execute_sql(*by_status.sql()), keep="x")[0].status == "pending"
    [row] = reader.named(repo.db.execute_sql(*by_type.sql()), keep="x")
    assert row._fields == ("id", "type") and row.type == "pending"


def test_ids_bound_as_one_parameter_select_exactly_those_rows(repo):
    ids = [repo.create("t", {"i": i})[0].id for i in range(1_200)]
    Job = repo.Job
    wanted = [*ids[::3], max(ids) + 10]  # and one that does not exist
    query = Job.select(Job.id).where(repo.statements.id_in(Job.id, wanted))
    assert len(query.sql()[1]) == 1  # not one placeholder per id
    assert sorted(row[0] for row in query.tuples()) == ids[::3]
    assert list(Job.select(Job.id).where(repo.statements.id_in(Job.id, [])).tuples()) == []


def test_a_plain_value_is_bound_as_it_is_and_any_other_through_its_field(repo, clock):
    Job = repo.Job
    statement = CompiledStatement(
        repo.db,
        lambda m: (
            Job.update(priority=m.integer("priority", Job.priority), updated_at=m.time("now", Job.updated_at))
            .where(Job.worker_id == m.text("worker_id", Job.worker_id))
            .returning(Job.id)
        ),
    )
    expected = Job.update(priority=True, updated_at=clock.now).where(Job.worker_id == 7).sql()[1]
    # A bool for an integer and an int for a text column are converted as peewee converts them; the
    # time goes through its field's conversion (text on SQLite, naive UTC on PostgreSQL).
    assert statement.params({"priority": True, "now": clock.now, "worker_id": 7}) == expected
    assert statement.params({"priority": 1, "now": clock.now, "worker_id": "7"}) == expected


def test_one_object_given_to_several_markers_is_bound_as_each_field_converts_it(repo, clock):
    # A time field keeps its last conversion (a create's three times are one datetime); a field of another
    # kind converts the same object its own way.
    Job = repo.Job
    statement = CompiledStatement(
        repo.db,
        lambda m: Job.insert(
            created_at=m.time("created", Job.created_at),
            updated_at=m.time("updated", Job.updated_at),
            payload=m.of(Job.payload),
            result=m.of(Job.result),
            worker_id=m.of(Job.worker_id),
            run_at=m.time("run", Job.run_at),
            claimed_at=m.time("claimed", Job.claimed_at),
        ),
    )
    data = {"a": [1, 2]}
    later = clock.now + timedelta(seconds=1)
    values = {"created": clock.now, "updated": clock.now, "payload": data, "result": data, "worker_id": data}
    values |= {"run": later, "claimed": clock.now}
    expected = Job.insert(
        created_at=clock.now,
        updated_at=clock.now,
        payload=data,
        result=data,
        worker_id=data,  # a text column: the object's str(), not the JSON the two before it took
        run_at=later,
        claimed_at=clock.now,
    ).sql()[1]
    assert statement.params(values) == expected


def test_claim_filters_are_worked_out_once_per_pair_of_lists():
    from queue_core.store import statements

    first = statements.claim_filters(["a", "b", "c"], None)
    assert first == (4, None, {"type0": "a", "type1": "b", "type2": "c", "type3": "c"})
    assert statements.claim_filters(["a", "b", "c"], None) is first
    assert statements.claim_filters(["a", "b", "c"], ["q"]) == (4, 1, {**first[2], "queue0": "q"})
    assert statements.claim_filters(None, None) == (None, None, {})
    for i in range(statements._FILTERS.size * 2):
        statements.claim_filters([f"f{i}"], None)
    assert len(statements._FILTERS) <= statements._FILTERS.size
