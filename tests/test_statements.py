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
