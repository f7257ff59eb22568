"""queue_core.store.search: a query no index serves, searched newest first in steps, both backends."""

from __future__ import annotations

import itertools

import pytest
from support import sqlite_plan, statements_run

from queue_core.store.query import parse_query
from queue_core.store.search import FoundJobs, search, served_by_index


def make_jobs(repo, n, every=3):
    """``n`` jobs; every ``every``-th has "needle" in its payload. Returns the matching ids."""
    return [repo.create("t", {"note": "needle" if i % every == 0 else "hay"})[0].id for i in range(n)][::every]


def test_which_queries_an_index_serves():
    assert served_by_index(parse_query("type:a status:failed queue:q id:3"))
    assert served_by_index(parse_query(""))
    for text in ("boom", "error:x", "worker:w", "payload.k:v", "type:a boom"):
        assert not served_by_index(parse_query(text))


def test_each_step_yields_the_matches_so_far_newest_first(repo):
    matches = make_jobs(repo, 20)
    steps = list(search(repo, parse_query("needle"), chunk=5))
    assert len(steps) == 4  # 20 ids, 5 a step
    assert [step.searched for step in steps] == [5, 10, 15, 20] and steps[-1].total == 20
    assert steps[-1].ids == tuple(sorted(matches, reverse=True)) and steps[-1].done
    assert all(not step.done for step in steps[:-1])
    assert set(steps[0].ids) < set(steps[-1].ids)  # the first step already has the newest matches
    assert "every job searched" in steps[-1].text() and "still searching" in steps[0].text()


def test_a_search_stops_at_its_match_limit_or_its_time_budget(repo):
    make_jobs(repo, 30)
    [*_, full] = search(repo, parse_query("needle"), chunk=4, limit=3)
    assert len(full.ids) == 3 and full.done and "first 3 matches (the newest)" in full.text()
    assert "first 1 match (2 deleted since) (the newest)" in full.text(2)
    ticks = itertools.count(0, 1.0)  # each reading of the clock is a second later
    steps = list(search(repo, parse_query("needle"), chunk=4, budget=2.5, clock=lambda: next(ticks)))
    assert steps[-1].stopped and not steps[-1].done and steps[-1].searched < 30
    assert "stopped, searched the newest" in steps[-1].text()


def test_found_jobs_narrow_a_read_to_the_matches_by_id(repo):
    matches = make_jobs(repo, 9)
    Job = repo.Job
    [*_, last] = search(repo, parse_query("needle"))
    found = FoundJobs(parse_query("needle"), last)
    assert sorted(job.id for job in Job.select(Job.id).where(found.condition(repo))) == sorted(matches)
    assert list(Job.select().where(FoundJobs(parse_query("needle")).condition(repo))) == []  # nothing yet
    assert found.text == "needle" and FoundJobs(parse_query("x")).note() == "searching…"
    assert found.note(present=1).startswith("1 match (2 deleted since), every job searched")


def test_an_empty_table_is_searched_at_once(repo):
    [only] = list(search(repo, parse_query("needle")))
    assert only.done and only.ids == () and only.total == 0


@pytest.mark.backends("sqlite")  # EXPLAIN QUERY PLAN; PostgreSQL's planner goes by its statistics
def test_each_step_reads_its_id_range_by_primary_key_even_beside_an_indexed_term(repo):
    # Regression: with no statistics SQLite took "type = ?" (the type index) as the narrower and read every
    # job of that type for each step: 8 s a step at a million jobs instead of 14 ms.
    make_jobs(repo, 10)
    with statements_run(repo, lambda sql: "LIKE" in sql) as steps_sql:
        [*_, last] = search(repo, parse_query("type:t needle"), chunk=5)
    assert len(last.ids) == 4 and len(steps_sql) == 2
    for sql, params in steps_sql:
        plan = sqlite_plan(repo, sql, params)
        assert "PRIMARY KEY" in plan and "jobs_type" not in plan, plan
