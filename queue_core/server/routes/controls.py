"""``/queues`` and ``/workers``: pause and resume a queue, list queues, and the worker registry (a remote
worker registers, reports on each heartbeat and marks its stop; operators list the workers and their state)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from starlette.responses import Response

from ... import wire
from ...validation import MAX_TEXT_CHARS
from ..problems import problem_doc, problem_response
from ..schemas import HeldClaims, QueueList, QueueOut, RegisterWorker, WorkerList, WorkerSeen
from .common import NO_ROUTE, Repo

router = APIRouter()

QueuePath = Annotated[
    str, Path(description="the queue's name (it need not have jobs yet)", min_length=1, max_length=MAX_TEXT_CHARS)
]
WorkerPath = Annotated[str, Path(description="the worker's id", min_length=1, max_length=MAX_TEXT_CHARS)]


@router.get("/queues", response_model=QueueList, summary="Queues: paused or not, jobs per status, latency")
def list_queues(repo: Repo) -> dict:
    return {"queues": [state.to_dict() for state in repo.queues()]}


@router.post(
    "/queues/{name:text}/pause",
    response_model=QueueOut,
    responses=NO_ROUTE,
    summary="Pause a queue: no worker claims its jobs",
)
def pause_queue(name: QueuePath, repo: Repo) -> dict:
    return repo.pause_queue(name).to_dict()


@router.post("/queues/{name:text}/resume", response_model=QueueOut, responses=NO_ROUTE, summary="Resume a paused queue")
def resume_queue(name: QueuePath, repo: Repo) -> dict:
    return repo.resume_queue(name).to_dict()


@router.get("/workers", response_model=WorkerList, summary="The worker registry, each with its state")
def list_workers(repo: Repo) -> dict:
    return {"workers": [worker.to_dict() for worker in repo.workers()]}


@router.post(
    "/workers/{worker_id:text}/register",
    status_code=204,
    responses=NO_ROUTE,
    summary="A starting worker registers itself",
)
def register_worker(worker_id: WorkerPath, body: RegisterWorker, repo: Repo) -> Response:
    repo.register_worker(
        worker_id,
        host=body.host,
        pid=body.pid,
        queues=body.queues,
        concurrency=body.concurrency,
        stale_after=body.stale_after,
        types=body.types,
    )
    return Response(status_code=204)


# A heartbeat or stop of a worker with no row: answered 204, it was recorded nowhere and the worker never knew.
NOT_REGISTERED = {
    404: problem_doc(
        "no worker registered with this id (never registered, or its row was pruned): register it first; "
        "or a malformed path"
    )
}


def not_registered(worker_id: str) -> Response:
    return problem_response(
        404,
        f"no worker registered with id {worker_id!r} (never registered, or its row was pruned): nothing was "
        f"recorded; register it first with POST /workers/{{id}}/register",
        type=wire.WORKER_NOT_REGISTERED,
        title="Worker not registered",
    )


@router.post(
    "/workers/{worker_id:text}/seen",
    status_code=204,
    responses=NOT_REGISTERED,
    summary="A worker's heartbeat, with its counters",
)
def worker_seen(worker_id: WorkerPath, body: WorkerSeen, repo: Repo) -> Response:
    if not repo.worker_seen(worker_id, running=body.running, completed=body.completed, failed=body.failed):
        return not_registered(worker_id)
    return Response(status_code=204)


@router.get("/workers/{worker_id:text}/held", response_model=HeldClaims, summary="The running jobs a worker holds")
def held_claims(worker_id: WorkerPath, repo: Repo) -> dict:
    pairs = repo.held_claims(worker_id)  # as the heartbeat's answer: two lists (a pair is no OpenAPI 3.0 schema)
    return {"held": [job_id for job_id, _ in pairs], "attempts": [attempt for _, attempt in pairs]}


@router.post(
    "/workers/{worker_id:text}/stopped", status_code=204, responses=NOT_REGISTERED, summary="A worker's clean stop"
)
def worker_stopped(worker_id: WorkerPath, repo: Repo) -> Response:
    if not repo.worker_stopped(worker_id):
        return not_registered(worker_id)
    return Response(status_code=204)
