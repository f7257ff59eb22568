"""Shared fixtures: a fresh database per test (never the user's queue.db) and a clock tests control."""

from __future__ import annotations

import random

import pytest
from support import FakeClock

from queue_core.db import open_database
from queue_core.repository import JobRepository


@pytest.fixture
def db_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'queue.db'}"


@pytest.fixture
def db(db_url):
    database = open_database(db_url)
    yield database
    database.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def repo(db, clock) -> JobRepository:
    return JobRepository(db, clock=clock, rng=random.Random(1234))


@pytest.fixture
def live_repo(db) -> JobRepository:
    """A repository on the real clock, for tests where real threads or processes share the database."""
    return JobRepository(db)
