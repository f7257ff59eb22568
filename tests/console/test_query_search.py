"""The query line's search (a query no index serves): on its own thread, shown as it goes, never in the way
of a key; both backends."""

from __future__ import annotations

import threading

import pytest
from console_helpers import settle, wait_for

import console.query_line
from queue_core.store.search import search

pytestmark = pytest.mark.asyncio


def held_search(gate: threading.Event, started: threading.Event):
    """store.search that waits for ``gate`` after its first step: a search still going when keys are pressed."""

    def run(repo, query, **options):
        for step_number, progress in enumerate(search(repo, query, chunk=10, **options)):
            yield progress
            if step_number == 0:
                started.set()
                gate.wait(30)

    return run


@pytest.mark.backends("sqlite", "postgresql")
async def test_a_search_shows_its_first_matches_and_never_holds_up_a_key(make_app, scene, monkeypatch):
    gate, started = threading.Event(), threading.Event()
    monkeypatch.setattr(console.query_line, "search", held_search(gate, started))
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"declined", "enter")  # free text: no index serves it
        await wait_for(pilot, started.is_set, "the search's first step")
        await wait_for(pilot, lambda: "still searching" in str(app.query_one("#stats").render()), "partial label")
        await pilot.press("2")  # the search is still going: the key works all the same
        await wait_for(pilot, lambda: app.view == "queues" and app.snapshot.view == "queues", "the queues view")
        assert app.found is not None and not app.found.progress.done
        gate.set()
        await settle(pilot)
        await pilot.press("1")
        await settle(pilot)
        every = {job.id for job in scene.Job.select().where(scene.Job.error.contains("declined"))}
        shown = {job.id for status in ("pending", "running", "failed") for job in app.snapshot.rows[status]}
        live = {job_id for job_id in every if scene.find_by_id(job_id).status in ("pending", "running", "failed")}
        assert shown == live
        assert every and "every job searched" in str(app.query_one("#stats").render())


async def test_a_new_query_drops_the_old_search(make_app, scene, monkeypatch):
    gate, started = threading.Event(), threading.Event()
    monkeypatch.setattr(console.query_line, "search", held_search(gate, started))
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"declined", "enter")
        await wait_for(pilot, started.is_set, "the search's first step")
        await pilot.press("slash", "ctrl+u", *"type:send-invoice", "enter")  # an index serves this one
        gate.set()
        await settle(pilot)
        assert app.found is None and app.snapshot.query_note == ""
        assert {job.type for jobs in app.snapshot.rows.values() for job in jobs} == {"send-invoice"}


@pytest.mark.backends("sqlite", "postgresql")
async def test_the_header_leaves_out_matches_deleted_after_the_search(make_app, scene):
    """A searched query's matches are ids found once; one deleted since (here with D) is neither counted
    nor shown, and the header says so rather than keep the count the search found."""
    from console.screens.confirm import ConfirmScreen

    job, _ = scene.create("charge", {"n": 1}, max_retries=0, queue="extra")  # a second match, not failed
    scene.fail(scene.claim("w", queues=["extra"]).id, "card declined again")
    scene.retry(job.id)
    app = make_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"declined", "enter")  # free text: searched, not served by an index
        await wait_for(pilot, lambda: app.found is not None and app.found.progress.done, "the search's end")
        await settle(pilot)
        every = {job.id for job in scene.Job.select().where(scene.Job.error.contains("declined"))}
        failed = [job_id for job_id in every if scene.find_by_id(job_id).status == "failed"]
        assert failed and len(every) >= 2, "the scene has failed jobs whose error says 'declined'"
        stats = lambda: str(app.query_one("#stats").render())  # noqa: E731
        assert f"{len(every)} matches, every job searched" in stats()
        table = app.query_one("#failed")
        table.focus()
        await settle(pilot)
        gone = table.selected_job_id
        await pilot.press("D")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.press("y")
        await settle(pilot)
        assert scene.find_by_id(gone) is None
        left = len(every) - 1
        match = f"{left} match{'es' if left != 1 else ''} (1 deleted since), every job searched"
        await wait_for(pilot, lambda: match in stats(), f"the header saying {match!r}")
        assert sum(app.snapshot.counts.values()) == left
