"""The task API in one import: ``Queue``, ``@queue.task``, ``Task.enqueue``, ``queue.enqueue``, ``@queue.periodic``.

Each enqueue has an awaitable twin, ``enqueue_async``, for code on an event loop: the database write runs on
a thread, so the loop goes on serving other coroutines meanwhile.

A task is a plain function registered under a job type together with its job defaults. The registration is
what workers run (``python -m queue_core.worker --handlers myapp.tasks`` imports the module, which registers
its tasks in the default handler registry), so the type name, queue and defaults have one source of truth.
``enqueue`` checks its arguments against the function's signature before anything is written: a typo fails
where it was made, not in a worker an hour later.

    queue = Queue("sqlite:///queue.db")        # or $QUEUE_DB_URL; opened on first use, not on import

    @queue.task("send-invoice", queue="mail", priority="high", max_retries=5, timeout=30)
    def send_invoice(invoice_id: int) -> dict: ...

    job = send_invoice.enqueue(invoice_id=42)  # payload {"invoice_id": 42}
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import math
import threading
import time
import types
import weakref
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timedelta
from types import MappingProxyType

from .errors import JobFailed, QueueError, ValidationError
from .job_options import JOB_OPTIONS, validate_job_options
from .rules import COMPLETED, FINAL
from .store.database import default_url, open_database, without_password
from .store.models import Job
from .store.repository import JobRepository
from .validation import validate_aware, validate_job_id
from .worker.handlers import (
    BUILTINS,
    HandlerRegistry,
    default_registry,
    qualified_name,
    registry_or_default,
    same_function,
    unsupported_kind,
)
from .worker.runner import is_async_handler
from .worker.scheduler import Schedule, Scheduler, parse_cron

# Seconds between a result's reads: the first soon (a short job is done in milliseconds), then doubling.
FIRST_RESULT_POLL = 0.02
MAX_RESULT_POLL = 1.0
# Keyword-only options of Task.enqueue: a handler parameter of one of these names could never be given.
ENQUEUE_OPTIONS = ("idempotency_key", "delay", "run_at", *JOB_OPTIONS)
# Every Queue made in this process, so a worker that imported --handlers modules finds their schedules.
_queues: weakref.WeakSet[Queue] = weakref.WeakSet()
_opening = threading.Lock()  # one Queue opens a URL's database at a time: the others share it


def registered_schedules(registry: HandlerRegistry | None = None) -> list[Schedule]:
    """The schedules of every Queue registering into ``registry`` (default: the one the worker CLI runs).

    What a worker's scheduler runs after importing its ``--handlers`` modules. A module imported twice (as
    ``__main__`` and by name) defines its schedules twice: identical ones count once, and two different
    schedules of one name are a ValidationError.
    """
    registry = default_registry() if registry is None else registry
    found: dict[str, Schedule] = {}
    for queue in list(_queues):
        if queue.registry is not registry:
            continue
        for schedule in queue.schedules:
            seen = found.setdefault(schedule.name, schedule)
            if _definition(seen) != _definition(schedule):
                raise ValidationError("name", f"two different schedules are named {schedule.name!r}")
    return sorted(found.values(), key=lambda schedule: schedule.name)


def registered_task(type: str, registry: HandlerRegistry | None = None) -> Task | None:
    """The task of job type ``type`` of a Queue registering into ``registry`` (default: the one the worker CLI
    runs), while its handler is the registered one; None if no Queue's task has that type. What the admin CLI's
    ``enqueue --handlers`` applies: the task's defaults and its signature's check of the payload."""
    registry = default_registry() if registry is None else registry
    for queue in list(_queues):
        if queue.registry is registry and (task := queue._task_of(type)) is not None:
            return task
    return None


def declared_database_url(registry: HandlerRegistry | None = None) -> str | None:
    """The URL the Queues registering into ``registry`` (default: the worker CLI's) were given, if any names
    one: where a worker of their ``--handlers`` modules started without ``--db`` or ``$QUEUE_DB_URL`` runs
    (it used ``sqlite:///queue.db``, an empty file, and did nothing). QueueError if they name different ones."""
    registry = default_registry() if registry is None else registry
    urls = sorted({queue.url for queue in list(_queues) if queue.registry is registry and queue.url is not None})
    if len(urls) > 1:
        named = ", ".join(without_password(url) for url in urls)
        raise QueueError(f"the --handlers modules' Queues name different databases ({named}); choose one with --db")
    return urls[0] if urls else None


def serve_database(url: str, registry: HandlerRegistry | None = None) -> None:
    """Point the Queues registering into ``registry`` (default: the worker CLI's) at ``url``, the database a worker
    of their ``--handlers`` modules serves (its ``--db``, ``$QUEUE_DB_URL`` or their Queue's own URL).

    A handler's ``task.enqueue`` (a job spawning jobs) and ``queue.result`` go through its module's Queue: with
    ``--db`` naming another database than that Queue (``Queue()`` reads ``$QUEUE_DB_URL``, else
    ``sqlite:///queue.db``), its jobs went to a database no worker of these tasks served, and waited there for
    ever. A Queue given a repository keeps it; one opened already is closed, to open ``url`` on its next use.
    """
    registry = default_registry() if registry is None else registry
    for queue in list(_queues):
        if queue.registry is registry and queue._owns_database and queue.url != url:
            queue.close()
            queue.url = url


def _shared_repository(url: str | None) -> JobRepository:
    """The open repository of a Queue of this process on ``url`` (None: ``$QUEUE_DB_URL``...), else one opened now.

    Queues on one URL (an application's task modules, each with its own ``Queue()``) share one database and so one
    connection per thread: each with its own, a transaction of the application that enqueued tasks of two of them
    wrote the second job on another connection, outside the transaction. On PostgreSQL that job stayed when the
    transaction rolled back; on SQLite it waited for the transaction's own write lock, then failed "database is
    locked"."""
    wanted = url or default_url()
    with _opening:
        for queue in list(_queues):
            found = queue._repository
            if found is not None and queue._owns_database and (queue.url or default_url()) == wanted:
                return found
        return JobRepository(open_database(url))


def _definition(schedule: Schedule) -> tuple:
    payload = json.dumps(schedule.payload, sort_keys=True)
    return (schedule.cron, schedule.type, payload, sorted(schedule.options.items()))


class Queue:
    """A queue's database and the tasks registered on it.

    ``url``: any URL ``open_database`` takes; None means ``$QUEUE_DB_URL``, else ``sqlite:///queue.db``. The
    database is opened on first use, so importing a module of tasks (as a worker's ``--handlers`` does)
    opens nothing. ``repository``: an open ``JobRepository`` to use instead of a URL (tests, an application
    that holds one already). ``registry``: where tasks register their handlers; the default registry is the
    one the worker CLI runs.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        registry: HandlerRegistry | None = None,
        repository: JobRepository | None = None,
    ):
        if url is not None and not isinstance(url, str):
            raise ValidationError("url", f"must be a database URL string, e.g. 'sqlite:///queue.db', got {url!r}")
        if url is not None and repository is not None:
            raise ValidationError("url", "give a URL or a repository, not both")
        if repository is not None and not isinstance(repository, JobRepository):
            # Else an AttributeError at the first enqueue, far from the mistake (an HttpQueue has no clock).
            raise ValidationError(
                "repository",
                f"must be a JobRepository, e.g. JobRepository(open_database(url)), got {type(repository).__name__}",
            )
        self.url = url
        self.registry = registry_or_default(registry)
        self.schedules: list[Schedule] = []
        self._tasks: dict[str, tuple[Task, Callable]] = {}  # type -> the task and the handler it registered
        self._repository = repository
        self._owns_database = repository is None
        self._lock = threading.Lock()
        _queues.add(self)

    def __repr__(self) -> str:
        # A repr reaches logs, tracebacks and error trackers: never with the database password.
        shown = without_password(self.url) if self.url else self.url
        return f"Queue({shown!r})" if self._owns_database else f"Queue(repository={self._repository!r})"

    @property
    def repository(self) -> JobRepository:
        """The repository, opening the database on first use: the one of another Queue of this process on the
        same URL if there is one open (see ``_shared_repository``)."""
        repository = self._repository
        if repository is None:
            with self._lock:
                if self._repository is None:
                    self._repository = _shared_repository(self.url)
                repository = self._repository
        return repository

    def close(self) -> None:
        """Close this thread's connection to the database this queue opened (it opens again on next use; the other
        Queues of its URL, which share it, reconnect on theirs); a given repository is left open."""
        with self._lock:
            if self._owns_database and self._repository is not None:
                self._repository.db.close()
                self._repository = None

    @contextlib.contextmanager
    def replace_repository(self, repository: JobRepository) -> Iterator[JobRepository]:
        """For the ``with`` block, this queue (its tasks' ``enqueue``, ``result``, ``scheduler``, and a worker given
        ``queue.repository``) uses ``repository``: a test's own database, on a clock the test moves. The queue's
        own database is neither opened nor closed by it, and is back after the block, as is ``repository`` open."""
        if not isinstance(repository, JobRepository):
            raise ValidationError(
                "repository",
                f"must be a JobRepository, e.g. JobRepository(open_database(url)), got {type(repository).__name__}",
            )
        with self._lock:
            saved = self._repository, self._owns_database
            self._repository, self._owns_database = repository, False
        try:
            yield repository
        finally:
            with self._lock:
                self._repository, self._owns_database = saved

    # --- defining tasks ---------------------------------------------------------------------------------

    def task(
        self,
        name: str,
        *,
        queue: str | None = None,
        priority: int | str | None = None,
        max_retries: int | None = None,
        timeout: float | None = None,
        retry_backoff: float | None = None,
        cron: str | None = None,
        **unknown,
    ) -> Callable[[Callable], Task]:
        """Decorator: register the function as the handler of jobs of type ``name`` with these job defaults.

        ``cron`` also enqueues it on that schedule (named ``name``, empty payload). Bad options are a
        ValidationError here, at the decorator.
        """
        if callable(name):
            raise ValidationError("name", "give the job type: @queue.task('send-invoice'), not a bare @queue.task")
        if unknown:
            known = ", ".join((*JOB_OPTIONS, "cron"))
            raise ValidationError(sorted(unknown)[0], f"unknown task option; the options are {known}")
        options = {"queue": queue, "priority": priority, "max_retries": max_retries, "timeout": timeout}
        options = validate_job_options({**options, "retry_backoff": retry_backoff})
        cron = None if cron is None else parse_cron(cron)
        return lambda fn: self._define(name, fn, options, cron=cron, payload=None)

    def periodic(
        self, cron: str, *, name: str | None = None, payload: Mapping | None = None, **options
    ) -> Callable[[Callable], Task]:
        """Decorator: a task named ``name`` (default: the function's name) enqueued at every tick of ``cron``
        (UTC) with ``payload`` as its arguments; ``options`` are job options as for ``task``."""
        if callable(cron):
            raise ValidationError(
                "cron", "give the schedule: @queue.periodic('*/5 * * * *'), not a bare @queue.periodic"
            )
        cron = parse_cron(cron)
        options = validate_job_options(options)
        return lambda fn: self._define_periodic(fn, cron, name, payload, options)

    def _define_periodic(self, fn: Callable, cron: str, name: str | None, payload, options: dict) -> Task:
        if isinstance(fn, Task) and fn._queue is self and name in (None, fn.type):
            # Stacked on a task of this queue (procrastinate's way to schedule one): that task on a schedule, as
            # its cron= would be. It made a second job type named after the function, without the task's
            # defaults, or (named like the task) replaced the task by one without them.
            scheduled = {**fn.options, **options}  # the periodic's options are its jobs', not the task's
            return self._define(fn.type, fn, dict(fn.options), cron=cron, payload=payload, scheduled=scheduled)
        return self._define(_schedule_name(fn) if name is None else name, fn, options, cron=cron, payload=payload)

    def _define(
        self, name: str, fn: Callable, options: dict, *, cron: str | None, payload: Mapping | None, scheduled=None
    ) -> Task:
        """Register ``fn`` as task ``name`` with ``options``; on ``cron`` too, its jobs with ``scheduled`` options
        (default: the task's)."""
        task = Task(self, name, fn, options)
        schedule = None
        if cron is not None:
            arguments = _schedule_arguments(task, payload)
            options = options if scheduled is None else scheduled
            schedule = Schedule(name=task.type, cron=cron, type=task.type, payload=arguments, options=options)
            if any(existing.name == schedule.name for existing in self.schedules):
                raise ValidationError("name", f"a schedule named {schedule.name!r} exists on this queue already")
        handler = _payload_handler(task.fn)
        _refuse_taken_type(self.registry, task.type, handler)
        # Registered last: a refused definition leaves no handler behind.
        self.registry.register(task.type, handler)
        self._tasks[task.type] = (task, handler)
        if schedule is not None:
            self.schedules.append(schedule)
            task.schedule = schedule
        return task

    # --- enqueuing ---------------------------------------------------------------------------------------

    def enqueue(
        self,
        type: str,
        payload: Mapping | None = None,
        *,
        idempotency_key: str | None = None,
        delay: float | timedelta | None = None,
        run_at: datetime | None = None,
        priority: int | str | None = None,
        max_retries: int | None = None,
        queue: str | None = None,
        timeout: float | None = None,
        retry_backoff: float | None = None,
    ) -> Job:
        """Enqueue a job of any type (one defined elsewhere, say); ``payload`` is its handler's payload.

        A type that is a task of this queue gets what ``task.enqueue(**payload)`` would: the task's defaults
        (its queue, priority, ...) under the options given here, and the payload checked against its
        signature. With an idempotency key already used, the job that has it is returned (nothing is
        written), or ``IdempotencyConflict`` is raised if that job has another type, queue or payload.
        """
        if isinstance(type, Task):
            raise ValidationError(
                "type",
                f"got the task {type!r}: give its job type, queue.enqueue({type.type!r}, payload), "
                f"or call {type.call_example()}",
            )
        given = {"priority": priority, "max_retries": max_retries, "queue": queue, "timeout": timeout}
        options = validate_job_options({**given, "retry_backoff": retry_backoff})
        task = self._task_of(type)
        if task is not None and isinstance(payload, Mapping | None):
            payload = task.payload_for(dict(payload or {}))
            options = {**task.options, **options}
        elif isinstance(payload, Mapping) and not isinstance(payload, dict):
            payload = dict(payload)  # any Mapping, as typed: the store encodes dicts (a UserDict was "not JSON")
        return self._create(type, payload, options, idempotency_key=idempotency_key, delay=delay, run_at=run_at)

    async def enqueue_async(self, type: str, payload: Mapping | None = None, **options) -> Job:
        """``enqueue`` for code on an event loop: the same arguments, checks and job, awaited; the database
        write runs on a thread (``asyncio.to_thread``), so the loop is not blocked while it waits."""
        return await self._off_the_loop(functools.partial(self.enqueue, type, payload, **options))

    async def _off_the_loop(self, enqueue: Callable[[], Job]) -> Job:
        """``enqueue()`` on a thread of the loop's default executor (peewee gives each thread a connection of
        its own); on this thread inside a transaction of the queue's database, so the job commits or rolls back
        with it, as ``enqueue``'s does (another thread's connection would write outside that transaction, and
        on SQLite wait for its lock until the busy timeout)."""
        repository = self._repository  # not opened yet: no transaction of this thread can be on it
        if repository is not None and repository.db.in_transaction():
            return enqueue()
        import asyncio  # here: a worker of plain handlers never loads it (its start-up time)

        return await asyncio.to_thread(enqueue)

    def _task_of(self, type) -> Task | None:
        """The task of this queue that runs jobs of ``type``, while its handler is still the registered one."""
        task, handler = self._tasks.get(type, (None, None)) if isinstance(type, str) else (None, None)
        return task if task is not None and self.registry.get(type) is handler else None

    def _create(self, type, payload, options: dict, *, idempotency_key, delay, run_at) -> Job:
        # Checked before the database is opened or asked the time: bad input touches nothing.
        delay = _validated_delay(delay, run_at)
        run_at = None if run_at is None else validate_aware("run_at", run_at)
        repository = self.repository
        if delay is not None:
            run_at = _after(repository.now(), delay)
        job, _created = repository.create(
            type,
            payload,
            idempotency_key=idempotency_key,
            run_at=run_at,
            **options,
        )
        return job

    # --- results -----------------------------------------------------------------------------------------

    def result(self, job: Job | int, *, timeout: float | None = None):
        """Wait until ``job`` (a Job or its id) has finished; its handler's return value (None if it returned
        nothing). ``JobFailed`` if it ended failed (retries used up) or cancelled, ``TimeoutError`` if it has not
        finished within ``timeout`` seconds (None: wait as long as it takes; 0: look once), QueueError if there
        is no such job (deleted, or pruned). Polls the database, quickly at first, then once a second."""
        job_id, pauses = _awaited(job, timeout)
        while (found := self._finished(job_id)) is None:
            time.sleep(next(pauses))
        return found.value

    async def result_async(self, job: Job | int, *, timeout: float | None = None):
        """``result`` for code on an event loop: each read of the job runs on a thread, and the waits between
        them are ``asyncio.sleep``, so the loop serves other coroutines meanwhile."""
        import asyncio  # here: a worker of plain handlers never loads it (its start-up time)

        job_id, pauses = _awaited(job, timeout)
        while (found := await asyncio.to_thread(self._finished, job_id)) is None:
            await asyncio.sleep(next(pauses))
        return found.value

    def _finished(self, job_id: int):
        """``_Result(value)`` of a completed job, None while it has not finished; JobFailed, or a QueueError
        when there is no such job."""
        job = self.repository.find_by_id(job_id)
        if job is None:
            # Not only "deleted": an id from another database (a Queue() on another $QUEUE_DB_URL) was never here.
            where = f" in {without_password(self.url or default_url())}" if self._owns_database else ""
            raise QueueError(
                f"there is no job {job_id}{where}: it was deleted, pruned after it finished, or never created in"
                " this database (check the Queue's URL)"
            )
        if job.status not in FINAL:
            return None
        if job.status != COMPLETED:
            raise JobFailed(job)
        return _Result(job.result)

    # --- periodic jobs ---------------------------------------------------------------------------------

    def scheduler(self, clock: Callable[[], datetime] | None = None) -> Scheduler:
        """A scheduler of this queue's schedules on its repository (opens the database)."""
        return Scheduler(self.repository, self.schedules, clock)


class Task:
    """A function registered as the handler of one job type, with its job defaults.

    Calling the task calls the function (``send_invoice(invoice_id=1)``); ``enqueue(**arguments)`` queues
    a job that a worker runs as ``fn(**arguments)``.
    """

    def __init__(self, queue: Queue, name: str, fn: Callable, options: dict):
        fn = fn.fn if isinstance(fn, Task) else fn  # stacked decorators: one function, several types
        if not callable(fn):
            raise ValidationError("handler", f"must be a function, got {type(fn).__name__}")
        # First: it copies fn's __dict__ onto the task, which must not overwrite the attributes set below.
        functools.update_wrapper(self, fn)
        self.type = name  # checked by the registry when _define registers it
        self.fn = fn
        self.options = MappingProxyType(options)
        self.schedule: Schedule | None = None
        self._queue = queue
        self._signature = _handler_signature(fn, name)

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<Task {self.type!r} {getattr(self.fn, '__module__', '?')}.{getattr(self.fn, '__qualname__', self.fn)}>"

    def enqueue(
        self,
        /,
        *positional,
        idempotency_key: str | None = None,
        delay: float | timedelta | None = None,
        run_at: datetime | None = None,
        priority: int | str | None = None,
        max_retries: int | None = None,
        queue: str | None = None,
        timeout: float | None = None,
        retry_backoff: float | None = None,
        **arguments,
    ) -> Job:
        """Enqueue ``fn(**arguments)`` as a job; the keyword options override the task's defaults (None: keep).

        Arguments the function does not take, or required ones left out, and values that are not JSON are
        a ValidationError naming the argument; nothing is written then. ``delay`` (seconds or a timedelta)
        and ``run_at`` (an aware datetime) are alternatives. Positional arguments are a ValidationError: the
        payload is the arguments by name.
        """
        if positional:
            raise ValidationError("arguments", self._keyword_call())
        payload = self.payload_for(arguments)
        given = {"priority": priority, "max_retries": max_retries, "queue": queue, "timeout": timeout}
        overrides = validate_job_options({**given, "retry_backoff": retry_backoff})
        options = {**self.options, **overrides}
        return self._queue._create(
            self.type, payload, options, idempotency_key=idempotency_key, delay=delay, run_at=run_at
        )

    async def enqueue_async(self, /, *positional, **arguments) -> Job:
        """``enqueue`` for code on an event loop (``await send_invoice.enqueue_async(invoice_id=42)``): the same
        arguments and options, checks and job; the database write runs on a thread, so the loop goes on
        serving other coroutines meanwhile. Inside a transaction of the queue's database on the loop's
        thread, it writes there, so the job commits or rolls back with that transaction."""
        return await self._queue._off_the_loop(functools.partial(self.enqueue, *positional, **arguments))

    def _keyword_call(self) -> str:
        """What to write instead of a positional enqueue: ``add.enqueue(a=..., b=...)``."""
        name = _name_of(self.fn)
        if not self._named_parameters():
            return f"{name}() takes no arguments: {name}.enqueue()"
        return f"enqueue takes the task's arguments by keyword (they are the job's payload): {self.call_example()}"

    def call_example(self) -> str:
        """How this task is enqueued, for messages: ``add.enqueue(a=..., b=...)``."""
        keywords = ", ".join(f"{parameter}=..." for parameter in self._named_parameters())
        return f"{_name_of(self.fn)}.enqueue({keywords})"

    def _named_parameters(self) -> list[str]:
        kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        return [p.name for p in self._signature.parameters.values() if p.kind in kinds]

    def payload_for(self, arguments: dict, *, field: str | None = None) -> dict:
        """``arguments`` as the job's payload, once they fit the function's signature and are JSON.

        Errors name the argument, or ``field`` when given (a cron task's missing arguments name ``cron``).
        """
        parameters = self._signature.parameters
        named = [p.name for p in parameters.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        takes_any = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
        takes = f"{_name_of(self.fn)}() takes {', '.join(named) or 'no arguments'}"
        for name in arguments:
            if name not in named and not takes_any:
                raise ValidationError(field or name, f"unknown argument for task {self.type!r}: {takes}")
        for name in named:
            if parameters[name].default is inspect.Parameter.empty and name not in arguments:
                message = f"missing argument for task {self.type!r}: {takes}"
                if field == "cron":
                    message += "; a cron task runs without arguments: give them defaults or use periodic(payload=)"
                raise ValidationError(field or name, message)
        try:
            self._signature.bind(**arguments)  # the authority, should the checks above miss a case
        except TypeError as exc:
            raise ValidationError(field or "payload", f"does not fit {_name_of(self.fn)}(): {exc}") from None
        return {name: _json_value(name, value) for name, value in arguments.items()}


def _schedule_arguments(task: Task, payload) -> dict:
    """A schedule's ``payload`` as its task's arguments; a missing argument of a cron task names ``cron``."""
    if payload is not None and not isinstance(payload, Mapping):
        raise ValidationError(
            "payload",
            f"must be a mapping of {_name_of(task.fn)}()'s arguments by name, e.g. payload={{'kind': 'summary'}}, "
            f"got {type(payload).__name__}",
        )
    return task.payload_for(dict(payload or {}), field="cron" if payload is None else None)


def _handler_signature(fn: Callable, name: str) -> inspect.Signature:
    """The function's signature, once it is one a worker can call with the payload as keyword arguments."""
    refused = unsupported_kind(fn)  # also an object whose __call__ yields: its wrapper would hide it
    if refused is not None:
        raise ValidationError("handler", f"{_name_of(fn)} is {refused}: make it a plain function or an async def")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ValidationError("handler", f"cannot read the signature of {fn!r}: {exc}") from None
    _refuse_method(fn, signature, name)
    for parameter in signature.parameters.values():
        if parameter.kind is parameter.POSITIONAL_ONLY and parameter.default is parameter.empty:
            raise ValidationError(
                "handler",
                f"{_name_of(fn)}() has the positional-only parameter {parameter.name!r}; a task gets its "
                "arguments by keyword",
            )
        if parameter.name in ENQUEUE_OPTIONS and parameter.kind is not parameter.VAR_KEYWORD:
            raise ValidationError(
                "handler",
                f"{_name_of(fn)}() has a parameter named {parameter.name!r}, which is a job option of "
                f"enqueue() ({', '.join(ENQUEUE_OPTIONS)}); rename the parameter for task {name!r}",
            )
    return signature


def _refuse_method(fn: Callable, signature: inspect.Signature, name: str) -> None:
    """A ValidationError for a method decorated in its class body (``def send(self, to)``): a worker calls a task
    with the payload alone, so ``enqueue`` asked for ``self`` (``missing argument``), which no call can give."""
    qualname = getattr(fn, "__qualname__", "")
    first = next(iter(signature.parameters), None)
    if not isinstance(fn, types.FunctionType) or first not in ("self", "cls"):
        return
    owner, _, method = qualname.rpartition(".")
    if not owner or owner.endswith("<locals>"):
        return  # a module's function or a nested one: its first parameter is an argument like any other
    raise ValidationError(
        "handler",
        f"{qualname}() is a method of {owner.rpartition('.')[2]} (its first parameter is {first!r}): a worker calls a "
        f"task with its arguments alone, never with an instance; make it a function or a @staticmethod, or give "
        f"the task a bound method: queue.task({name!r})(instance.{method})",
    )


def _refuse_taken_type(registry: HandlerRegistry, name: str, handler: Callable) -> None:
    """A ValidationError if another function has job type ``name`` already: the registry's own message
    offers ``replace=True``, which a task cannot take (two functions of one type would run by import order)."""
    existing = registry.get(name)
    if existing is None or same_function(existing, handler):
        return  # free, or the same function again (a module imported twice)
    builtin = " (a built-in demo handler)" if BUILTINS.get(name) is existing else ""
    taken = f"job type {name!r} already has handler {qualified_name(existing)}{builtin}"
    raise ValidationError("name", f"{taken}; give this task another name")


def _schedule_name(fn) -> str:
    """A periodic function's name as its job type and schedule name, when no ``name=`` was given.

    Only a named function has one that every process agrees on: a partial's or an instance's would be its
    repr, with a memory address that differs in every worker (each worker then enqueued its own job type,
    once per tick, that no other worker could run), and every lambda is ``<lambda>``.
    """
    named = getattr(fn, "__name__", None)
    if not isinstance(named, str) or not named.isidentifier():
        raise ValidationError(
            "name", f"{_name_of(fn)} has no name that every process agrees on: give periodic(..., name='...')"
        )
    return named


def _name_of(fn) -> str:
    """A callable's name for messages (partials and instances with ``__call__`` have none: their repr)."""
    return getattr(fn, "__name__", None) or repr(fn)


def _payload_handler(fn: Callable) -> Callable[[dict], object]:
    """The registry's handler for a task: ``fn(**payload)``, returning what ``fn`` returns.

    It carries ``fn``'s name, so the registry reports the task's function and accepts the same function
    registered again (a module imported twice). An ``async def`` task gets an async handler, which the
    worker runs on its event loop (``worker.runner``).
    """
    if is_async_handler(fn):  # an object with an async __call__ too, which iscoroutinefunction does not see

        async def run(payload: dict):
            return await fn(**payload)

    else:

        def run(payload: dict):
            return fn(**payload)

    functools.update_wrapper(run, fn)
    if not hasattr(fn, "__qualname__"):
        # The registry tells handlers apart by module and qualified name: a partial or an instance is named
        # after its function or class, so another callable under the same type is refused, not swapped in.
        named = getattr(fn, "func", type(fn))
        run.__module__, run.__qualname__ = named.__module__, f"{named.__qualname__}(...)"
    return run


def _json_value(name: str, value):
    """``value`` if the handler will get it back unchanged from the stored JSON, else a ValidationError."""
    try:
        text = json.dumps(value, allow_nan=False)
    except RecursionError:
        raise ValidationError(name, "nests too deep to store as JSON") from None
    except (TypeError, ValueError) as exc:
        raise ValidationError(name, f"must be JSON-serialisable: {exc}") from None
    if json.loads(text) != value:
        # A tuple would arrive as a list, {1: "a"} as {"1": "a"}: refuse what the handler would not get back.
        shown = text if len(text) <= 60 else text[:57] + "..."
        raise ValidationError(name, f"would reach the handler as {shown}, not as given; pass JSON types")
    return value


class _Result:
    """A completed job's result, told apart from "not finished yet" (a result may be None)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _awaited(job, timeout) -> tuple[int, Iterator[float]]:
    """The id of the job ``result`` waits for, and the pauses between its looks at it: quick at first, then
    once a second, none past the deadline (the iterator raises TimeoutError there)."""
    job_id = validate_job_id(job.id if isinstance(job, Job) else job, "job")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout >= 0):
        raise ValidationError(
            "timeout", f"must be a number of seconds >= 0, or None to wait as long as it takes; got {timeout!r}"
        )
    return job_id, _pauses(job_id, timeout, math.inf if timeout is None else time.monotonic() + timeout)


def _pauses(job_id: int, timeout: float | None, deadline: float) -> Iterator[float]:
    pause = FIRST_RESULT_POLL
    while (left := deadline - time.monotonic()) > 0:
        yield min(pause, left)
        pause = min(pause * 2, MAX_RESULT_POLL)
    raise TimeoutError(f"job {job_id} has not finished within {timeout:g}s; its result is not there yet")


def _validated_delay(delay, run_at) -> float | None:
    if delay is None:
        return None
    if run_at is not None:
        raise ValidationError("delay", "give delay or run_at, not both")
    if isinstance(delay, timedelta):  # as the repository's ages are given (reap_stale, prune)
        delay = delay.total_seconds()
    if isinstance(delay, bool) or not isinstance(delay, int | float) or not math.isfinite(delay) or delay < 0:
        raise ValidationError("delay", f"must be a number of seconds >= 0 or a timedelta, got {delay!r}")
    return float(delay)


def _after(now: datetime, delay: float) -> datetime:
    try:
        return now + timedelta(seconds=delay)
    except OverflowError:
        raise ValidationError("delay", f"{delay:g} seconds is past the year 9999") from None
