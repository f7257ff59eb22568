"""A worker's side of the lifecycle: claim jobs, keep their claims alive, and complete, fail or release them.

An acknowledgement names the worker and the attempt it holds; one that matches nothing is a 404 (no such
job) or a 409 whose detail is the repository's own reason (``JobRepository.refusal``).
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter
from starlette.responses import JSONResponse, Response

from ... import wire
from ...store.repository import JobRepository
from ..problems import problem_body, problem_doc, problem_response, send_problem
from ..schemas import (
    Ack,
    CancelRequested,
    CancelRequests,
    ClaimJob,
    ClaimMany,
    CompleteAndClaim,
    CompletedAndClaimed,
    CompleteJob,
    FailJob,
    Heartbeat,
    HeartbeatResult,
    HeldAttempt,
    JobBatch,
    JobOut,
)
from .common import NO_ROUTE, NOT_FOUND, JobIdPath, JobsJSONResponse, Repo, job_response, not_found, not_found_problem

router = APIRouter()

NOT_HELD = {409: problem_doc("the job is not running, or is held by another worker or attempt")}
ACK_DOCS = {200: {"model": JobOut, "description": "the job after the change"}, **NOT_FOUND, **NOT_HELD}


def refused(repo: JobRepository, job_id: int, ack: Ack, verb: str) -> Response:
    """The 404 or 409 for a complete/fail/release that matched nothing, saying which it was."""
    return send_problem(refusal(repo, job_id, ack, verb))


def refusal(repo: JobRepository, job_id: int, ack: Ack | CompleteAndClaim, verb: str) -> dict:
    """The problem of an ack that matched nothing: 404 (no such job) or 409 with the repository's reason."""
    if repo.find_by_id(job_id) is None:
        return not_found_problem(job_id)
    reason = repo.refusal(job_id, worker_id=ack.worker_id, attempt=ack.attempt)
    # None: the job became ackable after the ack missed it (a pending job claimed in between).
    reason = reason or "it was not held when the request arrived"
    return problem_body(
        409, f"cannot {verb} job {job_id}: {reason}", type=wire.NOT_HELD, title="Job not held", job_id=job_id
    )


@router.post(
    "/jobs/claim",
    status_code=200,
    response_model=None,
    responses={200: {"model": JobOut, "description": "the job, now running"}, 204: {"description": "no job due"}},
    summary="Claim the next due job",
)
def claim_job(body: ClaimJob, repo: Repo) -> Response:
    job = repo.claim(body.worker_id, types=body.types, queues=body.queues)
    return Response(status_code=204) if job is None else job_response(job)


@router.post("/jobs/claim-many", response_model=JobBatch, summary="Claim up to n due jobs at once")
def claim_many(body: ClaimMany, repo: Repo) -> JSONResponse:
    jobs = repo.claim_many(body.worker_id, body.n, types=body.types, queues=body.queues)
    return JobsJSONResponse({"jobs": [job.to_dict() for job in jobs]})


@router.post(
    "/jobs/cancel-requests", response_model=CancelRequested, summary="Which of a worker's running jobs to cancel"
)
def cancel_requests(body: CancelRequests, repo: Repo) -> dict:
    return {"ids": repo.cancel_requests(body.job_ids, worker_id=body.worker_id)}


@router.post(
    "/jobs/{job_id:int}/cancelled",
    response_model=None,
    responses=ACK_DOCS,
    summary="Acknowledge a cancel: the handler stopped, the job it holds ends cancelled",
)
def mark_cancelled(job_id: JobIdPath, body: HeldAttempt, repo: Repo) -> Response:
    job = repo.mark_cancelled(job_id, worker_id=body.worker_id, attempt=body.attempt)
    if job is not None:
        return job_response(job)
    if repo.find_by_id(job_id) is None:
        return not_found(job_id)
    reason = repo.refusal(job_id, worker_id=body.worker_id, attempt=body.attempt) or "no cancel was requested"
    return problem_response(
        409, f"cannot cancel job {job_id}: {reason}", type=wire.NOT_HELD, title="Job not held", job_id=job_id
    )


@router.post(
    "/jobs/heartbeat",
    response_model=HeartbeatResult,
    response_model_exclude_none=True,  # without attempts asked, the answer is {held} as it always was
    summary="Keep running jobs' claims fresh",
)
def heartbeat(body: Heartbeat, repo: Repo) -> dict:
    if body.attempts is None:
        return {"held": repo.heartbeat(body.job_ids, worker_id=body.worker_id)}
    pairs = repo.heartbeat(body.job_ids, worker_id=body.worker_id, attempts=body.attempts)
    return {"held": [job_id for job_id, _ in pairs], "attempts": [attempt for _, attempt in pairs]}


def ack_route(verb: str, transition: Callable, summary: str) -> None:
    """complete and release: the same body, the same 404/409 when the transition matched nothing."""

    @router.post(
        f"/jobs/{{job_id:int}}/{verb}", name=f"{verb}_job", response_model=None, responses=ACK_DOCS, summary=summary
    )
    def ack(job_id: JobIdPath, repo: Repo, body: Ack | None = None) -> Response:
        body = body or Ack()
        job = transition(repo, job_id, worker_id=body.worker_id, attempt=body.attempt)
        return refused(repo, job_id, body, verb) if job is None else job_response(job)


@router.post(
    "/jobs/{job_id:int}/complete",
    name="complete_job",
    response_model=None,
    responses=ACK_DOCS,
    summary="Complete a running job",
)
def complete_job(job_id: JobIdPath, repo: Repo, body: CompleteJob | None = None) -> Response:
    body = body or CompleteJob()
    job = repo.complete(job_id, worker_id=body.worker_id, attempt=body.attempt, result=body.result)
    return refused(repo, job_id, body, "complete") if job is None else job_response(job)


ack_route("release", JobRepository.release, "Give a running job back without counting a retry (a worker shutting down)")


@router.post(
    "/jobs/{job_id:int}/fail",
    response_model=None,
    responses=ACK_DOCS,
    summary="Fail an attempt: back to pending while retries are left, else failed",
)
def fail_job(job_id: JobIdPath, body: FailJob, repo: Repo) -> Response:
    job = repo.fail(
        job_id, body.error, worker_id=body.worker_id, attempt=body.attempt, traceback=body.traceback, final=body.final
    )
    return refused(repo, job_id, body, "fail") if job is None else job_response(job)


COMPLETE_AND_CLAIM_DOC = """200 whether or not the completion was applied: the claim is made either way, and a
4xx would lose the job it claimed (left running for this worker until reaped). A refused completion has a null
`completed` and, in `refused`, the problem `POST /jobs/{id}/complete` would have answered: status 404 and type
`urn:queue-core:problem:job-not-found` for an unknown id, 409 and `urn:queue-core:problem:job-not-held` for a
job not running, or held by another worker or attempt. A null `claimed` is nothing due."""


@router.post(
    "/jobs/{job_id:int}/complete-and-claim",
    response_model=CompletedAndClaimed,
    responses=NO_ROUTE,
    summary="Complete a job this worker holds and claim its next one, in one step",
    description=COMPLETE_AND_CLAIM_DOC,
)
def complete_and_claim(job_id: JobIdPath, body: CompleteAndClaim, repo: Repo) -> JSONResponse:
    done, claimed = repo.complete_and_claim(
        job_id,
        body.types,
        worker_id=body.worker_id,
        attempt=body.attempt,
        queues=body.queues,
        result=body.result,
    )
    # Why it was refused is read only then (two reads), so a worker's every-job round trip costs nothing more.
    why = None if done is not None else refusal(repo, job_id, body, "complete")
    return JobsJSONResponse({"completed": _as_dict(done), "claimed": _as_dict(claimed), "refused": why})


def _as_dict(job) -> dict | None:
    return None if job is None else job.to_dict()
