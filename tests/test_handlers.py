"""The handler registry, current_job(), and the built-in demo handlers."""

from __future__ import annotations

import asyncio
import functools
import logging

import pytest

from queue_core.errors import NoCurrentJobError, QueueError, ValidationError
from queue_core.worker.handlers import (
    BUILTINS,
    DemoFailure,
    HandlerRegistry,
    call_handler,
    current_job,
    handler,
    registry,
)
from queue_core.worker.loop import Worker


def test_decorator_registers_in_the_given_registry_and_returns_the_function():
    own = HandlerRegistry(with_builtins=False)

    @handler("send-invoice", registry=own)
    def send_invoice(payload):
        return payload

    assert own.get("send-invoice") is send_invoice
    assert send_invoice({"a": 1}) == {"a": 1}
    assert own.names() == ["send-invoice"] and "send-invoice" in own
    assert own.get("nope") is None
    assert "send-invoice" not in registry


def test_builtins_are_always_in_the_default_registry():
    assert {"echo", "sleep", "fail", "flaky"} <= set(registry.names())
    assert set(HandlerRegistry().names()) == set(BUILTINS)
    assert HandlerRegistry(with_builtins=False).names() == []


def test_a_taken_name_is_an_error_unless_it_is_the_same_function_or_replace():
    own = HandlerRegistry(with_builtins=False)

    def first(payload):
        pass

    def second(payload):
        pass

    own.register("t", first)
    own.register("t", first)  # the same function again: a module imported twice
    with pytest.raises(ValidationError, match="already has handler"):
        own.register("t", second)
    assert own.get("t") is first
    own.register("t", second, replace=True)
    assert own.get("t") is second
    own.unregister("t")
    assert own.names() == []


@pytest.mark.parametrize(("name", "fn", "field"), [("", print, "type"), ("t", "not callable", "handler")])
def test_bad_registrations_name_what_to_fix(name, fn, field):
    with pytest.raises(ValidationError) as info:
        HandlerRegistry(with_builtins=False).register(name, fn)
    assert info.value.field == field


def test_current_job_inside_and_outside_a_handler(repo):
    job, _ = repo.create("t", {"x": 1})
    seen = []
    call_handler(lambda payload: seen.append((payload, current_job())), job)
    assert seen == [({"x": 1}, job)]
    with pytest.raises(NoCurrentJobError, match="only available inside a handler"):
        current_job()
    assert issubclass(NoCurrentJobError, LookupError) and issubclass(NoCurrentJobError, QueueError)


def test_current_job_is_reset_when_the_handler_raises(repo):
    job, _ = repo.create("t")

    def boom(payload):
        raise RuntimeError("x")

    with pytest.raises(RuntimeError):
        call_handler(boom, job)
    with pytest.raises(NoCurrentJobError):
        current_job()


def test_echo_logs_the_payload_with_the_job_id(repo, caplog):
    job, _ = repo.create("echo", {"hello": "wörld"})
    with caplog.at_level(logging.INFO, logger="queue_core.handlers"):
        call_handler(BUILTINS["echo"], job)
    assert f'echo job {job.id}: {{"hello": "wörld"}}' in caplog.text


def test_fail_raises_the_payload_error_or_a_default():
    with pytest.raises(DemoFailure, match=r"^card declined$"):
        BUILTINS["fail"]({"error": "card declined"})
    with pytest.raises(DemoFailure, match="on purpose"):
        BUILTINS["fail"]({})


def test_flaky_fails_with_its_probability():
    for _ in range(20):
        BUILTINS["flaky"]({"p": 0})
        with pytest.raises(DemoFailure, match="flaky"):
            BUILTINS["flaky"]({"p": 1})


@pytest.mark.parametrize(
    ("name", "payload", "message"),
    [
        ("sleep", {"seconds": -1}, "'seconds' must be from 0"),
        ("sleep", {"seconds": "ten"}, "'seconds' must be a number"),
        ("sleep", {"seconds": float("nan")}, "'seconds' must be a number"),
        ("flaky", {"p": 2}, "'p' must be from 0 to 1"),
        ("flaky", {"p": True}, "'p' must be a number"),
    ],
)
def test_demo_handlers_reject_bad_payloads_with_a_clear_message(name, payload, message):
    with pytest.raises(ValueError, match=message):
        BUILTINS[name](payload)


def test_sleep_sleeps(monkeypatch):
    clock = [100.0]
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        clock[0] += seconds

    monkeypatch.setattr("queue_core.worker.handlers.time.sleep", sleep)
    monkeypatch.setattr("queue_core.worker.handlers.time.monotonic", lambda: clock[0])
    BUILTINS["sleep"]({"seconds": 0.25})
    assert sum(slept) == pytest.approx(0.25)
    BUILTINS["sleep"]({})
    assert sum(slept) == pytest.approx(1.25)
    assert max(slept) <= 0.1 + 1e-9  # in slices, looking for a cancel request between them


# Issue 19, defect 4: these were accepted, never run, and their jobs marked completed. Generators still are
# refused; async handlers (issue 14, item 3) are accepted and awaited by the worker.
async def async_handler(payload):
    pass


def generator_handler(payload):
    yield payload


async def async_generator_handler(payload):
    yield payload


class AsyncCallable:
    async def __call__(self, payload):
        pass


@pytest.mark.parametrize(
    "fn",
    [generator_handler, async_generator_handler, functools.partial(generator_handler)],
    ids=["generator", "async generator", "partial of a generator"],
)
def test_handlers_that_would_not_run_are_refused_at_registration(fn):
    own = HandlerRegistry(with_builtins=False)
    with pytest.raises(ValidationError, match="not supported") as info:
        own.register("t", fn)
    assert info.value.field == "handler"
    with pytest.raises(ValidationError, match="not supported"):
        handler("t", registry=own)(fn)
    assert own.names() == []


class AsyncRecorder:
    def __init__(self):
        self.seen = []

    async def __call__(self, payload):
        await asyncio.sleep(0)
        self.seen.append((current_job().id, payload))


@pytest.mark.parametrize("kind", ["async def", "partial of async def", "async __call__"])
def test_async_handlers_are_accepted_and_run_by_a_worker(repo, kind):
    seen = []

    async def record(payload, tag="plain"):
        await asyncio.sleep(0)
        seen.append((current_job().id, payload, tag))

    recorder = AsyncRecorder()
    fn = {"async def": record, "partial of async def": functools.partial(record, tag="partial")}.get(kind, recorder)
    own = HandlerRegistry(with_builtins=False)
    own.register("t", fn)
    job, _ = repo.create("t", {"n": 1})
    Worker(repo, registry=own, poll_interval=0.01).run(burst=True)
    assert repo.find_by_id(job.id).status == "completed"
    assert (seen or recorder.seen)[0][:2] == (job.id, {"n": 1})


@pytest.mark.parametrize("kind", ["coroutine", "generator"])
def test_a_handler_returning_an_unawaited_coroutine_or_generator_raises_and_closes_it(repo, kind):
    # The second guard: a plain function that returns a coroutine (or generator) passes registration.
    job, _ = repo.create("t")
    returned = []

    def sneaky(payload):
        work = async_handler(payload) if kind == "coroutine" else generator_handler(payload)
        returned.append(work)
        return work

    with pytest.raises(TypeError, match=f"returned a {kind}.*not run.*async def"):
        call_handler(sneaky, job)
    frame = returned[0].cr_frame if kind == "coroutine" else returned[0].gi_frame
    assert frame is None  # closed: no "never awaited" warning, no half-run generator


def test_claim_types_are_the_sorted_names_kept_until_the_registry_changes():
    own = HandlerRegistry(with_builtins=False)
    assert own.claim_types() == ()
    own.register("b", lambda payload: None)
    own.register("a", lambda payload: None)
    first = own.claim_types()
    assert first == ("a", "b") and own.claim_types() is first  # built once, not per claim
    own.unregister("a")
    assert own.claim_types() == ("b",)  # an unregistered type is no longer claimed
    own.register("c", lambda payload: None)
    assert own.claim_types() == ("b", "c")


@pytest.mark.parametrize("returned", [None, {"a": 1}, [1], "s", 3, 2.5, True])
def test_plain_results_pass_the_unrun_work_check(returned):
    job = type("J", (), {"payload": {}})()
    assert call_handler(lambda payload: returned, job) == returned


def test_a_dict_subclass_that_is_awaitable_is_still_refused():
    class AwaitableDict(dict):
        def __await__(self):
            yield

    job = type("J", (), {"payload": {}})()
    with pytest.raises(TypeError, match="awaitable"):
        call_handler(lambda payload: AwaitableDict(), job)


def test_a_bare_handler_decorator_is_refused_rather_than_replacing_the_function():
    # `@handler` without the job type made the function handler's inner closure and registered nothing:
    # no error at import, and the jobs waited for a handler that never came.
    def send_invoice(payload): ...

    with pytest.raises(ValidationError, match=r"@handler\('send-invoice'\), not a bare @handler") as raised:
        handler(send_invoice)
    assert raised.value.field == "name"
    assert "send_invoice" not in registry and "send-invoice" not in registry


@pytest.mark.parametrize("given", [{}, "default"])
def test_a_handler_decorator_given_something_else_than_a_registry_says_so(given):
    with pytest.raises(ValidationError, match="must be a HandlerRegistry") as raised:
        handler("t", registry=given)
    assert raised.value.field == "registry"
