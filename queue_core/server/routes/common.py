"""What every route module shares: the repository as a dependency, the job id in a path, JSON for jobs,
and the 404 a route answers for an unknown job."""

from __future__ import annotations

import json
from typing import Annotated

from fastapi import Depends, Path, Request
from starlette.convertors import StringConvertor, register_url_convertor
from starlette.responses import JSONResponse, Response

from ... import wire
from ...store.repository import JobRepository
from ..problems import problem_body, problem_doc, send_problem
from ..schemas import INT64_MAX


async def repository(request: Request) -> JobRepository:
    # async: FastAPI calls it on the event loop, not through its thread pool (no extra hop per request).
    return request.app.state.repo


Repo = Annotated[JobRepository, Depends(repository)]
JobIdPath = Annotated[int, Path(ge=1, le=INT64_MAX, description="the job's id")]

NOT_FOUND = {404: problem_doc("no job with this id")}
# A path that names no route (an id that is not a whole number, an empty name) is a 404 as well.
NO_ROUTE = {404: problem_doc("no such route: the path's id or name is empty or malformed")}


class TextConvertor(StringConvertor):
    """``{name:text}``: any non-empty text, ``/`` and line breaks included, so a queue name or worker id
    (sent percent-encoded) always reaches the repository's own validation, which answers 422 for a bad one."""

    regex = r"[\s\S]+"


register_url_convertor("text", TextConvertor())


class JobsJSONResponse(JSONResponse):
    """JSON with non-ASCII escaped: a payload may hold any string JSON can escape, a lone surrogate included,
    which UTF-8 cannot encode (Starlette's JSONResponse would fail with a 500)."""

    def render(self, content) -> bytes:
        return json.dumps(content, allow_nan=False, separators=(",", ":")).encode("ascii")


def job_response(job, status: int = 200) -> JSONResponse:
    return JobsJSONResponse(job.to_dict(), status_code=status)


def not_found(job_id: int) -> Response:
    return send_problem(not_found_problem(job_id))


def not_found_problem(job_id: int) -> dict:
    return problem_body(404, f"no job with id {job_id}", type=wire.NOT_FOUND, job_id=job_id)
