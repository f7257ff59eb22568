"""``/jobs``: enqueue a job, list them a page at a time, read one with its errors, retry a failed or cancelled
one, cancel one."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Request
from starlette.responses import JSONResponse, Response

from ... import wire
from ...errors import ValidationError
from ..problems import problem_doc, problem_response
from ..schemas import INT64_MAX, LIST_LIMIT_DOC, CreateJob, JobDetail, JobOut, JobPage, QueryInt
from .common import NOT_FOUND, JobIdPath, JobsJSONResponse, Repo, job_response, not_found

router = APIRouter()


SF_ESCAPE = re.compile(r'\\(["\\])')


async def idempotency_header(
    request: Request,
    idempotency_key: Annotated[
        str | None, Header(alias="Idempotency-Key", description="the key, instead of the body's idempotency_key")
    ] = None,
) -> str | None:
    """The Idempotency-Key header, given at most once: of two, the first was used in silence (a duplicated
    query parameter is a 422 already)."""
    given = len(request.headers.getlist("idempotency-key"))
    if given > 1:
        raise ValidationError("idempotency_key", f"the Idempotency-Key header is given {given} times; give it once")
    return idempotency_key


def idempotency_key_from(body: CreateJob, header: str | None) -> str | None:
    if header is None:
        return body.idempotency_key
    try:
        # HTTP carries a header's bytes; Starlette reads them as Latin-1, so a UTF-8 key ("été") arrived as
        # "Ã©tÃ©" and differed from the same key in the body.
        header = header.encode("latin-1").decode("utf-8")
    except UnicodeError:
        raise ValidationError("idempotency_key", "the Idempotency-Key header must be UTF-8 text") from None
    # The IETF draft sends the key as a structured-field string ("abc", with \" and \\ escaped); plain abc too.
    quoted = len(header) >= 2 and header[0] == header[-1] == '"'
    key = SF_ESCAPE.sub(r"\1", header[1:-1]) if quoted else header
    if body.idempotency_key is not None and body.idempotency_key != key:
        raise ValidationError("idempotency_key", "the Idempotency-Key header and the body's idempotency_key differ")
    return key


@router.post(
    "/jobs",
    status_code=201,
    response_model=None,
    responses={
        201: {"model": JobOut, "description": "the job was enqueued"},
        200: {"model": JobOut, "description": "a job with this idempotency key already exists; nothing new"},
    },
    summary="Enqueue a job",
)
def create_job(
    body: CreateJob,
    repo: Repo,
    idempotency_key: Annotated[str | None, Depends(idempotency_header)],
) -> Response:
    job, created = repo.create(
        body.type,
        body.payload,
        priority=body.priority,
        max_retries=body.max_retries,
        idempotency_key=idempotency_key_from(body, idempotency_key),
        run_at=body.run_at,
        retry_backoff=body.retry_backoff,
        queue=body.queue,
        timeout=body.timeout,
    )
    return job_response(job, 201 if created else 200)


@router.post(
    "/jobs/{job_id:int}/retry",
    response_model=None,
    responses={
        200: {"model": JobOut, "description": "the job, pending again"},
        **NOT_FOUND,
        409: problem_doc("the job is neither failed nor cancelled"),
    },
    summary="Retry a failed or cancelled job now",
)
def retry_job(job_id: JobIdPath, repo: Repo) -> Response:
    return acted_on(
        repo,
        job_id,
        repo.retry(job_id),
        lambda status: f"cannot retry job {job_id}: it is {status}; only failed or cancelled jobs can be retried",
        type=wire.NOT_FAILED,
        title="Job not failed",
    )


@router.post(
    "/jobs/{job_id:int}/cancel",
    response_model=None,
    responses={
        200: {"model": JobOut, "description": "pending: now cancelled; running: still running, cancel requested"},
        **NOT_FOUND,
        409: problem_doc("the job is already completed, failed or cancelled"),
    },
    summary="Cancel a job: a pending one at once, a running one through its worker",
)
def cancel_job(job_id: JobIdPath, repo: Repo) -> Response:
    return acted_on(
        repo,
        job_id,
        repo.cancel(job_id),
        lambda status: f"cannot cancel job {job_id}: it is already {status}",
        type=wire.ALREADY_FINAL,
        title="Job already final",
    )


def acted_on(repo, job_id: int, job, refusal, *, type: str, title: str) -> Response:
    """An operator action's answer: the job it changed, else 404 for an unknown id or a 409 saying why not."""
    if job is not None:
        return job_response(job)
    found = repo.find_by_id(job_id)
    if found is None:
        return not_found(job_id)
    return problem_response(409, refusal(found.status), type=type, title=title, job_id=job_id)


@router.get("/jobs", response_model=JobPage, summary="List jobs in id order, a page at a time")
def list_jobs(
    repo: Repo,
    status: str | None = None,
    type: str | None = None,
    limit: Annotated[QueryInt, Query(json_schema_extra=LIST_LIMIT_DOC)] = 100,
    after: Annotated[QueryInt | None, Query(ge=0, le=INT64_MAX, description="the last id of the previous page")] = None,
) -> JSONResponse:
    jobs = repo.list(status, type, limit=limit, after=after)
    next_after = jobs[-1].id if len(jobs) == limit else None
    return JobsJSONResponse({"jobs": [job.to_dict() for job in jobs], "next_after": next_after})


@router.get(
    "/jobs/{job_id:int}",
    response_model=None,
    responses={200: {"model": JobDetail, "description": "the job and its failed attempts"}, **NOT_FOUND},
    summary="One job, with every failed attempt's error",
)
def get_job(job_id: JobIdPath, repo: Repo) -> Response:
    job = repo.find_by_id(job_id)
    if job is None:
        return not_found(job_id)
    data = job.to_dict()
    data["errors"] = [error.to_dict() for error in repo.errors_for(job_id)]
    return JobsJSONResponse(data)
