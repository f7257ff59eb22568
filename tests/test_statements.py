"""queue_core.store.statements: the repository settles its backend and its clock once, when it is made."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from queue_core.errors import ValidationError
from queue_core.store.models import is_postgres
from queue_core.store.repository import JobRepository
from queue_core.store.statements import HostTime, PostgresStatements, ServerTime, SqliteStatements


def test_the_repository_picks_its_statements_and_its_time_once(db, clock):
    backend = PostgresStatements if is_postgres(db) else SqliteStatements
    with_clock = JobRepository(db, clock=clock)
    assert type(with_clock.statements) is backend and type(with_clock.time) is HostTime
    assert with_clock.now() == clock.now
    # Without a test clock PostgreSQL asks the server for the time, SQLite this host.
    assert type(JobRepository(db).time) is (ServerTime if is_postgres(db) else HostTime)


def test_a_clock_that_returns_naive_times_is_refused(db):
    repo = JobRepository(db, clock=lambda: datetime(2030, 1, 1))
    with pytest.raises(ValidationError, match="naive"):
        repo.now()
    assert JobRepository(db, clock=lambda: datetime(2030, 1, 1, tzinfo=UTC)).now().year == 2030


def test_times_are_stored_as_utc_and_read_back_aware_in_every_form_a_row_can_hold(db, repo):
    from datetime import timedelta, timezone

    field = repo.Job.created_at
    paris_summer = timezone(timedelta(hours=2))
    at = datetime(2026, 6, 1, 7, 30, 0, 5, tzinfo=UTC)
    stored = field.db_value(at.astimezone(paris_summer))  # another zone: stored as the same UTC time
    assert stored == field.db_value(at)
    if is_postgres(db):
        assert stored == datetime(2026, 6, 1, 7, 30, 0, 5)  # naive UTC, the TIMESTAMP column's type
        assert field.python_value(stored) == at and field.python_value(stored).tzinfo is UTC
        return
    assert stored == "2026-06-01 07:30:00.000005"
    # Our own form, and the forms an older or hand-written row may hold, all read as aware UTC times.
    for text, expected in [
        (stored, at),
        ("2026-06-01 07:30:00", at.replace(microsecond=0)),
        ("2026-06-01T07:30:00.000005", at),
        ("2026-06-01 09:30:00.000005+02:00", at),
        ("2026-06-01T07:30:00Z", at.replace(microsecond=0)),
    ]:
        value = field.python_value(text)
        assert (value, value.tzinfo) == (expected, UTC), text


def test_one_datetime_is_stored_in_each_backends_form_whatever_was_converted_before():
    import peewee as pw

    from queue_core.store.models import bind_models

    # A time field keeps its last conversion: the same object converted for the other backend must not
    # come back in the first one's form (text on SQLite, a naive datetime on PostgreSQL).
    sqlite_field = bind_models(pw.SqliteDatabase(None)).Job.created_at
    postgres_field = bind_models(pw.PostgresqlDatabase(None)).Job.created_at
    at = datetime(2026, 6, 1, 7, 30, 0, 5, tzinfo=UTC)
    for _ in range(2):
        assert sqlite_field.db_value(at) == "2026-06-01 07:30:00.000005"
        assert postgres_field.db_value(at) == datetime(2026, 6, 1, 7, 30, 0, 5)
    later = datetime(2026, 6, 1, 7, 30, 1, tzinfo=UTC)
    assert sqlite_field.db_value(later) == "2026-06-01 07:30:01.000000"  # another object: converted anew


@pytest.mark.backends("sqlite")
def test_a_creates_values_are_bound_as_the_compiled_statement_would_bind_them(db, clock):
    # SqliteStatements.insert binds validated_fields' values as they are, converting the times alone
    # (InsertBinder): for every kind of value a create accepts, the same parameters as the compiled
    # statement's field-by-field conversion, and the row reads back as the job returned.
    from datetime import timedelta, timezone

    from queue_core.store.specs import validated_fields
    from queue_core.store.statements import InsertBinder

    repo = JobRepository(db, clock=clock)
    statement = repo.statements.compiled.statement(repo.statements._insert_row)
    binder = InsertBinder(statement, repo.Job)
    elsewhere = datetime(2031, 2, 3, 4, 5, 6, 7, tzinfo=timezone(timedelta(hours=-5)))
    cases = [
        ("t", None, 0, 3, None, None, None, "default", None),
        ("send-invoice", {"n": 1, "s": "é", "l": [1.5, None]}, 20, 0, "key-1", elsewhere, 2.5, "mail", 30.0),
        ("t", {}, -7, 1000, None, clock.now + timedelta(hours=1), None, "q", 0.25),
    ]
    for case in cases:
        fields = validated_fields(repo.time.sql(), *case)
        assert binder.params(fields) == statement.params(fields), case
        job, created = repo.create(*case[:1], **dict(zip(CREATE_ARGS, case[1:], strict=True)))
        assert created and repo.find_by_id(job.id).__data__ == job.__data__, case
    with pytest.raises(ValueError, match="do not match"):
        binder.params({**validated_fields(repo.time.sql(), *cases[0]), "worker_id": "w"})


CREATE_ARGS = ("payload", "priority", "max_retries", "idempotency_key", "run_at", "retry_backoff", "queue", "timeout")
