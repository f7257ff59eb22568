"""``/schedules``: a periodic schedule's ticks, for a ``--api`` worker's scheduler.

A tick's job is enqueued through ``JobRepository.create_tick``, as a scheduler on the database does it: the
schedule's newest tick is recorded with the job, so a tick whose job was since pruned is not enqueued again.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from starlette.responses import Response

from ...validation import MAX_TEXT_CHARS
from ..schemas import CreateTick, JobOut
from .common import NO_ROUTE, Repo, job_response

router = APIRouter()

SchedulePath = Annotated[str, Path(description="the schedule's name", min_length=1, max_length=MAX_TEXT_CHARS)]


@router.post(
    "/schedules/{name:text}/ticks",
    status_code=201,
    response_model=None,
    responses={
        201: {"model": JobOut, "description": "the tick's job was enqueued"},
        200: {"model": JobOut, "description": "the tick's job exists already (its idempotency key); nothing new"},
        204: {"description": "this tick or a later one of the schedule was enqueued before, its job since pruned"},
        **NO_ROUTE,
    },
    summary="Enqueue a periodic schedule's job for one tick, once",
)
def create_tick(name: SchedulePath, body: CreateTick, repo: Repo) -> Response:
    made = repo.create_tick(
        name,
        body.tick,
        body.type,
        body.payload,
        idempotency_key=body.idempotency_key,
        priority=body.priority,
        max_retries=body.max_retries,
        run_at=body.run_at,
        retry_backoff=body.retry_backoff,
        queue=body.queue,
        timeout=body.timeout,
    )
    if made is None:
        return Response(status_code=204)
    job, created = made
    return job_response(job, 201 if created else 200)
