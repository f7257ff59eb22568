"""Results (issue 14, item 5): a handler's return value stored as JSON in ``result``, on both backends."""

from __future__ import annotations

import asyncio
import json
from functools import reduce

import pytest
from fastapi.testclient import TestClient

import queue_core
from queue_core import JobFailed, Queue
from queue_core.cli.admin import main as admin_main
from queue_core.client import HttpQueue
from queue_core.errors import QueueError, ValidationError
from queue_core.handlers import HandlerRegistry
from queue_core.results import MAX_RESULT_BYTES, MAX_RESULT_DEPTH, encode_result
from queue_core.server.app import create_app
from queue_core.worker import Worker


@pytest.fixture
def queue(live_repo) -> Queue:
    return Queue(repository=live_repo, registry=HandlerRegistry(with_builtins=False))


def run_all(queue: Queue, repo) -> None:
    Worker(repo, registry=queue.registry, poll_interval=0.01).run(burst=True)


def test_a_return_value_is_stored_and_read_back_as_json(queue, live_repo):
    @queue.task("invoice")
    def invoice(n: int) -> dict:
        return {"sent": n, "to": ["ann"], "ok": True, "note": "ünïcode"}

    @queue.task("quiet")
    def quiet():
        return None

    jobs = [invoice.enqueue(n=1), invoice.enqueue(n=2), quiet.enqueue()]
    run_all(queue, live_repo)  # the first completion rides complete_and_claim, the last a plain complete
    results = [live_repo.find_by_id(job.id).result for job in jobs]
    assert results[:2] == [{"sent": n, "to": ["ann"], "ok": True, "note": "ünïcode"} for n in (1, 2)]
    assert results[2] is None
    assert live_repo.find_by_id(jobs[0].id).to_dict()["result"]["sent"] == 1


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ({1, 2}, "not JSON-serialisable"),
        (float("nan"), "not JSON-serialisable"),
        ("x" * (MAX_RESULT_BYTES + 1), f"over the {MAX_RESULT_BYTES}-byte limit"),
        ({"path": "\udcff"}, "lone surrogate"),
        (reduce(lambda inner, _: [inner], range(MAX_RESULT_DEPTH), {}), f"more than {MAX_RESULT_DEPTH} levels deep"),
    ],
    ids=["set", "nan", "too big", "surrogate", "too deep"],
)
def test_a_result_that_cannot_be_stored_fails_the_attempt_saying_why(queue, live_repo, value, says):
    @queue.task("bad", max_retries=0)
    def bad():
        return value

    job = bad.enqueue()
    run_all(queue, live_repo)
    failed = live_repo.find_by_id(job.id)
    assert failed.status == "failed"
    assert says in failed.error and "return value" in failed.error
    assert failed.result is None


def test_a_result_that_cannot_be_stored_fails_the_job_for_good_not_running_the_handler_again(queue, live_repo):
    """The handler ran to its end (it sent the mail, charged the card) and returned a datetime: the attempt was
    failed and retried by the usual rules, so the handler, and what it did, ran max_retries + 1 times."""
    runs = []

    @queue.task("charge", retry_backoff=0)  # 3 retries left, at once
    def charge(card: str) -> dict:
        runs.append(card)
        return {"charged_at": {card}}

    job = charge.enqueue(card="77")
    run_all(queue, live_repo)
    failed = live_repo.find_by_id(job.id)
    assert runs == ["77"]
    assert (failed.status, failed.retry_count, failed.attempt) == ("failed", 0, 1)
    assert "not JSON-serialisable" in failed.error and "not retried (that would run it again)" in failed.error
    assert [error.attempt for error in live_repo.errors_for(job.id)] == [1]


def test_a_worker_over_http_fails_a_job_whose_result_cannot_be_stored_for_good(queue, live_repo):
    runs = []

    @queue.task("stamp", retry_backoff=0)
    def stamp() -> bytes:
        runs.append(1)
        return b"not json"

    job = stamp.enqueue()
    client = TestClient(create_app(live_repo), raise_server_exceptions=False)
    with HttpQueue("http://testserver", client=client) as remote:
        Worker(remote, registry=queue.registry, poll_interval=0.01).run(burst=True)
    failed = live_repo.find_by_id(job.id)
    assert (runs, failed.status, failed.attempt) == ([1], "failed", 1)
    assert "not retried" in failed.error


def test_fail_final_fails_a_job_with_retries_left_and_a_cancel_request_still_cancels(live_repo):
    jobs = [live_repo.create("t", max_retries=5)[0] for _ in range(3)]
    claimed = [live_repo.claim("w") for _ in jobs]
    live_repo.cancel(claimed[1].id)
    assert live_repo.fail(claimed[0].id, "e", worker_id="w", attempt=1, final=True).status == "failed"
    assert live_repo.fail(claimed[1].id, "e", worker_id="w", attempt=1, final=True).status == "cancelled"
    assert live_repo.fail(claimed[2].id, "e", worker_id="w", attempt=1).status == "pending"  # as before


def test_scalars_and_strings_are_json_not_raw_text(queue, live_repo):
    @queue.task("echo-back")
    def echo_back(value):
        return value

    values = ["hello", 0, 1.5, [1, "a"], False]
    jobs = [echo_back.enqueue(value=value) for value in values]
    run_all(queue, live_repo)
    assert [live_repo.find_by_id(job.id).result for job in jobs] == values


def test_the_repository_checks_a_result_given_directly(live_repo):
    job, _ = live_repo.create("t")
    claimed = live_repo.claim("w")
    with pytest.raises(ValidationError) as raised:
        live_repo.complete(claimed.id, worker_id="w", attempt=claimed.attempt, result=object())
    assert raised.value.field == "result"
    assert live_repo.find_by_id(job.id).status == "running"  # nothing written
    assert encode_result(None) is None


def test_a_result_nested_too_deep_to_read_back_is_refused_and_the_deepest_allowed_is_stored(live_repo):
    """A result nested near Python's recursion limit was stored, then every read of its job decoded it deeper in
    the stack and raised RecursionError (the API's GET a 500, the console's view an error): a poison row. It
    gets a payload's bound instead, refused before anything is written."""
    deepest = reduce(lambda inner, _: [inner], range(MAX_RESULT_DEPTH - 1), {})  # the dict is level 1
    jobs = [live_repo.create("t")[0] for _ in range(2)]
    for job in jobs:
        assert live_repo.claim("w").id == job.id
    with pytest.raises(ValidationError) as raised:
        live_repo.complete(jobs[0].id, worker_id="w", attempt=1, result=[deepest])
    assert raised.value.field == "result" and f"more than {MAX_RESULT_DEPTH} levels" in raised.value.message
    assert live_repo.find_by_id(jobs[0].id).status == "running"  # nothing written
    assert live_repo.complete(jobs[1].id, worker_id="w", attempt=1, result=deepest).result == deepest
    assert encode_result({"text": "[[[[{{{{" * 100}) is not None  # brackets inside strings are no nesting


def test_show_and_get_job_show_the_result_and_a_worker_over_http_stores_it(queue, live_repo, db_url, capsys):
    @queue.task("sum")
    def total(a: int, b: int) -> int:
        return a + b

    jobs = [total.enqueue(a=1, b=2), total.enqueue(a=3, b=4)]
    client = TestClient(create_app(live_repo), raise_server_exceptions=False)
    with HttpQueue("http://testserver", client=client) as remote:
        Worker(remote, registry=queue.registry, poll_interval=0.01).run(burst=True)
        assert remote.find_by_id(jobs[0].id).result == 3
    client = TestClient(create_app(live_repo), raise_server_exceptions=False)
    assert client.get(f"/jobs/{jobs[1].id}").json()["result"] == 7

    assert admin_main(["--db", db_url, "show", str(jobs[0].id)]) == 0
    assert json.loads(capsys.readouterr().out)["result"] == 3


# --- waiting for a result: Queue.result / result_async -------------------------------------------------------


def test_result_waits_for_the_job_and_returns_what_the_handler_returned(queue, live_repo):
    @queue.task("invoice")
    def invoice(n: int) -> dict:
        return {"sent": n}

    @queue.task("quiet")
    def quiet() -> None:
        pass

    job, silent = invoice.enqueue(n=7), quiet.enqueue()
    worker = Worker(live_repo, registry=queue.registry, poll_interval=0.01)
    worker.start()
    try:
        assert queue.result(job, timeout=60) == {"sent": 7}  # waits: the worker may not have claimed it yet
        assert queue.result(silent.id, timeout=60) is None  # by id; a None result is a result
    finally:
        worker.stop()
    assert asyncio.run(queue.result_async(job, timeout=0)) == {"sent": 7}


def test_result_of_a_job_that_failed_or_was_cancelled_raises_job_failed(queue, live_repo):
    @queue.task("charge", max_retries=0)
    def charge(card: int) -> None:
        raise ValueError(f"card {card} declined")

    failed, cancelled = charge.enqueue(card=77), charge.enqueue(card=1)
    live_repo.cancel(cancelled.id)
    run_all(queue, live_repo)
    with pytest.raises(JobFailed) as info:
        queue.result(failed, timeout=0)
    assert str(info.value) == f"job {failed.id} (charge) ended failed: card 77 declined"
    assert info.value.job.id == failed.id and isinstance(info.value, QueueError)
    with pytest.raises(JobFailed, match=rf"^job {cancelled.id} \(charge\) ended cancelled"):
        asyncio.run(queue.result_async(cancelled))


def test_result_of_an_id_this_database_never_had_names_the_database_not_only_a_prune(tmp_path):
    """A Queue() on another database (its own $QUEUE_DB_URL, the default sqlite:///queue.db in another folder)
    waited for an id from elsewhere and was told the job "was deleted, or pruned after it finished"."""
    queue = Queue(f"sqlite:///{tmp_path}/other.db", registry=HandlerRegistry(with_builtins=False))
    try:
        with pytest.raises(QueueError) as info:
            queue.result(42, timeout=0)
    finally:
        queue.close()
    assert f"there is no job 42 in sqlite:///{tmp_path}/other.db: " in str(info.value)
    assert "never created in this database (check the Queue's URL)" in str(info.value)


def test_result_not_there_in_time_is_a_timeout_error_and_bad_arguments_are_validation_errors(queue, live_repo):
    job = queue.enqueue("nobody-runs-this")
    with pytest.raises(TimeoutError, match=rf"^job {job.id} has not finished within 0s"):
        queue.result(job, timeout=0)
    with pytest.raises(TimeoutError):
        asyncio.run(queue.result_async(job.id, timeout=0))
    with pytest.raises(QueueError, match=r"^there is no job 999999: it was deleted, pruned after it"):
        queue.result(999999, timeout=0)
    for bad in (-1, "5", float("nan"), True):
        with pytest.raises(ValidationError) as info:
            queue.result(job, timeout=bad)
        assert info.value.field == "timeout"
    with pytest.raises(ValidationError) as info:
        queue.result("7")
    assert info.value.field == "job"
    assert queue_core.JobFailed is JobFailed and "JobFailed" in queue_core.__all__
