"""Job handlers: the registry workers run jobs from, the job a handler is running, and demo handlers.

Only registered functions ever run: a job's type picks a handler by name from the registry, and nothing is
imported or executed because a payload or a job type says so.
"""

from __future__ import annotations

import inspect
import json
import logging
import math
import random
import threading
import time
import types
from collections.abc import Callable
from contextvars import ContextVar

from ..errors import NoCurrentJobError, ValidationError
from ..store.models import Job
from ..validation import validate_type

Handler = Callable[[dict], object]

# The name from before handlers moved into worker/: log configs and JSON log consumers filter on it.
logger = logging.getLogger("queue_core.handlers")
_current_job: ContextVar[Job] = ContextVar("queue_core_current_job")


class HandlerRegistry:
    """Job type -> handler ``fn(payload: dict)`` (a plain function or an ``async def``); what it returns, if not
    None, is stored as the job's JSON ``result``; an exception fails the attempt.

    Thread-safe. A new registry holds the built-in demo handlers unless ``with_builtins=False``.
    """

    def __init__(self, *, with_builtins: bool = True):
        self._handlers: dict[str, Handler] = {}
        self._lock = threading.Lock()
        self._claim_types: tuple[str, ...] | None = None  # names(), kept until the registry changes
        if with_builtins:
            for name, fn in BUILTINS.items():
                self.register(name, fn)

    def register(self, name: str, fn: Handler, *, replace: bool = False) -> Handler:
        """Register ``fn`` for jobs of type ``name``; a name taken by another function is an error."""
        name = validate_type(name)
        if not callable(fn):
            raise ValidationError("handler", f"must be callable, got {type(fn).__name__}")
        refused = unsupported_kind(fn)
        if refused is not None:
            # Calling it would only create a generator, never do the work: refuse it now rather than have
            # every job of this type end without running.
            raise ValidationError(
                "handler",
                f"{qualified_name(fn)} is {refused}: not supported (workers call handlers and do not "
                "iterate what they return); make it a plain function or an async def",
            )
        with self._lock:
            existing = self._handlers.get(name)
            # The same function registered again (a module imported twice, e.g. as __main__) is harmless.
            if existing is not None and not replace and not same_function(existing, fn):
                raise ValidationError(
                    "handler",
                    f"job type {name!r} already has handler {qualified_name(existing)}; "
                    "pick another name or pass replace=True",
                )
            self._handlers[name] = fn
            self._claim_types = None
        return fn

    def unregister(self, name: str) -> None:
        with self._lock:
            self._handlers.pop(name, None)
            self._claim_types = None

    def get(self, name: str) -> Handler | None:
        return self._handlers.get(name)

    def names(self) -> list[str]:
        """The job types this registry can run, sorted."""
        with self._lock:
            return sorted(self._handlers)

    def claim_types(self) -> tuple[str, ...]:
        """``names()`` as a tuple, built again only after the registry changes: a worker asks before every
        claim, and the same tuple lets the claim skip checking names it checked before."""
        types = self._claim_types
        if types is None:
            with self._lock:
                types = self._claim_types = tuple(sorted(self._handlers))
        return types

    def __contains__(self, name: object) -> bool:
        return name in self._handlers

    def __len__(self) -> int:
        return len(self._handlers)


def unsupported_kind(fn) -> str | None:
    """What kind of function ``fn`` is if calling it would not run its body (a generator), else None.

    ``async def`` handlers are run on the worker's event loop (``runner``); generators would never be.
    """
    candidates = [fn]
    if not isinstance(fn, type):  # calling a class constructs it, whatever its instances' __call__ is
        # An instance with an async __call__ is not itself a coroutine function; its bound __call__ is.
        candidates.append(getattr(fn, "__call__", None))  # noqa: B004 (inspected, not a callable() test)
    for candidate in candidates:
        if inspect.isasyncgenfunction(candidate):
            return "an async generator function"
        if inspect.isgeneratorfunction(candidate):
            return "a generator function"
    return None


def qualified_name(fn) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def same_function(a, b) -> bool:
    """Whether ``a`` and ``b`` are one function defined twice: the same qualified name, or the same qualname
    and code at the same place in the same file. A module run as a script and imported by name (``python app.py``
    whose views import ``app``) defines its functions twice, as ``__main__.f`` and ``app.f``.

    Only a ``def`` is known by its qualified name: every lambda of a module is ``<lambda>``, and a task's
    partial, callable object or bound method is named after its function or class, so two of them with one
    name were taken for one function and the second silently replaced the first. Those are the same only as
    the same object, the same code (a lambda), or the same method of the same instance.
    """
    a, b = _called(a), _called(b)
    if a is b:
        return True
    if _named_by_def(a) and _named_by_def(b) and qualified_name(a) == qualified_name(b):
        return True
    where_a, where_b = _defined_at(a), _defined_at(b)
    return where_a is not None and where_a == where_b and not _other_instances(a, b)


def _called(fn):
    """What a handler calls: a task's handler wraps its function (``functools.update_wrapper``)."""
    return getattr(fn, "__wrapped__", fn)


def _named_by_def(fn) -> bool:
    return isinstance(fn, types.FunctionType) and "<lambda>" not in fn.__qualname__


def _other_instances(a, b) -> bool:
    """Whether ``a`` and ``b`` are methods bound to two instances of one class (a module imported twice binds
    instances of two classes, one per import)."""
    self_a, self_b = getattr(a, "__self__", None), getattr(b, "__self__", None)
    return self_a is not self_b and type(self_a) is type(self_b)


def _defined_at(fn) -> tuple | None:
    """(qualname, file, code) of a function (code objects are equal for the same source at the same line);
    None for a callable that has no code of its own."""
    try:
        code = getattr(inspect.unwrap(fn), "__code__", None)  # unwrap: a task's handler wraps its function
    except ValueError:  # a __wrapped__ cycle
        return None
    if code is None:
        return None
    return getattr(fn, "__qualname__", ""), code.co_filename, code


def handler(name: str, *, registry: HandlerRegistry | None = None) -> Callable[[Handler], Handler]:
    """Decorator: ``@handler("send-invoice")`` registers the function in ``registry`` (default: the global one)."""
    if callable(name):
        # A bare @handler would replace the function with register() below and register nothing.
        raise ValidationError("name", "give the job type: @handler('send-invoice'), not a bare @handler")
    target = registry_or_default(registry)

    def register(fn: Handler) -> Handler:
        return target.register(name, fn)

    return register


def current_job() -> Job:
    """The job the calling handler is running (id, type, attempt, retry_count, ...).

    Raises ``NoCurrentJobError`` (a ``QueueError`` and a ``LookupError``) outside a running handler.
    """
    try:
        return _current_job.get()
    except LookupError:
        raise NoCurrentJobError("current_job() is only available inside a handler that a worker is running") from None


def call_handler(fn: Handler, job: Job) -> object:
    """Run ``fn(job.payload)`` with ``current_job()`` returning ``job`` for its duration; what it returned."""
    token = _current_job.set(job)
    try:
        returned = fn(job.payload)
    finally:
        _current_job.reset(token)
    _refuse_unrun_work(returned)
    return returned


# Results that are plainly not work left undone (exact types: a subclass could be awaitable).
_PLAIN_RESULTS = frozenset({type(None), dict, list, str, int, float, bool})


def _refuse_unrun_work(returned: object) -> None:
    """Raise if a handler returned work it did not do (a coroutine, a generator), after closing it.

    Registration refuses generator functions and sends ``async def`` ones to the event loop, but a plain
    function can still return one (a lambda around an ``async def``): completing that job would mark
    undone work as done.
    """
    if type(returned) in _PLAIN_RESULTS:
        return  # what handlers return almost always: nothing to inspect
    if inspect.iscoroutine(returned):
        kind = "coroutine"
    elif inspect.isgenerator(returned):
        kind = "generator"
    elif inspect.isasyncgen(returned):
        kind = "async generator"
    elif inspect.isawaitable(returned):
        kind = "awaitable"
    else:
        return
    close = getattr(returned, "close", None)
    if callable(close):
        close()  # no "coroutine was never awaited" warning, and a generator's finally blocks run now
    raise TypeError(
        f"the handler returned a {kind}, so its work was not run: declare an async handler with async def "
        "(the worker awaits those), or make it a plain function that does the work itself"
    )


# --- built-in demo handlers: for operators and developers testing by hand -------------------------


class DemoFailure(Exception):
    """Raised on purpose by the ``fail`` and ``flaky`` demo handlers."""


def _number(payload: dict, key: str, default: float, *, low: float, high: float) -> float:
    value = payload.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"payload {key!r} must be a number from {low} to {high}, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"payload {key!r} must be from {low} to {high}, got {value!r}")
    return float(value)


def echo(payload: dict) -> None:
    """Log the payload."""
    logger.info("echo job %s: %s", current_job().id, json.dumps(payload, ensure_ascii=False))


def sleep(payload: dict) -> None:
    """Sleep ``{"seconds": x}`` (default 1, at most a day): a stand-in for slow work, which stops early when
    an operator cancels its job (as a long handler should: README, "Queues, pause, cancel and workers")."""
    deadline = time.monotonic() + _number(payload, "seconds", 1.0, low=0, high=86_400)
    while (left := deadline - time.monotonic()) > 0:
        if _cancel_requested():
            return
        time.sleep(min(left, SLEEP_SLICE))


SLEEP_SLICE = 0.1  # seconds the sleep handler sleeps between looks for a cancel request


def _cancel_requested() -> bool:
    try:
        return bool(getattr(current_job(), "cancel_requested", False))
    except NoCurrentJobError:  # called as a plain function
        return False


def fail(payload: dict) -> None:
    """Always raise, with ``{"error": "msg"}`` as the message."""
    raise DemoFailure(str(payload.get("error") or "failed on purpose (the 'fail' demo handler)"))


def flaky(payload: dict) -> None:
    """Fail with probability ``{"p": 0.3}`` (default 0.3), otherwise succeed."""
    p = _number(payload, "p", 0.3, low=0, high=1)
    if random.random() < p:
        raise DemoFailure(f"flaky failure (p={p:g})")


BUILTINS: dict[str, Handler] = {"echo": echo, "sleep": sleep, "fail": fail, "flaky": flaky}

registry = HandlerRegistry()


def default_registry() -> HandlerRegistry:
    return registry


def registry_or_default(given: object) -> HandlerRegistry:
    """``given``, or the default registry for None; a ValidationError for anything that is no registry (a
    dict of handlers, say, which a worker failed on with an AttributeError)."""
    if given is None:
        return registry
    if not isinstance(given, HandlerRegistry):
        raise ValidationError(
            "registry", f"must be a HandlerRegistry (a Queue's is queue.registry), got {type(given).__name__}"
        )
    return given
