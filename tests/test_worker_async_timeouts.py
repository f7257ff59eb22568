"""Async handlers and timeouts (issue 14, items 3 and 4), on both backends."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from queue_core import Queue
from queue_core.handlers import current_job
from queue_core.worker import Worker
from queue_core.worker import runner as runner_module
from queue_core.worker.runner import HandlerRunner, is_async_handler

WAIT = 60


@pytest.fixture
def queue(live_repo, handlers) -> Queue:
    return Queue(repository=live_repo, registry=handlers)


def events_of(worker: Worker) -> list:
    seen = []
    worker.subscribe(seen.append)
    return seen


# --- async handlers -----------------------------------------------------------------------------------


def test_200_async_handlers_sleeping_half_a_second_run_at_once_on_one_worker(queue, live_repo):
    running, peak = 0, 0

    @queue.task("nap")
    async def nap(n: int) -> None:
        nonlocal running, peak
        running += 1  # one event loop thread: no lock needed
        peak = max(peak, running)
        await asyncio.sleep(0.5)
        running -= 1
        assert current_job().payload == {"n": n}

    live_repo.create_many([{"type": "nap", "payload": {"n": n}} for n in range(200)])
    started = time.monotonic()
    Worker(live_repo, registry=queue.registry, concurrency=100, poll_interval=0.01).run(burst=True)
    elapsed = time.monotonic() - started

    assert live_repo.counts()["completed"] == 200
    assert elapsed < 20, f"200 x 0.5 s took {elapsed:.1f}s: they did not run at once"
    assert peak > 20  # many coroutines in flight together, counted by --concurrency (100 slots)


def test_async_and_plain_handlers_run_side_by_side_and_concurrency_counts_coroutines(queue, live_repo):
    lock = threading.Lock()
    running, peak = 0, 0

    def enter():
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)

    def leave():
        nonlocal running
        with lock:
            running -= 1

    @queue.task("async-work")
    async def async_work():
        enter()
        await asyncio.sleep(0.2)
        leave()

    @queue.task("plain-work")
    def plain_work():
        enter()
        time.sleep(0.2)
        leave()

    for _ in range(6):
        async_work.enqueue()
        plain_work.enqueue()
    Worker(live_repo, registry=queue.registry, concurrency=3, poll_interval=0.01).run(burst=True)
    assert live_repo.counts()["completed"] == 12
    assert peak == 3  # never more jobs at once than --concurrency, whatever their kind


def test_an_async_handler_that_raises_fails_its_attempt_with_the_message(queue, live_repo):
    @queue.task("boom", max_retries=0)
    async def boom():
        await asyncio.sleep(0)
        raise RuntimeError("async boom")

    job = boom.enqueue()
    Worker(live_repo, registry=queue.registry, poll_interval=0.01).run(burst=True)
    failed = live_repo.find_by_id(job.id)
    assert (failed.status, failed.error) == ("failed", "async boom")


def test_is_async_handler_sees_partials_and_async_call():
    import functools

    async def f(payload):
        pass

    class C:
        async def __call__(self, payload):
            pass

    assert all(is_async_handler(fn) for fn in (f, functools.partial(f), C()))
    assert not is_async_handler(lambda payload: None)


# --- timeouts -------------------------------------------------------------------------------------------


def test_a_plain_handler_past_its_timeout_fails_is_retried_and_the_worker_keeps_full_concurrency(queue, live_repo):
    release = threading.Event()
    quick_done = []

    @queue.task("stuck", timeout=0.5, max_retries=1, retry_backoff=0.01)
    def stuck():
        release.wait(WAIT)  # far past its timeout: only the test lets it go

    @queue.task("quick")
    def quick(n: int):
        time.sleep(0.2)
        quick_done.append(n)

    job = stuck.enqueue()
    worker = Worker(live_repo, registry=queue.registry, concurrency=2, poll_interval=0.01, shutdown_timeout=1)
    seen = events_of(worker)
    worker.start()
    started = time.monotonic()
    try:
        deadline = time.monotonic() + WAIT
        while live_repo.find_by_id(job.id).status != "failed":
            assert time.monotonic() < deadline, "the stuck job never failed for good"
            time.sleep(0.05)
        failed = live_repo.find_by_id(job.id)
        assert failed.error == "timed out after 0.5s (the job's timeout)"
        assert failed.retry_count == 1  # retried by the usual rules, then out of retries
        assert [e.error for e in live_repo.errors_for(job.id)] == [failed.error] * 2
        # Two threads are still stuck in the handler, yet both slots serve other jobs at once.
        started = time.monotonic()
        for n in range(8):
            quick.enqueue(n=n)
        worker.wakeup()
        while len(quick_done) < 8:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert time.monotonic() - started < 0.2 * 8 * 0.75  # 2 slots, not 1 (or 0)
        while worker.stats.running:  # the last acknowledgement may still be writing
            assert time.monotonic() < deadline, "the stuck threads still count as running jobs"
            time.sleep(0.02)
        started = time.monotonic()
    finally:
        worker.stop()
        stop_took = time.monotonic() - started
        release.set()
    assert stop_took < 5  # the stop did not wait for the stuck threads
    overruns = [e for e in seen if e.kind == "overrun"]
    assert [e.job_id for e in overruns[:2]] == [job.id, job.id]
    assert "Python cannot stop a thread" in overruns[0].message
    assert "stopping without waiting for 2 handler thread(s)" in overruns[-1].message


def test_an_async_handler_past_its_timeout_is_cancelled(queue, live_repo):
    cancelled = []

    @queue.task("slow", timeout=0.3, max_retries=0)
    async def slow():
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(current_job().id)
            raise

    job = slow.enqueue()
    started = time.monotonic()
    Worker(live_repo, registry=queue.registry, poll_interval=0.01).run(burst=True)
    assert time.monotonic() - started < 10
    failed = live_repo.find_by_id(job.id)
    assert (failed.status, failed.error) == ("failed", "timed out after 0.3s (the job's timeout)")
    assert cancelled == [job.id]


def test_an_async_handler_blocking_its_event_loop_is_failed_at_its_timeout_and_the_next_run_on_a_new_loop(
    queue, live_repo, monkeypatch
):
    """``time.sleep`` inside ``async def`` blocks the loop, so its own deadline cannot fire there: the slot
    fails the attempt past the deadline, and the coroutines after it run on a new loop, not behind it."""
    monkeypatch.setattr(runner_module, "BLOCKED_LOOP_GRACE", 0.2)
    release = threading.Event()
    loops = {}

    @queue.task("blocker", timeout=0.3, max_retries=0)
    async def blocker():
        loops["blocked"] = asyncio.get_running_loop()
        release.wait(30)  # a blocking call: nothing else runs on this loop meanwhile

    @queue.task("quick", max_retries=0)
    async def quick():
        loops["next"] = asyncio.get_running_loop()
        return "done"

    blocked = blocker.enqueue()
    follow = quick.enqueue()  # one slot: claimed once the blocker's attempt is over, its loop still blocked
    worker = Worker(live_repo, registry=queue.registry, poll_interval=0.01, shutdown_timeout=1)
    seen = events_of(worker)
    thread = threading.Thread(target=worker.run, kwargs={"burst": True})
    thread.start()
    try:
        deadline = time.monotonic() + WAIT
        while live_repo.find_by_id(follow.id).status != "completed" and time.monotonic() < deadline:
            time.sleep(0.02)
        failed = live_repo.find_by_id(blocked.id)
        assert (failed.status, failed.error) == ("failed", "timed out after 0.3s (the job's timeout)")
        assert live_repo.find_by_id(follow.id).result == "done"
        assert not release.is_set() and loops["next"] is not loops["blocked"]
    finally:
        release.set()
        thread.join(WAIT)
    overruns = [event for event in seen if event.kind == "overrun"]
    assert overruns and overruns[0].job_id == blocked.id and "event loop blocked" in overruns[0].message


def test_a_coroutine_slow_to_finish_its_cancellation_is_waited_for_its_loop_not_taken_for_blocked(
    queue, live_repo, monkeypatch
):
    """An await in the cancelled coroutine's clean-up keeps its loop running: the attempt ends when the clean-up
    does, as the job's timeout, and the next coroutine runs on the same loop (no loop left behind)."""
    monkeypatch.setattr(runner_module, "BLOCKED_LOOP_GRACE", 0.2)
    loops, cleaned = [], []

    @queue.task("tidy", timeout=0.2, max_retries=0)
    async def tidy():
        loops.append(asyncio.get_running_loop())
        try:
            await asyncio.sleep(30)
        finally:
            await asyncio.sleep(1.0)  # an async clean-up, five grace periods long
            cleaned.append(True)

    @queue.task("next-one", max_retries=0)
    async def next_one():
        loops.append(asyncio.get_running_loop())

    slow, after = tidy.enqueue(), next_one.enqueue()
    worker = Worker(live_repo, registry=queue.registry, poll_interval=0.01, shutdown_timeout=5)
    seen = events_of(worker)
    worker.run(burst=True)
    assert live_repo.find_by_id(slow.id).error == "timed out after 0.2s (the job's timeout)" and cleaned == [True]
    assert live_repo.find_by_id(after.id).status == "completed"
    assert len(loops) == 2 and loops[0] is loops[1]
    assert not [event for event in seen if event.kind == "overrun"]


def test_a_handlers_own_timeout_error_is_not_reported_as_the_jobs_timeout(queue, live_repo):
    @queue.task("own", timeout=30, max_retries=0)
    async def own():
        raise TimeoutError("the mail server did not answer")

    job = own.enqueue()
    Worker(live_repo, registry=queue.registry, poll_interval=0.01).run(burst=True)
    assert live_repo.find_by_id(job.id).error == "the mail server did not answer"


def test_a_job_within_its_timeout_completes_and_the_enqueue_timeout_overrides_the_task(queue, live_repo):
    @queue.task("brief", timeout=5)
    def brief(seconds: float):
        time.sleep(seconds)

    ok = brief.enqueue(seconds=0.05)
    late = brief.enqueue(seconds=2, timeout=0.2, max_retries=0)
    assert (live_repo.find_by_id(ok.id).timeout, live_repo.find_by_id(late.id).timeout) == (5.0, 0.2)
    Worker(live_repo, registry=queue.registry, concurrency=2, poll_interval=0.01).run(burst=True)
    assert live_repo.find_by_id(ok.id).status == "completed"
    assert live_repo.find_by_id(late.id).error == "timed out after 0.2s (the job's timeout)"


def test_the_runner_without_timeout_runs_plain_handlers_on_the_calling_thread(live_repo):
    from queue_core.worker.events import EventHub

    job, _ = live_repo.create("t")
    runner = HandlerRunner(EventHub("w"))
    assert runner.run(lambda payload: threading.current_thread(), job) is threading.current_thread()
    runner.close()


def test_an_operators_cancel_cancels_the_running_coroutine(queue, live_repo):
    started = threading.Event()
    cancelled = []

    @queue.task("long")
    async def long():
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(current_job().id)
            raise

    job = long.enqueue()
    worker = Worker(live_repo, registry=queue.registry, poll_interval=0.01, stale_after=0.6)  # beats every 0.2 s
    worker.start()
    try:
        assert started.wait(WAIT)
        live_repo.cancel(job.id)
        deadline = time.monotonic() + WAIT
        while live_repo.find_by_id(job.id).status != "cancelled":
            assert time.monotonic() < deadline, "the cancel never reached the coroutine"
            time.sleep(0.05)
    finally:
        worker.stop()
    assert cancelled == [job.id]
    assert live_repo.find_by_id(job.id).retry_count == 0  # cancelled is final: not retried


def test_a_coroutine_handed_to_a_loop_just_found_blocked_runs_on_the_new_loop_not_behind_the_blocker(monkeypatch):
    """Two slots: one's coroutine blocks the loop; the other's, with no timeout of its own, is handed to that
    loop before the first slot finds it blocked. It has not started there, so its slot moves it to the new
    loop: it must not wait behind the blocking handler (for ever, had that never returned)."""
    from types import SimpleNamespace

    from queue_core.worker.events import EventHub

    monkeypatch.setattr(runner_module, "BLOCKED_LOOP_GRACE", 0.2)
    runner = HandlerRunner(EventHub("w"))
    entered, release, loops, outcomes = threading.Event(), threading.Event(), {}, {}

    async def blocker(payload):
        loops["blocked"] = asyncio.get_running_loop()
        entered.set()
        release.wait(WAIT)  # a blocking call: nothing else runs on this loop meanwhile

    async def quick(payload):
        loops["next"] = asyncio.get_running_loop()
        return "done"

    def slot(name, fn, timeout):
        job = SimpleNamespace(id=name, type=name, payload={}, timeout=timeout, cancel_requested=False)
        outcomes[name] = runner.attempt(fn, job)[:2]

    first = threading.Thread(target=slot, args=("blocker", blocker, 0.3))
    first.start()
    try:
        assert entered.wait(WAIT)
        second = threading.Thread(target=slot, args=("quick", quick, None))
        second.start()  # handed to the blocked loop: the first slot has not found it blocked yet
        second.join(WAIT)
        assert not release.is_set() and outcomes.get("quick") == ("done", None)
        assert loops["next"] is not loops["blocked"]
        first.join(WAIT)
        assert outcomes["blocker"] == (None, "timed out after 0.3s (the job's timeout)")
    finally:
        release.set()
        first.join(WAIT)
        runner.close()


@pytest.mark.parametrize("exit_with", [SystemExit(3), KeyboardInterrupt()], ids=["sys.exit", "KeyboardInterrupt"])
def test_an_async_handler_that_exits_fails_its_attempt_and_the_loop_runs_the_next_ones(
    queue, live_repo, make_worker, exit_with
):
    # SystemExit and KeyboardInterrupt raised in a task escape asyncio's event loop: the loop thread died with
    # a traceback, the attempt's slot waited for ever for an answer the dead loop never sent, and every later
    # coroutine was handed to that dead loop.
    @queue.task("quits", max_retries=0)
    async def quits():
        await asyncio.sleep(0)
        raise exit_with

    @queue.task("fine")
    async def fine():
        await asyncio.sleep(0)
        return "ok"

    quitting, after = quits.enqueue(), fine.enqueue()
    worker = make_worker()  # on the registry of the tasks above
    ended = threading.Event()
    threading.Thread(target=lambda: (worker.run(burst=True), ended.set()), daemon=True).start()
    assert ended.wait(WAIT), "the burst never ended"
    failed = live_repo.find_by_id(quitting.id)
    assert (failed.status, failed.error) == ("failed", runner_module.attempt_error(exit_with))
    assert (live_repo.find_by_id(after.id).status, live_repo.find_by_id(after.id).result) == ("completed", "ok")


def test_an_async_handlers_own_cancelled_error_fails_as_itself_not_as_an_operators_cancel(
    queue, live_repo, make_worker, events
):
    # A CancelledError the handler's own code let out (it awaited a task it had cancelled) cancelled the task,
    # and the slot read that as an operator's cancel: "cancelled by an operator while running", though nobody
    # cancelled the job, and the handler's traceback was lost.
    @queue.task("awaits-cancelled", max_retries=0)
    async def awaits_cancelled():
        inner = asyncio.ensure_future(asyncio.sleep(60))
        await asyncio.sleep(0)
        inner.cancel()
        await inner

    job = awaits_cancelled.enqueue()
    worker = make_worker()
    ended = threading.Event()
    threading.Thread(target=lambda: (worker.run(burst=True), ended.set()), daemon=True).start()
    assert ended.wait(WAIT), "the burst never ended"
    failed = live_repo.find_by_id(job.id)
    assert (failed.status, failed.error) == (
        "failed",
        "CancelledError (raised by the handler; the job was not cancelled)",
    )
    [event] = events.of("failed")
    assert "await inner" in event.traceback
