"""Running one attempt's handler: plain functions on the slot's thread, ``async def`` ones on an event loop.

Why a slot waits on its coroutine rather than async jobs holding no thread: ``--concurrency`` then means
one thing for both kinds (jobs running at once, each holding a slot), and an async job goes through the
same claim, heartbeat, stop and acknowledgement path as a plain one. A parked slot thread costs a few
kilobytes and no CPU; the coroutines themselves all run on one event loop thread, many at once.

Timeouts (``job.timeout`` seconds per attempt): a coroutine is cancelled at its deadline, by its event loop.
A coroutine that blocks that loop (``time.sleep`` or other blocking calls inside ``async def``) lets nothing
on it run, its own deadline included: past the deadline its slot puts a probe on the loop, and if the probe
has not run ``BLOCKED_LOOP_GRACE`` later the slot fails the attempt itself and the next coroutines go to a
new loop, the blocked one left to its handler. A plain function
cannot be stopped from outside in Python, so a job with a timeout runs its plain handler on a helper
thread the slot waits for; at the deadline the slot fails the attempt and moves on, and the helper is left
to finish on its own (its outcome discarded). Such overrunning threads are daemons, counted and reported,
and a stopping worker never waits for them.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import functools
import inspect
import threading
import time
from typing import TYPE_CHECKING

from ..errors import ValidationError
from ..results import encode_result
from .events import EventHub, exception_message
from .handlers import Handler, _current_job, call_handler

if TYPE_CHECKING:
    import asyncio  # imported where a coroutine first runs: ~30 ms of every worker's start-up otherwise


CANCEL_POLL = 0.2  # seconds between looks at a running coroutine's job for an operator's cancel request
LOOP_CLOSE_WAIT = 2.0  # seconds a stopping worker gives its event loop to cancel what still runs
# Seconds a probe put on the event loop past a coroutine's deadline has to run before the coroutine's slot takes
# the loop for blocked (its own timeout could not cancel it) and fails the attempt itself.
BLOCKED_LOOP_GRACE = 1.0


class AttemptTimedOut(Exception):
    """The attempt ran past the job's timeout; the message says so (it becomes the job's error)."""

    def __init__(self, timeout: float):
        super().__init__(f"timed out after {timeout:g}s (the job's timeout)")
        self.timeout = timeout


class AttemptCancelled(Exception):
    """An operator cancelled the job while its coroutine ran: the coroutine was cancelled."""

    def __init__(self):
        super().__init__("cancelled by an operator while running (the coroutine was cancelled)")


class ResultNotStored(Exception):
    """The handler ran to its end, but its return value cannot be stored as the job's result (not JSON, too
    big, too deep): the job fails for good, as a retry would run the handler, and what it did, again."""

    def __init__(self, why: str):
        super().__init__(f"{why}; the handler ran to its end, so the job is not retried (that would run it again)")


class HandlerExited(Exception):
    """An ``async def`` handler raised ``SystemExit``, ``KeyboardInterrupt`` or a ``CancelledError`` of its own:
    the attempt fails with its error (``attempt_error``'s, as for a plain handler), carried as an Exception that
    its event loop survives and that its slot does not take for a cancel of the job."""


def is_async_handler(fn) -> bool:
    """``async def`` functions, partials of them, and instances with an ``async def __call__``."""
    if inspect.iscoroutinefunction(fn):
        return True
    if isinstance(fn, functools.partial):
        return is_async_handler(fn.func)
    return not isinstance(fn, type) and inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004


def job_timeout(job) -> float | None:
    """The job's seconds per attempt, if it has one (a job from before schema v6 has none)."""
    timeout = getattr(job, "timeout", None)
    return None if timeout is None else float(timeout)


def attempt_error(exc: BaseException) -> str:
    """The error an attempt records: the exception's message, and for a handler's ``sys.exit(3)`` (or another
    exit that is no ``Exception``) its type too: "3" alone said nothing of what ended the attempt. So for a
    ``KeyError``, whose message is only the key's repr: ``payload["invoice"]`` left ``'invoice'``."""
    message = exception_message(exc)
    if message == type(exc).__name__:
        return message
    if isinstance(exc, Exception) and not isinstance(exc, KeyError):
        return message
    return f"{type(exc).__name__}: {message}"


class HandlerRunner:
    """Runs handlers for one worker; ``run(fn, job)`` returns what the handler returned, or raises.

    A plain handler's thread left running past its job's timeout is reported on ``events`` ("overrun"),
    at the deadline and again when the worker stops without waiting for it.
    """

    def __init__(self, events: EventHub):
        self._events = events
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._blocked: list[tuple[asyncio.AbstractEventLoop, threading.Thread]] = []  # loops left to a handler
        self._overrun: set[threading.Thread] = set()
        self._async: dict[Handler, bool] = {}  # per handler: is it async? (handlers are registered once)

    def attempt(self, fn: Handler, job) -> tuple[object, str | None, float, BaseException | None]:
        """Run one attempt: (the handler's result, the error message or None, seconds, the exception that
        failed it or None); never raises. The exception is for the failure's log line, whose traceback it is
        (``tracebacks.handler_traceback``, formatted only if someone listens for ``failed``).

        A result that cannot be stored (not JSON, too big) fails the job for good (``ResultNotStored``),
        saying why.
        """
        started = time.monotonic()
        try:
            result = self.run(fn, job)
            try:
                encode_result(result)
            except ValidationError as exc:
                raise ResultNotStored(str(exc)) from None
        except BaseException as exc:  # a handler must never take its worker thread down
            return None, attempt_error(exc), time.monotonic() - started, exc
        return result, None, time.monotonic() - started, None

    def run(self, fn: Handler, job) -> object:
        timeout = job_timeout(job)
        if self._is_async(fn):
            return self._run_async(fn, job, timeout)
        if timeout is None:
            return call_handler(fn, job)  # on this slot's thread, as always: no thread per job
        return self._run_with_deadline(fn, job, timeout)

    def _is_async(self, fn: Handler) -> bool:
        """Asked once per handler: inspect's checks showed in a busy worker's profile."""
        try:
            return self._async[fn]
        except KeyError:
            answer = self._async[fn] = is_async_handler(fn)
            return answer
        except TypeError:  # an unhashable callable (a dataclass instance, say): ask each time
            return is_async_handler(fn)

    @property
    def overrunning(self) -> list[threading.Thread]:
        """Helper threads still running a handler whose attempt timed out."""
        with self._lock:
            self._overrun = {thread for thread in self._overrun if thread.is_alive()}
            return list(self._overrun)

    def close(self) -> None:
        """Cancel the coroutines still running (their jobs were released) and stop the event loop thread;
        report the overrunning handler threads a stopping worker does not wait for."""
        overrunning = self.overrunning
        if overrunning:
            names = ", ".join(sorted(thread.name for thread in overrunning))
            message = (
                f"overrun worker={self._events.worker_id}: stopping without waiting for {len(overrunning)} "
                f"handler thread(s) still running past their timeout ({names})"
            )
            self._events.emit("overrun", message=message)
        with self._lock:
            loops = [*self._blocked, (self._loop, self._loop_thread)]
            self._loop = self._loop_thread = None
            self._blocked = []
        for loop, _ in loops:
            if loop is not None and not loop.is_closed():  # a loop left blocked may have ended since
                with contextlib.suppress(RuntimeError):  # ... or end right now
                    loop.call_soon_threadsafe(_cancel_all_then_stop, loop)
        deadline = time.monotonic() + LOOP_CLOSE_WAIT
        for _, thread in loops:
            if thread is not None:
                thread.join(max(0.0, deadline - time.monotonic()))

    # --- plain functions with a timeout --------------------------------------------------------------

    def _run_with_deadline(self, fn: Handler, job, timeout: float) -> object:
        future: concurrent.futures.Future = concurrent.futures.Future()
        context = contextvars.copy_context()

        def attempt() -> None:
            try:
                future.set_result(context.run(call_handler, fn, job))
            except BaseException as exc:  # delivered to the slot, which reports it as the attempt's error
                future.set_exception(exc)

        # A daemon: Python cannot stop a thread, so one stuck past its deadline must not hold the process.
        thread = threading.Thread(target=attempt, name=f"job-{job.id}-attempt-{job.attempt}", daemon=True)
        thread.start()
        # wait(), not result(timeout): a handler's own TimeoutError must not read as the job's timeout.
        if concurrent.futures.wait([future], timeout).done:
            return future.result()
        with self._lock:
            self._overrun.add(thread)
        note = (
            f"still running past its {timeout:g}s timeout on thread {thread.name}: the attempt is failed and "
            "the slot moves on (Python cannot stop a thread; it runs on, its outcome discarded)"
        )
        self._events.emit("overrun", job, note=note)
        raise AttemptTimedOut(timeout)

    # --- coroutines ---------------------------------------------------------------------------------

    def _run_async(self, fn: Handler, job, timeout: float | None) -> object:
        while True:
            loop = self._event_loop()
            start = _Start()
            outcome = self._await(loop, _attempt(fn, job, timeout, start), start, job, timeout)
            if outcome is not _WITHDRAWN:
                return outcome
            # Handed to a loop that another slot then found blocked, before it started: run it on the new loop.

    def _await(self, loop, coroutine, start: _Start, job, timeout: float | None) -> object:
        import asyncio

        future = asyncio.run_coroutine_threadsafe(coroutine, loop)
        # Past the deadline, a probe is put on the loop every BLOCKED_LOOP_GRACE: one that has not run by the
        # next look means the loop is blocked. A coroutine slow to finish its cancellation (an await in its
        # finally) keeps its loop running, so it is waited for, as any running coroutine is.
        look_at = None if timeout is None else time.monotonic() + timeout
        probe: threading.Event | None = None
        # wait(), not result(timeout): a handler's own TimeoutError must not read as "still running".
        while not concurrent.futures.wait([future], CANCEL_POLL).done:
            if getattr(job, "cancel_requested", False):
                future.cancel()  # cancels the task: the coroutine gets CancelledError at its await
                raise AttemptCancelled()
            if self._left_blocked(loop) and start.withdraw():
                future.cancel()  # if the loop ever runs again, the coroutine returns at once
                return _WITHDRAWN
            if look_at is None or time.monotonic() < look_at:
                continue
            if probe is not None and not probe.is_set():
                self._leave_blocked_loop(loop, job, timeout)
                future.cancel()  # if the loop ever runs again, the coroutine ends at its next await
                raise AttemptTimedOut(timeout)
            probe = threading.Event()
            loop.call_soon_threadsafe(probe.set)
            look_at = time.monotonic() + BLOCKED_LOOP_GRACE
        if future.cancelled():
            raise AttemptCancelled()  # the worker's stop cancelled it (its job was released)
        return future.result()

    def _left_blocked(self, loop: asyncio.AbstractEventLoop) -> bool:
        return any(old is loop for old, _thread in self._blocked)

    def _leave_blocked_loop(self, loop: asyncio.AbstractEventLoop, job, timeout: float) -> None:
        """The loop did not run the coroutine's own deadline: report it, and run the next ones on a new loop."""
        with self._lock:
            if self._loop is loop:
                self._blocked = [(old, thread) for old, thread in self._blocked if thread.is_alive()]
                self._blocked.append((loop, self._loop_thread))
                self._loop = self._loop_thread = None
                # If it ever runs again: it ends once its coroutines have (each cancelled by its slot or done).
                loop.call_soon_threadsafe(_stop_when_idle, loop)
        note = (
            f"still running {BLOCKED_LOOP_GRACE:g}s past its {timeout:g}s timeout, its event loop blocked (a "
            "blocking call inside an async def handler?): the attempt is failed, and the next coroutines run "
            "on a new event loop; this one is left to the handler, whose outcome is discarded"
        )
        self._events.emit("overrun", job, note=note)

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        import asyncio

        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()
                thread = threading.Thread(target=_serve, args=(loop, ready), name="async-handlers", daemon=True)
                thread.start()
                ready.wait()
                self._loop, self._loop_thread = loop, thread
            return self._loop


_WITHDRAWN = object()  # _await's answer for a coroutine its slot took back before it started


class _Start:
    """Whether a coroutine handed to a loop has started, or its slot took it back first: a slot hands its
    coroutine to the loop just as another slot finds that loop blocked, and it would wait behind the blocking
    handler (for ever, with no timeout) unless it can move to the new loop. Once started, it stays."""

    def __init__(self):
        self._lock = threading.Lock()
        self._state: str | None = None

    def begin(self) -> bool:
        """On the loop, first thing: False if the slot took the coroutine back."""
        with self._lock:
            self._state = self._state or "started"
            return self._state == "started"

    def withdraw(self) -> bool:
        """In the slot: True if the coroutine had not started, and now never will."""
        with self._lock:
            self._state = self._state or "withdrawn"
            return self._state == "withdrawn"


async def _attempt(fn: Handler, job, timeout: float | None, start: _Start) -> object:
    """The handler's coroutine with ``current_job()`` set for it (each task has its own context)."""
    import asyncio

    if not start.begin():
        return None  # its slot ran it on another loop
    _current_job.set(job)
    try:
        if timeout is None:
            return await fn(job.payload)
        try:
            async with asyncio.timeout(timeout) as scope:
                return await fn(job.payload)
        except TimeoutError:
            if scope.expired():
                raise AttemptTimedOut(timeout) from None
            raise  # the handler's own TimeoutError (an HTTP call of its own, say): its message, not ours
    except (KeyboardInterrupt, SystemExit) as exc:
        # Raised out of a task, these stop the event loop itself (asyncio re-raises them from run_forever):
        # its thread would die, and with it every coroutine on it, their slots waiting for ever.
        raise HandlerExited(attempt_error(exc)) from exc
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        if task is None or task.cancelling():
            raise  # cancelled from outside: an operator's cancel or the worker's stop (its slot says which)
        # The handler's own (it awaited a task it had cancelled, say): out of the task it read as "cancelled
        # by an operator", a cancel nobody made, and the handler's traceback was lost.
        raise HandlerExited(f"{attempt_error(exc)} (raised by the handler; the job was not cancelled)") from exc


def _serve(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
    import asyncio

    asyncio.set_event_loop(loop)
    loop.call_soon(ready.set)
    try:
        loop.run_forever()
    finally:
        loop.close()


def _stop_when_idle(loop: asyncio.AbstractEventLoop) -> None:
    """Stop ``loop`` once the tasks on it are done, cancelling none (their slots decide)."""
    import asyncio

    tasks = [task for task in asyncio.all_tasks(loop) if not task.done()]
    if not tasks:
        loop.stop()
        return
    gathered = asyncio.gather(*tasks, return_exceptions=True)
    gathered.add_done_callback(lambda _done: loop.stop())


def _cancel_all_then_stop(loop: asyncio.AbstractEventLoop) -> None:
    import asyncio

    for task in asyncio.all_tasks(loop):
        task.cancel()  # a task already done ignores it
    _stop_when_idle(loop)
