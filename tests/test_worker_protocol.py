"""``JobQueue`` names what the worker calls; ``JobRepository`` and ``HttpQueue`` both have all of it, same shapes."""

from __future__ import annotations

import inspect
from collections import Counter

import pytest
from fastapi.testclient import TestClient

from queue_core.client import HttpQueue, RemoteJob
from queue_core.errors import ValidationError
from queue_core.server.app import create_app
from queue_core.store.models import Job
from queue_core.store.repository import JobRepository
from queue_core.worker import ClaimedJob, JobQueue, Worker
from queue_core.worker.handlers import HandlerRegistry


def protocol_members(protocol) -> list[str]:
    return sorted(name for name, value in vars(protocol).items() if not name.startswith("_") and callable(value))


def parameters(function) -> list[inspect.Parameter]:
    return [p for p in inspect.signature(function).parameters.values() if p.name != "self"]


def assert_satisfies(implementation, protocol) -> None:
    """Each method the protocol names exists and accepts every call the protocol allows, with the same meaning:
    same parameter names, kinds and defaults in the same order; any extra parameter is optional."""
    for name in protocol_members(protocol):
        method = getattr(implementation, name, None)
        assert callable(method), f"{implementation.__name__} has no {name}()"
        expected, actual = parameters(getattr(protocol, name)), parameters(method)
        shape = [(p.name, p.kind, p.default) for p in expected]
        assert [(p.name, p.kind, p.default) for p in actual[: len(expected)]] == shape, (
            f"{implementation.__name__}.{name}{inspect.signature(method)} != JobQueue.{name}"
            f"{inspect.signature(getattr(protocol, name))}"
        )
        extra = [p.name for p in actual[len(expected) :] if p.default is inspect.Parameter.empty]
        assert not extra, f"{implementation.__name__}.{name} requires {extra}, which the worker never passes"


def test_the_protocol_names_what_the_worker_calls():
    assert protocol_members(JobQueue) == [
        "cancel_requests",
        "complete_and_claim_many",
        "complete_many",
        "fail",
        "heartbeat",
        "held_claims",
        "mark_cancelled",
        "prune",
        "reap_stale",
        "refresh_statistics",
        "register_worker",
        "release",
        "worker_seen",
        "worker_stopped",
    ]


@pytest.mark.parametrize("implementation", [JobRepository, HttpQueue])
def test_both_queues_satisfy_the_protocol(implementation):
    assert_satisfies(implementation, JobQueue)


@pytest.mark.parametrize("job_class", [Job, RemoteJob])
def test_both_job_kinds_have_what_the_worker_and_handlers_read(job_class):
    names = [name for name in vars(ClaimedJob) if not name.startswith("_")]
    assert "attempt" in names and "run_at" in names
    if job_class is RemoteJob:
        fields = set(RemoteJob.__dataclass_fields__) | {"attempt"}
        assert set(names) <= fields, set(names) - fields
    else:
        assert all(hasattr(Job, name) for name in names), [n for n in names if not hasattr(Job, n)]


def test_the_structural_check_catches_a_queue_that_differs():
    class Renamed(JobRepository):
        def complete_and_claim_many(self, completions, n, kinds=None, *, worker_id, queues=None):  # types renamed
            raise NotImplementedError

    class Missing:
        complete_many = JobRepository.complete_many

    with pytest.raises(AssertionError, match="complete_and_claim_many"):
        assert_satisfies(Renamed, JobQueue)
    with pytest.raises(AssertionError, match="has no cancel_requests"):
        assert_satisfies(Missing, JobQueue)


def test_a_worker_over_http_completes_and_claims_in_one_round_trip_per_job(repo):
    requests = Counter()
    client = TestClient(create_app(repo), raise_server_exceptions=False)
    client.event_hooks["request"].append(lambda request: requests.update([request.url.path.rsplit("/", 1)[-1]]))
    handlers = HandlerRegistry(with_builtins=False)
    handlers.register("t", lambda payload: None)
    jobs = [repo.create("t")[0] for _ in range(5)]
    with HttpQueue("http://testserver", client=client) as queue:
        Worker(queue, worker_id="w1", registry=handlers, poll_interval=0.01).run(burst=True)
    assert {repo.find_by_id(job.id).status for job in jobs} == {"completed"}
    # One claim starts the chain; each completion brings the next job; the last finds nothing more.
    assert requests["complete-and-claim"] == 5 and requests["complete"] == 0


# --- what a developer may pass by mistake: a clear error at once, not a worker that retries for ever -----------


def test_a_worker_given_a_queue_instead_of_its_repository_says_what_to_pass(repo):
    # Worker(queue) took every call's AttributeError for a database error and retried it: run(burst=True)
    # never returned, and printed nothing unless on_event was given.
    from queue_core import Queue

    queue = Queue(repository=repo, registry=HandlerRegistry())
    for given, says in [
        (queue, r"got a Queue; a worker takes its repository: Worker\(queue.repository, registry=queue.registry\)"),
        (None, r"must be a JobRepository or an HttpQueue \(a JobQueue\), got NoneType \(no "),
    ]:
        worker = Worker(given, shutdown_timeout=0)
        try:
            with pytest.raises(ValidationError, match=says) as raised:
                worker.start()  # start, not run(burst=True): that never returned
        finally:
            worker.stop()
        assert raised.value.field == "queue"
    assert repo.workers() == []  # nothing was registered or claimed


def test_a_registry_or_on_event_of_the_wrong_kind_is_refused_at_construction(repo):
    with pytest.raises(ValidationError) as raised:
        Worker(repo, registry={"echo": print})  # was an AttributeError from inside the worker
    assert raised.value.field == "registry" and "queue.registry" in str(raised.value)
    with pytest.raises(ValidationError) as raised:
        Worker(repo, on_event="print")  # was accepted, then a logged traceback at every event
    assert raised.value.field == "on_event"
