"""Hypothesis over what an operator types into the console (issue 18): the enqueue form and the query line,
through real key presses. Whatever is typed, the console keeps running, says what is wrong in place, and a
refused form writes nothing; a query never writes."""

from __future__ import annotations

import asyncio
import json
import string

import pytest
from console_helpers import settle, wait_for
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from console.screens.enqueue import EnqueueScreen

SETTINGS = settings(max_examples=2, deadline=None, database=None, suppress_health_check=list(HealthCheck))
# What a keyboard types into a field: printable ASCII (space, quotes, brackets, colons...) and a few letters
# beyond it; the field, not the app, must take every one of them.
TYPED = st.text(alphabet=string.ascii_letters + string.digits + string.punctuation + " éß", max_size=24)
# Each example is a console run with real key presses (seconds each): a few examples, on SQLite only (the
# typing is the same on either backend), keep it in the normal suite.
pytestmark = pytest.mark.backends("sqlite")
PAYLOADS = TYPED | st.sampled_from(['{"a": 1}', "{}", "[1]", '{"a": ', "null", '{"x": "y"}'])


def all_rows(repo) -> list:
    return sorted(map(tuple, repo.Job.select().tuples()))


@SETTINGS
@given(entries=st.lists(st.tuples(TYPED, PAYLOADS), min_size=3, max_size=3))
def test_the_enqueue_form_takes_any_typing(make_app, scene, entries):
    async def scenario():
        app = make_app()
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            for job_type, payload in entries:
                before = all_rows(scene)
                await pilot.press("n")
                await wait_for(pilot, lambda: isinstance(app.screen, EnqueueScreen), "the form")  # keys go to it
                await pilot.press(*job_type, "tab", *payload, "enter")
                await settle(pilot)
                assert app.is_running
                if isinstance(app.screen, EnqueueScreen):  # refused: said in place, nothing written
                    assert str(app.screen.query_one("#form-error").render()).strip(), (job_type, payload)
                    assert all_rows(scene) == before, (job_type, payload)
                    await pilot.press("escape")
                    await settle(pilot)
                else:
                    added = [row for row in all_rows(scene) if row not in before]
                    assert len(added) == 1, (job_type, payload)
                    job = scene.find_by_id(added[0][0])
                    assert job.type.strip() == job_type.strip(), (job.type, job_type)
                    assert job.payload == (json.loads(payload) if payload.strip() else {}), (job.payload, payload)

    asyncio.run(scenario())


@SETTINGS
@given(queries=st.lists(TYPED, min_size=4, max_size=4))
def test_the_query_line_takes_any_typing_and_writes_nothing(make_app, scene, queries):
    async def scenario():
        app = make_app()
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            before = all_rows(scene)
            for query in queries:
                await pilot.press("slash")
                await wait_for(pilot, lambda: len(app.screen_stack) > 1, "the query line")
                await pilot.press(*query, "enter")
                await settle(pilot)
                assert app.is_running, query
                if len(app.screen_stack) > 1:  # the line refused it and stayed open: close it
                    await pilot.press("escape")
                    await settle(pilot)
            assert all_rows(scene) == before

    asyncio.run(scenario())
