"""The task API (issue 14, item 1): Queue, @queue.task, Task.enqueue, queue.enqueue, and what a worker runs."""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import inspect
import math
import os
import subprocess
import sys
import textwrap
import threading
import typing
from collections import UserDict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import MappingProxyType

import pytest
from support import START

import queue_core
from queue_core import Queue, ValidationError
from queue_core.handlers import HandlerRegistry, current_job, handler
from queue_core.store.database import open_database
from queue_core.store.repository import JobRepository
from queue_core.tasks import Task
from queue_core.worker import Worker

ROOT = Path(__file__).resolve().parents[1]
WAIT = 60  # seconds a subprocess may take; only a guard against hangs


@pytest.fixture
def queue(repo, handlers):
    """A Queue on the test's repository (fake clock), registering into a registry of its own."""
    return Queue(repository=repo, registry=handlers)


def count_jobs(repo) -> int:
    return sum(repo.counts().values())


# --- the README example ----------------------------------------------------------------------------


def test_the_readme_example_of_issue_14_runs(db_url, handlers):
    queue = Queue(db_url, registry=handlers)

    @queue.task("send-invoice", queue="mail", priority="high", max_retries=5, timeout=30)
    def send_invoice(invoice_id: int) -> dict:
        return {"invoice": invoice_id, "sent": True}

    job = send_invoice.enqueue(invoice_id=42)
    later = send_invoice.enqueue(invoice_id=43, idempotency_key="inv-43", delay=60)
    again = send_invoice.enqueue(invoice_id=43, idempotency_key="inv-43", delay=60)
    at = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)
    scheduled = send_invoice.enqueue(invoice_id=44, run_at=at)
    try:
        assert isinstance(job, queue_core.Job)
        assert (job.type, job.payload, job.priority, job.max_retries) == ("send-invoice", {"invoice_id": 42}, 20, 5)
        assert later.payload == {"invoice_id": 43} and later.idempotency_key == "inv-43"
        assert 59 <= (later.run_at - later.created_at).total_seconds() <= 61
        assert again.id == later.id
        assert scheduled.run_at == at
        assert send_invoice(invoice_id=7) == {"invoice": 7, "sent": True}  # still a plain function
        assert handlers.names() == ["send-invoice"]
        assert count_jobs(queue.repository) == 3
    finally:
        queue.close()


# --- enqueue checks the arguments --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "field", "says"),
    [
        ({"invoice": 42}, "invoice", "unknown argument for task 'send-invoice': send_invoice() takes invoice_id, copy"),
        ({"invoice_id": 1, "extra": 2}, "extra", "unknown argument"),
        ({}, "invoice_id", "missing argument for task 'send-invoice'"),
        ({"copy": True}, "invoice_id", "missing argument"),
        ({"invoice_id": datetime(2026, 1, 1)}, "invoice_id", "must be JSON-serialisable"),
        ({"invoice_id": 1, "copy": math.nan}, "copy", "must be JSON-serialisable"),
        ({"invoice_id": (1, 2)}, "invoice_id", "would reach the handler as [1, 2]"),
        ({"invoice_id": {1: "a"}}, "invoice_id", 'would reach the handler as {"1": "a"}'),
    ],
    ids=["unknown", "unknown-extra", "missing", "missing-with-another", "datetime", "nan", "tuple", "int-keys"],
)
def test_a_signature_mismatch_fails_at_enqueue_and_writes_nothing(queue, repo, arguments, field, says):
    @queue.task("send-invoice")
    def send_invoice(invoice_id, copy=False):
        raise AssertionError("never runs")

    with pytest.raises(ValidationError) as raised:
        send_invoice.enqueue(**arguments)
    assert raised.value.field == field
    assert says in str(raised.value)
    assert count_jobs(repo) == 0


def test_keyword_only_and_var_keyword_parameters(queue, repo):
    @queue.task("flexible")
    def flexible(*, to, **extra): ...

    assert flexible.enqueue(to="ann", cc="bob").payload == {"to": "ann", "cc": "bob"}
    with pytest.raises(ValidationError) as raised:
        flexible.enqueue(cc="bob")
    assert raised.value.field == "to"
    assert count_jobs(repo) == 1


def test_a_bad_enqueue_opens_no_database_and_defining_tasks_opens_none(tmp_path, handlers):
    path = tmp_path / "never.db"
    queue = Queue(f"sqlite:///{path}", registry=handlers)

    @queue.task("greet", timeout=5)
    def greet(name): ...

    with pytest.raises(ValidationError):
        greet.enqueue(nom="ann")
    with pytest.raises(ValidationError):
        greet.enqueue(name="ann", delay=-1)
    assert not path.exists()
    greet.enqueue(name="ann")
    assert path.exists()
    queue.close()


def test_no_url_means_queue_db_url(db_url, handlers, monkeypatch):
    monkeypatch.setenv("QUEUE_DB_URL", db_url)
    queue = Queue(registry=handlers)
    job = queue.enqueue("echo", {"from": "env"})
    try:
        other = JobRepository(queue_core.open_database(db_url))
        assert other.find_by_id(job.id).payload == {"from": "env"}
        other.db.close()
    finally:
        queue.close()


# --- options -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"colour": 1}, "colour"),
        ({"timeout": -1}, "timeout"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": math.inf}, "timeout"),
        ({"timeout": "30"}, "timeout"),
        ({"priority": "urgent"}, "priority"),
        ({"priority": True}, "priority"),
        ({"max_retries": -1}, "max_retries"),
        ({"retry_backoff": -1}, "retry_backoff"),
        ({"queue": ""}, "queue"),
        ({"queue": 5}, "queue"),
        ({"cron": "61 * * * *"}, "cron"),
        ({"cron": "* * * *"}, "cron"),
    ],
)
def test_bad_task_options_are_refused_at_the_decorator(handlers, options, field):
    queue = Queue(registry=handlers)
    with pytest.raises(ValidationError) as raised:
        queue.task("send-invoice", **options)
    assert raised.value.field == field
    assert handlers.names() == []


def test_a_parameter_named_like_a_job_option_is_refused_at_decoration(handlers):
    queue = Queue(registry=handlers)
    for option in ("priority", "delay", "idempotency_key", "queue", "timeout"):
        with pytest.raises(ValidationError, match=f"parameter named '{option}', which is a job option") as raised:
            queue.task("t")(eval(f"lambda order, {option}=None: None"))
        assert raised.value.field == "handler"
    assert handlers.names() == []


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("def f(a, /): pass", "positional-only parameter 'a'"),
        ("def f(a):\n    yield a", "generator function"),
    ],
    ids=["positional-only", "generator"],
)
def test_functions_a_worker_cannot_call_with_keywords_are_refused(handlers, source, says):
    namespace = {}
    exec(source, namespace)
    with pytest.raises(ValidationError, match=says):
        Queue(registry=handlers).task("t")(namespace["f"])
    assert handlers.names() == []


def test_enqueue_options_override_the_task_defaults(queue, repo):
    @queue.task("report", priority="low", max_retries=5, retry_backoff=0)
    def report(day): ...

    default = report.enqueue(day="mon")
    assert (default.priority, default.max_retries, default.retry_backoff) == (0, 5, 0)
    custom = report.enqueue(day="tue", priority="critical", max_retries=0, retry_backoff=30)
    assert (custom.priority, custom.max_retries, custom.retry_backoff) == (30, 0, 30)
    by_type = queue.enqueue("report", {"day": "wed"})  # the task's type: the task's defaults, as report.enqueue
    assert (by_type.priority, by_type.max_retries, by_type.retry_backoff) == (0, 5, 0)
    with pytest.raises(ValidationError) as raised:
        report.enqueue(day="thu", priority="urgent")
    assert raised.value.field == "priority"
    assert count_jobs(repo) == 3


def test_delay_and_run_at(queue, repo):
    @queue.task("later")
    def later(n): ...

    assert later.enqueue(n=1, delay=90).run_at == START + timedelta(seconds=90)
    assert later.enqueue(n=2, delay=0).run_at == START
    at = datetime(2026, 6, 1, 8, 30, tzinfo=UTC)
    assert later.enqueue(n=3, run_at=at).run_at == at
    bad = [
        ({"delay": 1, "run_at": at}, "delay"),
        ({"delay": -1}, "delay"),
        ({"delay": timedelta(seconds=-1)}, "delay"),
        ({"delay": timedelta.max}, "delay"),
        ({"delay": math.nan}, "delay"),
        ({"delay": True}, "delay"),
        ({"delay": "60"}, "delay"),
        ({"delay": 1e300}, "delay"),
        ({"run_at": datetime(2026, 6, 1)}, "run_at"),
        ({"run_at": "2026-06-01"}, "run_at"),
    ]
    for options, field in bad:
        with pytest.raises(ValidationError) as raised:
            later.enqueue(n=9, **options)
        assert raised.value.field == field, options
    assert count_jobs(repo) == 3


def test_delay_may_be_a_timedelta_and_a_past_run_at_is_due_at_once_in_its_place(queue, repo):
    @queue.task("later")
    def later(n): ...

    assert later.enqueue(n=1, delay=timedelta(minutes=2)).run_at == START + timedelta(seconds=120)
    first = later.enqueue(n=2)
    past = later.enqueue(n=3, run_at=START - timedelta(days=1))  # accepted, not refused
    assert past.run_at == START - timedelta(days=1)
    # Due first: a day ago ranks ahead of a job of its priority due since now (README, The task API).
    assert [repo.claim("w").id, repo.claim("w").id, repo.claim("w")] == [past.id, first.id, None]


@pytest.mark.parametrize("method", [Task.enqueue, Queue.enqueue])
def test_the_type_hints_take_what_enqueue_takes(method):
    """``delay`` takes seconds or a timedelta (README, The task API): typed ``float | None``, an application's
    mypy or pyright refused ``enqueue(delay=timedelta(minutes=5))``, which runs."""
    hints = typing.get_type_hints(method)
    assert typing.get_args(hints["delay"]) == (float, timedelta, type(None))
    assert typing.get_args(hints["run_at"]) == (datetime, type(None))


def test_queue_and_timeout_are_kept_on_the_task(queue, repo):
    @queue.task("send-invoice", queue="mail", timeout=30)
    def send_invoice(invoice_id): ...

    assert send_invoice.options["queue"] == "mail" and send_invoice.options["timeout"] == 30.0
    job = send_invoice.enqueue(invoice_id=1, queue="bulk", timeout=5)
    # TODO(issue 13 queue column, issue 14 item 4 timeouts): today's create takes neither, so the job is
    # created without them; once it does, assert job.queue == "bulk" and job.timeout == 5 here.
    assert repo.find_by_id(job.id).payload == {"invoice_id": 1}
    if {"queue", "timeout"} <= set(inspect.signature(JobRepository.create).parameters):
        assert (job.queue, job.timeout) == ("bulk", 5)


class RepositoryWithQueues(JobRepository):
    """Stands in for the repository after issue 13: its create takes ``queue`` and ``timeout``."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seen = []

    def create(self, type, payload=None, *, queue="default", timeout=None, **options):
        self.seen.append({"queue": queue, "timeout": timeout})
        return super().create(type, payload, **options)


def test_queue_and_timeout_reach_a_create_that_takes_them(db, clock, handlers):
    repo = RepositoryWithQueues(db, clock=clock)
    queue = Queue(repository=repo, registry=handlers)

    @queue.task("send-invoice", queue="mail", timeout=30)
    def send_invoice(invoice_id): ...

    send_invoice.enqueue(invoice_id=1)
    send_invoice.enqueue(invoice_id=2, queue="bulk", timeout=5)
    queue.enqueue("send-invoice", {"invoice_id": 3})  # the task's type: the task's defaults
    queue.enqueue("defined-elsewhere", {"invoice_id": 4})
    assert repo.seen == [
        {"queue": "mail", "timeout": 30.0},
        {"queue": "bulk", "timeout": 5.0},
        {"queue": "mail", "timeout": 30.0},
        {"queue": "default", "timeout": None},  # no options given: create's own defaults
    ]


def test_queue_enqueue_for_types_defined_elsewhere(queue, repo):
    job = queue.enqueue("echo", {"text": "hi"}, priority="low", idempotency_key="echo-1", delay=5)
    assert (job.type, job.payload, job.priority, job.run_at) == (
        "echo",
        {"text": "hi"},
        0,
        START + timedelta(seconds=5),
    )
    assert queue.enqueue("echo", {"text": "hi"}, idempotency_key="echo-1").id == job.id
    with pytest.raises(ValidationError) as raised:
        queue.enqueue("echo", {"when": datetime(2026, 1, 1)})
    assert raised.value.field == "payload"
    assert count_jobs(repo) == 1


def test_queue_enqueue_takes_any_mapping_as_its_payload_as_typed(queue, repo):
    # Typed `payload: Mapping`, it refused every Mapping that is no dict: "must be a JSON object, got UserDict".
    assert queue.enqueue("echo", MappingProxyType({"text": "hi"})).payload == {"text": "hi"}
    assert queue.enqueue("echo", UserDict({"text": "ho"})).payload == {"text": "ho"}
    assert count_jobs(repo) == 2


def test_queue_enqueue_of_a_task_type_is_the_tasks_enqueue(queue, repo):
    # It took the repository's defaults and no signature check: a "mail" task's job landed in "default", where a
    # worker serving --queues mail never claims it, and a misspelt argument failed only in the worker.
    @queue.task("send-invoice", queue="mail", priority="high", max_retries=5, timeout=30)
    def send_invoice(invoice_id, copies=1): ...

    job = queue.enqueue("send-invoice", {"invoice_id": 7})
    assert (job.queue, job.priority, job.max_retries, job.timeout) == ("mail", 20, 5, 30)
    overridden = queue.enqueue("send-invoice", {"invoice_id": 8}, queue="default", max_retries=0)
    assert (overridden.queue, overridden.priority, overridden.max_retries) == ("default", 20, 0)
    with pytest.raises(ValidationError) as raised:
        queue.enqueue("send-invoice", {"invoice": 9})
    assert raised.value.field == "invoice" and "send_invoice() takes invoice_id, copies" in str(raised.value)
    with pytest.raises(ValidationError) as raised:
        queue.enqueue("send-invoice", [9])  # not a mapping: the repository's own check
    assert raised.value.field == "payload"
    assert count_jobs(repo) == 2


def test_queue_enqueue_of_a_replaced_task_type_is_a_plain_enqueue(queue, handlers):
    @queue.task("report", queue="reports")
    def report(day): ...

    handlers.register("report", lambda payload: None, replace=True)  # the task no longer runs these jobs
    job = queue.enqueue("report", {"anything": 1})
    assert (job.queue, job.payload) == ("default", {"anything": 1})


def test_positional_arguments_to_enqueue_are_a_validation_error_saying_how(queue, repo):
    # Python's own "Task.enqueue() takes 1 positional argument but 2 were given" named neither the task nor the fix.
    @queue.task("add")
    def add(a, b=2): ...

    @queue.task("tick")
    def tick(): ...

    with pytest.raises(ValidationError) as raised:
        add.enqueue(1, b=3)
    assert raised.value.field == "arguments"
    assert "by keyword" in str(raised.value) and "add.enqueue(a=..., b=...)" in str(raised.value)
    with pytest.raises(ValidationError, match=r"tick\(\) takes no arguments: tick\.enqueue\(\)"):
        tick.enqueue(1)
    assert count_jobs(repo) == 0


def test_a_taken_task_type_is_refused_without_offering_replace(handlers):
    # The registry's message offers replace=True, which @queue.task refuses as an unknown option.
    queue = Queue(registry=handlers)

    @queue.task("add")
    def add(a): ...

    with pytest.raises(ValidationError) as raised:

        @queue.task("add")
        def other(a): ...

    assert raised.value.field == "name" and "replace=True" not in str(raised.value)
    assert "already has handler" in str(raised.value) and "give this task another name" in str(raised.value)
    with pytest.raises(ValidationError, match=r"\(a built-in demo handler\); give this task another name"):
        Queue(registry=HandlerRegistry()).task("echo")(lambda: None)
    assert handlers.get("add").__qualname__.endswith("add")


def load_as(name: str, path: Path):
    """Execute the file at ``path`` as a new module called ``name`` (not kept in sys.modules)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_module_run_as_a_script_and_imported_by_name_defines_its_tasks_once(tmp_path, handlers):
    # `python app.py` whose views do `from app import send`: the module runs twice, as __main__ and as app.
    # Its functions were __main__.send and app.send, so the second definition was refused as another
    # function (the registry's docstring promised the same function twice was harmless).
    source = "def send(to):\n    return to\n"
    (tmp_path / "app.py").write_text(source)
    as_main, by_name = load_as("__main__", tmp_path / "app.py"), load_as("app", tmp_path / "app.py")
    assert as_main.send.__module__ != by_name.send.__module__
    Queue(registry=handlers).task("send")(as_main.send)
    Queue(registry=handlers).task("send")(by_name.send)  # refused before
    assert handlers.get("send")({"to": "ann"}) == "ann"
    plain = HandlerRegistry(with_builtins=False)  # and through @handler, the same
    plain.register("send", as_main.send)
    plain.register("send", by_name.send)

    (tmp_path / "other.py").write_text(source.replace("return to", "return to.upper()"))
    with pytest.raises(ValidationError, match=r"already has handler app\.send"):  # another file: refused
        Queue(registry=handlers).task("send")(load_as("other", tmp_path / "other.py").send)
    (tmp_path / "app.py").write_text(source.replace("return to", "return to * 2"))  # edited since: another function
    with pytest.raises(ValidationError, match=r"already has handler app\.send"):
        Queue(registry=handlers).task("send")(load_as("app_edited", tmp_path / "app.py").send)


class Resizer:
    def __init__(self, width):
        self.width = width

    def __call__(self, path):
        return f"{path}@{self.width}"

    def resize(self, path):
        return self(path)


def scale(factor, value):
    return factor * value


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (lambda path: f"{path}@100", lambda path: f"{path}@200"),
        (Resizer(100), Resizer(200)),
        (Resizer(100).resize, Resizer(200).resize),
        (functools.partial(scale, 2), functools.partial(scale, 3)),
    ],
    ids=["lambdas", "callable objects", "bound methods", "partials"],
)
def test_two_callables_of_one_name_under_one_task_type_are_refused(handlers, first, second):
    # Every lambda of a module is <lambda>, and a task's callable object, bound method or partial is named after
    # its class or function: two of them were taken for one function defined twice, and the second silently
    # replaced the first, where two defs are refused.
    queue = Queue(registry=handlers)
    queue.task("resize")(first)
    queue.task("resize")(first)  # the same callable again is harmless
    with pytest.raises(ValidationError, match="already has handler"):
        queue.task("resize")(second)
    assert handlers.get("resize").__wrapped__ is first
    plain = HandlerRegistry(with_builtins=False)  # and through @handler, the same
    plain.register("resize", first)
    with pytest.raises(ValidationError, match="already has handler"):
        plain.register("resize", second)


def test_a_method_decorated_in_its_class_body_is_refused_saying_what_to_do_instead(handlers, repo):
    # A worker calls a task with the payload alone: enqueue asked for `self` ("missing argument"), which no
    # enqueue can give, and the decorator said nothing.
    queue = Queue(repository=repo, registry=handlers)
    with pytest.raises(ValidationError) as raised:

        class Mailer:
            @queue.task("send")
            def send(self, to): ...

    assert raised.value.field == "handler" and "send" not in handlers
    assert "is a method of Mailer (its first parameter is 'self')" in str(raised.value)
    assert "queue.task('send')(instance.send)" in str(raised.value)

    class Tools:  # a static method, or a function whose first argument is named self elsewhere, is a task
        @queue.task("shout")
        @staticmethod
        def shout(word):
            return word.upper()

    def outer():
        @queue.task("nested")
        def nested(self):
            return self

        return nested

    assert outer().enqueue(self="me").payload == {"self": "me"}
    assert Tools.shout.enqueue(word="hi").payload == {"word": "hi"}


def test_a_bound_method_of_a_module_run_as_a_script_and_imported_by_name_is_one_task(tmp_path, handlers):
    (tmp_path / "app.py").write_text("class Mailer:\n    def send(self, to):\n        return to\n\nmailer = Mailer()\n")
    as_main, by_name = load_as("__main__", tmp_path / "app.py"), load_as("app", tmp_path / "app.py")
    Queue(registry=handlers).task("send")(as_main.mailer.send)
    Queue(registry=handlers).task("send")(by_name.mailer.send)
    assert handlers.get("send")({"to": "ann"}) == "ann"


# --- the decorated function ----------------------------------------------------------------------------


def test_the_task_stays_the_function(handlers):
    queue = Queue(registry=handlers)

    @queue.task("add")
    def add(a: int, b: int = 2) -> int:
        """Add two numbers."""
        return a + b

    assert isinstance(add, Task)
    assert add(1) == 3 and add(a=1, b=5) == 6
    assert (add.__name__, add.__doc__, add.fn.__name__) == ("add", "Add two numbers.", "add")
    assert inspect.signature(add) == inspect.signature(add.fn)
    assert handlers.get("add")({"a": 4}) == 6  # the registered handler returns what the function returns
    assert repr(add) == f"<Task 'add' {__name__}.test_the_task_stays_the_function.<locals>.add>"


def test_callables_without_a_name_are_tasks_too(handlers, repo):
    queue = Queue(repository=repo, registry=handlers)

    class Mailer:
        def __call__(self, to, subject="hi"):
            return f"{to}: {subject}"

    def scale(factor, value):
        return factor * value

    mailer = queue.task("mail")(Mailer())
    double = queue.task("double")(functools.partial(scale, 2))
    assert (mailer(to="ann"), double(value=4)) == ("ann: hi", 8)
    assert handlers.get("mail")({"to": "bob"}) == "bob: hi" and handlers.get("double")({"value": 5}) == 10
    with pytest.raises(ValidationError, match=r"\(\) takes to, subject") as raised:
        mailer.enqueue(too="ann")
    assert raised.value.field == "too"
    assert double.enqueue(value=3).payload == {"value": 3}
    with pytest.raises(ValidationError, match="already has handler"):
        queue.task("mail")(functools.partial(scale, 3))


def test_a_type_taken_by_another_function_is_refused(handlers):
    queue = Queue(registry=handlers)

    @queue.task("add")
    def add(a): ...

    with pytest.raises(ValidationError, match="already has handler"):

        @queue.task("add")
        def other(a): ...

    @queue.task("add-again")  # one function under a second type is fine
    @queue.task("add-too")
    def more(a): ...

    assert handlers.names() == ["add", "add-again", "add-too"]


def test_queue_is_exported_and_checks_its_arguments():
    assert queue_core.Queue is Queue and "Queue" in queue_core.__all__
    with pytest.raises(ValidationError) as raised:
        Queue(5)
    assert raised.value.field == "url"
    with pytest.raises(ValidationError, match=r"not a bare @queue\.task"):

        @Queue().task
        def bare(): ...


def test_a_repository_that_is_no_job_repository_is_refused_by_the_queue_not_at_its_first_enqueue(handlers):
    from queue_core.client import HttpQueue

    for wrong in ("sqlite:///queue.db", HttpQueue("http://127.0.0.1:8000")):
        with pytest.raises(ValidationError) as raised:
            Queue(repository=wrong, registry=handlers)
        assert raised.value.field == "repository"
        assert f"must be a JobRepository, e.g. JobRepository(open_database(url)), got {type(wrong).__name__}" in str(
            raised.value
        )


# --- what the worker runs ------------------------------------------------------------------------------


def test_a_task_enqueued_runs_in_a_worker_with_its_arguments(live_repo, handlers):
    queue = Queue(repository=live_repo, registry=handlers)
    calls = []

    @queue.task("send-invoice", priority="high")
    def send_invoice(invoice_id: int, copies: int = 1, *, to: str) -> dict:
        calls.append((invoice_id, copies, to, current_job().id))
        return {"sent": invoice_id}

    @handler("legacy", registry=handlers)  # a handler taking the payload keeps working beside tasks
    def legacy(payload):
        calls.append(("legacy", payload, current_job().id))

    first = send_invoice.enqueue(invoice_id=42, to="ann@example.com")
    second = send_invoice.enqueue(invoice_id=43, copies=2, to="bob@example.com")
    old = live_repo.create("legacy", {"x": [1, 2]})[0]

    Worker(live_repo, registry=handlers, worker_id="w1", poll_interval=0.01).run(burst=True)

    assert sorted(calls, key=str) == sorted(
        [
            (42, 1, "ann@example.com", first.id),
            (43, 2, "bob@example.com", second.id),
            ("legacy", {"x": [1, 2]}, old.id),
        ],
        key=str,
    )
    assert {live_repo.find_by_id(job.id).status for job in (first, second, old)} == {"completed"}


def test_a_worker_process_runs_the_tasks_of_its_handlers_module(db_url, live_repo, tmp_path):
    (tmp_path / "myapp_tasks.py").write_text(
        textwrap.dedent(
            """
            from pathlib import Path
            from queue_core import Queue

            queue = Queue()  # $QUEUE_DB_URL

            @queue.task("greet", priority="high")
            def greet(name, greeting="hello"):
                with Path("greeted.txt").open("a") as out:
                    out.write(f"{greeting} {name}\\n")
            """
        )
    )
    env = {**os.environ, "QUEUE_DB_URL": db_url, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}

    def run(*args):
        out = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=WAIT)
        assert out.returncode == 0, out.stderr
        return out

    enqueue = "from myapp_tasks import greet; greet.enqueue(name='ann'); greet.enqueue(name='bob', greeting='hi')"
    run(sys.executable, "-c", enqueue)
    assert not (tmp_path / "greeted.txt").exists()  # enqueued, not run
    run(sys.executable, "-m", "queue_core.worker", "--burst", "--handlers", "myapp_tasks")

    assert sorted((tmp_path / "greeted.txt").read_text().splitlines()) == ["hello ann", "hi bob"]
    assert live_repo.counts()["completed"] == 2
    assert {job.priority for job in live_repo.list(status="completed")} == {20}


@pytest.mark.parametrize("timeout", [-1, 0, math.inf, "30"])
def test_a_bad_timeout_reads_the_same_from_the_decorator_and_from_create(handlers, repo, timeout):
    # One validator: the task API's options and create() had two copies with two messages.
    queue = Queue(registry=handlers)
    with pytest.raises(ValidationError) as at_the_decorator:
        queue.task("send-invoice", timeout=timeout)
    with pytest.raises(ValidationError) as at_create:
        repo.create("send-invoice", timeout=timeout)
    assert str(at_the_decorator.value) == str(at_create.value)
    assert "a number of seconds above 0" in str(at_create.value) and repr(timeout) in str(at_create.value)
    assert sum(repo.counts().values()) == 0  # nothing written


class AsyncFetcher:
    """An object whose ``__call__`` is an ``async def``: an async task as much as an ``async def`` function."""

    async def __call__(self, url: str) -> int:
        await asyncio.sleep(0)
        return len(url)


def test_an_object_with_an_async_call_is_an_async_task_a_worker_awaits(live_repo, handlers):
    # Its handler was a plain function returning the coroutine, so every attempt failed with "the handler
    # returned a coroutine, so its work was not run": a registry handler of the same object ran.
    queue = Queue(repository=live_repo, registry=handlers)
    fetch = queue.task("fetch", max_retries=0)(AsyncFetcher())
    job = fetch.enqueue(url="https://example.com")

    Worker(live_repo, registry=handlers, worker_id="w1", poll_interval=0.01).run(burst=True)

    done = live_repo.find_by_id(job.id)
    assert (done.status, done.result, done.error) == ("completed", 19, None)


class GeneratorCall:
    def __call__(self, n: int):
        yield n


class AsyncGeneratorTask:
    @staticmethod
    async def run(n: int):
        yield n


@pytest.mark.parametrize(
    ("fn", "says"),
    [(GeneratorCall(), "is a generator function"), (AsyncGeneratorTask.run, "is an async generator function")],
    ids=["object with a generator __call__", "async generator"],
)
def test_tasks_a_worker_would_never_run_are_refused_saying_what_to_write(handlers, fn, says):
    # An object whose __call__ yields was registered (its wrapper is a plain function) and every job of it
    # "completed" without running; an async generator was told to become "a plain function", not an async def.
    with pytest.raises(ValidationError, match=says) as raised:
        Queue(registry=handlers).task("t")(fn)
    assert raised.value.field == "handler"
    assert "make it a plain function or an async def" in str(raised.value)
    assert handlers.names() == []


def test_a_task_given_to_queue_enqueue_in_place_of_its_type_says_which_to_pass(queue, repo):
    @queue.task("send-invoice")
    def send_invoice(invoice_id): ...

    with pytest.raises(ValidationError, match=r"send_invoice\.enqueue\(invoice_id=\.\.\.\)") as raised:
        queue.enqueue(send_invoice, {"invoice_id": 7})
    assert raised.value.field == "type" and "'send-invoice'" in str(raised.value)
    assert count_jobs(repo) == 0


@pytest.mark.parametrize("registry", [{}, "default"])
def test_a_queue_given_something_else_than_a_registry_says_so(registry):
    with pytest.raises(ValidationError, match="must be a HandlerRegistry") as raised:
        Queue(registry=registry)
    assert raised.value.field == "registry"


# --- enqueue_async: the write off the event loop ---------------------------------------------------------


def test_enqueue_async_leaves_the_event_loop_free_while_it_writes(queue, repo, monkeypatch):
    @queue.task("fetch", queue="net", priority="high")
    async def fetch(url: str) -> int:
        return len(url)

    release = threading.Event()
    original = repo.create

    def create(*args, **kwargs):
        # Set by a coroutine on the loop: if this write ran on the loop's thread, nothing could set it.
        assert release.wait(WAIT), "the event loop was blocked by the enqueue"
        return original(*args, **kwargs)

    monkeypatch.setattr(repo, "create", create)

    async def main():
        writing = asyncio.ensure_future(fetch.enqueue_async(url="https://example.com"))
        await asyncio.sleep(0)  # the enqueue starts; it must give the loop back while its write waits
        release.set()
        by_task = await writing
        by_type = await queue.enqueue_async("fetch", {"url": "u"}, priority="low")
        return by_task, by_type

    by_task, by_type = asyncio.run(main())
    assert (by_task.type, by_task.payload, by_task.queue, by_task.priority) == (
        "fetch",
        {"url": "https://example.com"},
        "net",
        20,
    )
    assert (by_type.payload, by_type.queue, by_type.priority) == ({"url": "u"}, "net", 0)
    assert count_jobs(repo) == 2


def test_enqueue_async_checks_as_enqueue_does_and_writes_nothing(queue, repo):
    @queue.task("fetch")
    async def fetch(url: str) -> int:
        return len(url)

    async def main(**arguments):
        return await fetch.enqueue_async(**arguments)

    with pytest.raises(ValidationError) as missing:
        asyncio.run(main())
    assert missing.value.field == "url"
    with pytest.raises(ValidationError) as not_json:
        asyncio.run(main(url={1, 2}))
    assert not_json.value.field == "url" and "JSON" in str(not_json.value)
    assert count_jobs(repo) == 0


def test_enqueue_async_in_a_transaction_commits_and_rolls_back_with_it(queue, repo):
    @queue.task("ship")
    async def ship(order_id: int) -> None:
        pass

    async def enqueue_in_transaction(order_id: int, *, roll_back: bool):
        with repo.db.atomic() as transaction:
            job = await ship.enqueue_async(order_id=order_id)
            if roll_back:
                transaction.rollback()
        return job

    asyncio.run(enqueue_in_transaction(1, roll_back=True))
    assert count_jobs(repo) == 0  # written on another connection, it would have outlived the rollback
    kept = asyncio.run(enqueue_in_transaction(2, roll_back=False))
    assert repo.find_by_id(kept.id).payload == {"order_id": 2}


def test_a_queues_repr_never_shows_the_database_password():
    """A repr reaches logs, tracebacks and error trackers (locals of a frame): the password is ***."""
    queue = Queue("postgresql://app:s3cret@db.internal/app?sslpassword=s3cret")
    assert "s3cret" not in repr(queue) and repr(queue).startswith("Queue('postgresql://app:***@db.internal/app")
    assert repr(Queue()) == "Queue(None)"  # $QUEUE_DB_URL, read at first use


# --- replace_repository: a test's own database under an application's Queue ---------------------------


def test_replace_repository_points_the_tasks_at_a_tests_database_and_gives_the_queue_back(
    tmp_path, repo, clock, handlers
):
    """An application's Queue names its database at import; a test points it at its own for a block (its tasks'
    enqueue, the chain a handler enqueues, result and the scheduler), on the test's clock, and the application's
    database is neither opened nor written."""
    app_file = tmp_path / "app.db"
    app_queue = Queue(f"sqlite:///{app_file}", registry=handlers)

    @app_queue.task("double")
    def double(n: int) -> int:
        if n < 100:
            double.enqueue(n=n * 100)  # a chain: the handler's enqueue goes where the test's job came from
        return n * 2

    @app_queue.periodic("0 * * * *")
    def hourly() -> None: ...

    with app_queue.replace_repository(repo) as given:
        assert given is repo and app_queue.repository is repo
        job = double.enqueue(n=2, delay=60)
        assert job.run_at == clock() + timedelta(seconds=60)  # the test's clock
        clock.advance(60)
        Worker(app_queue.repository, registry=handlers, worker_id="t").run(burst=True)
        assert app_queue.result(job, timeout=0) == 4
        assert sorted(j.payload["n"] for j in repo.list(type="double")) == [2, 200]
        assert [j.type for j in app_queue.scheduler(clock).tick()] == ["hourly"]
    assert not app_file.exists()  # never opened, never written
    assert app_queue.repository is not repo  # its own again, opened now
    assert app_queue.repository.counts()["pending"] == 0
    assert repo.counts()["completed"] == 2  # the test's repository is left open
    app_queue.close()


def test_replace_repository_restores_after_an_error_and_nests(repo, db_url, handlers, tmp_path):
    own = JobRepository(open_database(f"sqlite:///{tmp_path / 'own.db'}"))
    app_queue = Queue(repository=own, registry=handlers)
    other = JobRepository(open_database(db_url))
    with pytest.raises(RuntimeError), app_queue.replace_repository(repo):
        with app_queue.replace_repository(other):
            assert app_queue.repository is other
        assert app_queue.repository is repo
        raise RuntimeError("the test failed")
    assert app_queue.repository is own
    app_queue.close()  # a given repository is the caller's: not closed
    assert app_queue.repository is own and not own.db.is_closed()
    own.db.close()
    other.db.close()


@pytest.mark.parametrize("given", [None, "sqlite:///queue.db", object()])
def test_replace_repository_takes_a_repository_only(queue, repo, given):
    with pytest.raises(ValidationError, match="must be a JobRepository"), queue.replace_repository(given):
        pass
    assert queue.repository is repo
