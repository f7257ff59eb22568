"""Ctrl-C in a program that runs ``Worker.run()`` itself (README, the embedded API): the first stops the worker
gracefully, a second releases its running jobs now, and the program gets one KeyboardInterrupt once the stop
is done, as ``python -m queue_core.worker`` does with SIGINT.

Real SIGINTs, aimed at the main thread as a terminal's Ctrl-C reaches a program (it runs the handlers)."""

from __future__ import annotations

import signal
import threading

import pytest
from worker_support import WAIT

MAIN = threading.main_thread()


def press_ctrl_c() -> None:
    signal.pthread_kill(MAIN.ident, signal.SIGINT)


@pytest.fixture(autouse=True)
def ctrl_c_raises():
    """Ctrl-C as Python sets it up: SIGINT raises KeyboardInterrupt (a test run started in the background by a
    shell may have inherited SIGINT ignored)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_second_ctrl_c_while_run_stops_releases_the_running_jobs(live_repo, handlers, events, make_worker):
    # The second KeyboardInterrupt landed in the middle of the stop: the job stayed running, its claim
    # heartbeaten for as long as the process lived, the worker could not be stopped again (stop() returned at
    # once) and the program saw a KeyboardInterrupt raised while handling another, from deep in the worker.
    done = threading.Event()

    def job(payload):
        press_ctrl_c()  # the first, while this job runs: it may finish within the shutdown timeout
        assert worker._session.stopping.wait(WAIT)
        press_ctrl_c()  # the second, while the run waits for it: release it now
        done.wait(WAIT)

    handlers.register("t", job)
    running, _ = live_repo.create("t", max_retries=0)
    later, _ = live_repo.create("t")
    worker = make_worker(shutdown_timeout=WAIT * 3)
    try:
        with pytest.raises(KeyboardInterrupt) as raised:
            worker.run()
    finally:
        done.set()
    assert raised.value.__context__ is None  # one KeyboardInterrupt, not one raised while handling another
    after = live_repo.find_by_id(running.id)
    assert (after.status, after.retry_count, after.worker_id) == ("pending", 0, None)
    assert live_repo.find_by_id(later.id).status == "pending"  # no claim after the first Ctrl-C
    [released] = events.of("released")
    assert released.job_id == running.id and "released by a second stop request" in released.message
    assert not worker.is_running
    assert {w.id: w.state for w in live_repo.workers()} == {"w1": "stopped"}
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the program's Ctrl-C is its own again


def test_a_first_ctrl_c_lets_the_running_jobs_finish_then_raises(live_repo, handlers, events, make_worker):
    def job(payload):
        press_ctrl_c()
        assert worker._session.stopping.wait(WAIT)  # and then it ends, the stop under way

    handlers.register("t", job)
    running, _ = live_repo.create("t")
    later, _ = live_repo.create("t")
    worker = make_worker(shutdown_timeout=WAIT * 3)
    with pytest.raises(KeyboardInterrupt):
        worker.run()
    assert live_repo.find_by_id(running.id).status == "completed"
    assert live_repo.find_by_id(later.id).status == "pending"
    assert "released" not in events.kinds()


def test_a_ctrl_c_while_the_run_starts_stops_it_before_any_claim(live_repo, handlers, events, make_worker):
    # Raised in the middle of the start, it left a run that had begun (is_running) with none of its threads,
    # which no stop() could end.
    handlers.register("t", lambda payload: None)
    job, _ = live_repo.create("t")
    worker = make_worker()
    worker.subscribe(lambda _event: signal.raise_signal(signal.SIGINT), ["started"])  # on this thread, now
    with pytest.raises(KeyboardInterrupt):
        worker.run()
    assert not worker.is_running
    assert live_repo.find_by_id(job.id).status == "pending"
    assert "claimed" not in events.kinds()
    assert {w.id: w.state for w in live_repo.workers()} == {"w1": "stopped"}


def test_a_programs_own_ctrl_c_handler_is_left_alone(live_repo, handlers, make_worker):
    seen = []

    def own(signum, frame):
        seen.append(signum)

    handlers.register("t", lambda payload: seen.append(signal.getsignal(signal.SIGINT)))
    live_repo.create("t")
    signal.signal(signal.SIGINT, own)
    make_worker().run(burst=True)
    assert seen == [own] and signal.getsignal(signal.SIGINT) is own


class Stoppable:
    """What of a worker a stop signal's handler uses, recording the stops it asks for."""

    shutdown_timeout = 120.0
    is_running = True

    def __init__(self):
        self.stops: list[float | None] = []

    def request_stop(self, timeout=None) -> None:
        self.stops.append(timeout)


@pytest.mark.parametrize("level", ["info", "warning"])
def test_a_signal_whose_line_cannot_be_written_still_stops_the_worker(monkeypatch, level):
    # Regression (CI, under load: a worker that took a SIGINT and then a SIGTERM ran on for its whole 120 s
    # shutdown timeout): a signal's handler runs inside whatever the main thread was doing, also its write to
    # stderr; the nested write's error ("reentrant call inside BufferedWriter", which the logging module's
    # report of it raises again) left the handler before it asked for the stop, and went on up through the
    # code it had interrupted. The stop is asked first now, and a line that cannot be written is dropped.
    from queue_core.worker import signals

    def unwritable(*args, **kwargs):
        raise RuntimeError("reentrant call inside <_io.BufferedWriter name='<stderr>'>")

    monkeypatch.setattr(signals.logger, level, unwritable)
    worker = Stoppable()
    on_signal = signals.StopOnSignal(worker)
    on_signal.started()
    on_signal(signal.SIGINT, None)  # logged at info
    on_signal(signal.SIGTERM, None)  # logged at warning
    assert worker.stops == [None, 0]  # a graceful stop, then "release the running jobs now"
