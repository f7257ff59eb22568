"""What every route module shares: the repository as a dependency, the check of the query string, the job
id in a path, JSON for jobs, and the 404 a route answers for an unknown job."""

from __future__ import annotations

import json
from typing import Annotated, get_args

from fastapi import Depends, Path, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel
from starlette.convertors import StringConvertor, register_url_convertor
from starlette.responses import JSONResponse, Response

from ... import wire
from ...store.database import DatabaseFileGone
from ...store.repository import JobRepository
from ..guard import PUBLIC_PATHS
from ..problems import problem_body, problem_doc, send_problem
from ..schemas import INT64_MAX


async def repository(request: Request) -> JobRepository:
    # async: FastAPI calls it on the event loop, not through its thread pool (no extra hop per request).
    # Before any statement: a SQLite file moved or deleted under the server took writes no one would see again.
    repo = request.app.state.repo
    if (gone := repo.file_gone()) is not None:
        raise DatabaseFileGone(gone)
    return repo


Repo = Annotated[JobRepository, Depends(repository)]


async def query_parameters(request: Request) -> None:
    """Every route's guard on its query string: a parameter the route does not take, or one given twice, is a
    422 naming it, before the route runs. Dropped in silence, ``POST /jobs/bulk/delete?dry_run=true`` deleted
    what it was meant to count, ``?worker_id=`` left an ack unfenced, and ``GET /jobs?queue=mail`` listed every
    job. The health probe, which takes none, ignores them: uptime checkers add cache-busting ones."""
    given = request.query_params
    route = request.scope.get("route")
    if not given or route is None or request.url.path in PUBLIC_PATHS:
        return
    taken = [param.alias for param in route.dependant.query_params]
    where = f"{request.method} {request.url.path}"
    errors = []
    for name in dict.fromkeys(given.keys()):
        if name not in taken:
            errors.append(_query_error(name, _not_taken(name, where, taken, body_fields(route))))
        elif (times := len(given.getlist(name))) > 1:
            errors.append(_query_error(name, f"is given {times} times; give it once"))
    if errors:
        raise RequestValidationError(errors)


async def no_body(request: Request) -> None:
    """A route that takes no body refuses one, as a body model refuses a field it does not have: ignored,
    ``POST /jobs/7/retry`` with ``{"max_retries": 10}`` retried the job with its old limit, and ``POST
    /jobs/7/cancel`` with any text cancelled it. Nothing, or an empty object (what many clients send by
    default), is no body."""
    route = request.scope.get("route")
    if route is None or route.dependant.body_params or request.url.path in PUBLIC_PATHS:
        return
    body = await request.body()
    if not body.strip():
        return
    try:
        sent = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past what the decoder reads
        sent = None
    if sent == {}:
        return
    fix = f"{request.method} {request.url.path} takes no body; send none (or {{}})"
    names = list(sent) if isinstance(sent, dict) else ["body"]
    raise RequestValidationError([{"type": "no_body", "loc": ("body", name), "msg": fix} for name in names])


def _not_taken(name: str, where: str, taken: list[str], body: set[str]) -> str:
    if name in body:
        return f"is a field of the JSON body of {where}, not a query parameter; send it in the JSON body"
    return f"is not a query parameter of {where}; it takes {', '.join(taken) if taken else 'none'}"


def _query_error(name: str, message: str) -> dict:
    return {"type": "query_parameter", "loc": ("query", name), "msg": message, "input": name}


def body_fields(route) -> set[str]:
    """The field names of the route's JSON body model (``Ack | None``: those of ``Ack``)."""
    names = set()
    for param in route.dependant.body_params:
        annotation = param.field_info.annotation
        for model in get_args(annotation) or (annotation,):
            if isinstance(model, type) and issubclass(model, BaseModel):
                names |= set(model.model_fields)
    return names


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
