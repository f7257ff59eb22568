"""RFC 9457 problem details: every error the HTTP API returns, as ``application/problem+json``.

The server turns each failure (ours, FastAPI's, Starlette's) into one of these, so a client in any
language parses one shape: ``type``, ``title``, ``status``, ``detail``, and for bad input ``errors``
naming each field to fix.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from http import HTTPStatus

import peewee as pw
from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.routing import Match

from ..errors import IdempotencyConflict, ValidationError
from ..store.database import DatabaseFileGone, DiskFullError, driver_reason
from ..store.postgres import refusal
from ..wire import BLANK, DISK_FULL, IDEMPOTENCY_CONFLICT, MALFORMED_JSON, PROBLEM_JSON, UNAVAILABLE, VALIDATION

logger = logging.getLogger("queue_core.server")


class FieldError(BaseModel):
    field: str = Field(description="the input to fix, e.g. 'priority' or 'body.payload'")
    message: str


class Problem(BaseModel):
    """An RFC 9457 problem details object."""

    type: str = Field(description="a URI naming the kind of problem")
    title: str = Field(description="short summary of the kind of problem")
    status: int = Field(description="the HTTP status code")
    detail: str = Field(description="what went wrong this time, and what to do about it")
    errors: list[FieldError] | None = Field(default=None, description="one entry per bad field (422 only)")
    job_id: int | None = Field(default=None, description="the job concerned, when there is one")


def problem_response(status: int, detail: str, *, headers: dict[str, str] | None = None, **fields) -> Response:
    """The problem ``problem_body`` makes of these (``type``, ``title``, ``errors``, ``job_id``), sent."""
    return send_problem(problem_body(status, detail, **fields), headers)


def problem_body(
    status: int,
    detail: str,
    *,
    type: str = BLANK,
    title: str | None = None,
    errors: list[dict] | None = None,
    job_id: int | None = None,
) -> dict:
    """A ``Problem`` as a dict: what ``problem_response`` sends, or what a 200 body reports of one part of a
    request that was refused while the rest was done (``complete-and-claim``)."""
    body: dict = {
        "type": type,
        "title": title or HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
    }
    if errors is not None:
        body["errors"] = errors
    if job_id is not None:
        body["job_id"] = job_id
    return body


def send_problem(body: dict, headers: dict[str, str] | None = None) -> Response:
    """``body`` (a ``problem_body``) as the response of its status."""
    content = json.dumps(body).encode("ascii")  # escaped: the detail may quote text UTF-8 cannot encode
    return Response(content, status_code=body["status"], media_type=PROBLEM_JSON, headers=headers)


def problem_doc(description: str) -> dict:
    """An OpenAPI ``responses`` entry whose body is a Problem served as problem+json."""
    return {"description": description, "content": {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}}}


# --- exception handlers: each failure FastAPI, Starlette, peewee or the repository raises, as a problem ---


def field_name(loc) -> str:
    """('body', 'payload') -> 'payload'; ('query', 'limit') -> 'limit'. The member of a union pydantic tried
    (``list[function-after[check(), str]]``, ``literal['*']``) is its own part of the location, and no name
    a client sent: left out."""
    parts = [str(part) for part in loc if not _union_member(part)]
    if len(parts) > 1 and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    return ".".join(parts)


def _union_member(part) -> bool:
    return isinstance(part, str) and "[" in part


def _field_errors(errors: list) -> list[dict]:
    """One entry per error, by field. A value that fits no member of a union gets an error from each: the
    errors of a literal member (``Input should be '*'``) are left out when another member says more about
    that field (``queues`` of ``queues.0``)."""
    named = [(field_name(error.get("loc", ())), _literal_member(error), error) for error in errors]
    said = {field.split(".")[0] for field, literal, _ in named if not literal}
    return [
        {"field": field, "message": _message(error)}
        for field, literal, error in named
        if not (literal and field.split(".")[0] in said)
    ]


# A route's whole JSON body missing (``curl -X POST`` without ``-d``): pydantic's "Field required" named no fix.
NO_BODY = (
    "is missing: send this route's fields as a JSON object with 'Content-Type: application/json' (see /openapi.json)"
)


def _message(error: dict) -> str:
    if error.get("type") == "missing" and tuple(error.get("loc", ())) == ("body",):
        return NO_BODY
    return error.get("msg", "invalid")


def _literal_member(error: dict) -> bool:
    return any(isinstance(part, str) and part.startswith("literal[") for part in error.get("loc", ()))


def on_request_validation_error(request: Request, exc: RequestValidationError) -> Response:
    errors = exc.errors()
    if any(error.get("type") == "json_invalid" for error in errors):
        error = errors[0]
        where = error.get("ctx", {}).get("error", "invalid JSON")
        return problem_response(
            400, f"the body is not valid JSON: {where} at position {error['loc'][-1]}", type=MALFORMED_JSON
        )
    if any(tuple(error.get("loc", ())) == ("body",) and isinstance(error.get("input"), bytes) for error in errors):
        return problem_response(415, "send the body as JSON with 'Content-Type: application/json'")
    fields = _field_errors(errors)
    detail = "; ".join(f"{f['field']}: {f['message']}" for f in fields)
    return problem_response(422, detail, type=VALIDATION, title="Invalid request", errors=fields)


def on_validation_error(request: Request, exc: ValidationError) -> Response:
    errors = [{"field": exc.field, "message": exc.message}]
    return problem_response(422, str(exc), type=VALIDATION, title="Invalid request", errors=errors)


def on_idempotency_conflict(request: Request, exc: IdempotencyConflict) -> Response:
    # 422, as the IETF Idempotency-Key draft says for a reused key with another payload.
    return problem_response(
        422, str(exc), type=IDEMPOTENCY_CONFLICT, title="Idempotency key reused", job_id=exc.existing.id
    )


def on_http_error(request: Request, exc: HTTPException) -> Response:
    detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    headers = exc.headers
    if exc.status_code == 404 and detail == "Not Found":
        detail = f"no route {request.url.path}{job_id_hint(request.url.path)}; see /openapi.json for the API"
    elif exc.status_code == 405:
        allowed = allowed_methods(request)
        headers = {**(exc.headers or {}), "Allow": allowed}
        detail = f"{request.method} is not allowed on {request.url.path}; allowed: {allowed}"
    elif exc.status_code == 400:
        unreadable = unreadable_body(exc.__cause__)
        if unreadable is not None:
            return problem_response(400, unreadable, type=MALFORMED_JSON)
        detail = f"the body could not be parsed ({detail.lower()}); send a JSON object"
    return problem_response(exc.status_code, detail, headers=headers)


# /jobs/ID and /jobs/ID/VERB whose ID is not ASCII digits: no route matches it (the id's route takes only those).
NOT_A_JOB_ID = re.compile(r"/jobs/(?![0-9]+(?:/|$))[^/]+(?:/[^/]+)?/?")


def job_id_hint(path: str) -> str:
    """For a 404 whose path names a job by something else than digits (``/jobs/１``, ``/jobs/1_000``): what
    a job id in a path is. A segment with no digit of any script (``/jobs/bulk``, ``/jobs/claims``) is a
    mistyped route, not an id: no hint."""
    meant_a_number = NOT_A_JOB_ID.fullmatch(path) and any(c.isdigit() for c in path.split("/")[2])
    return "; a job's id in a path is ASCII digits 0-9, e.g. /jobs/42" if meant_a_number else ""


def unreadable_body(cause: BaseException | None) -> str | None:
    """What to fix in a body FastAPI could not decode for a reason other than its JSON syntax (its 400 says
    only "There was an error parsing the body"), or None when the cause is none of these."""
    if isinstance(cause, UnicodeDecodeError):
        return f"the body is not UTF-8 text (byte {cause.start}: {cause.reason}); send JSON encoded as UTF-8"
    if isinstance(cause, RecursionError):
        return "the body nests arrays and objects too deep to be read; flatten it (a payload nests at most 64 levels)"
    if isinstance(cause, ValueError) and "digits" in str(cause):
        # Python's limit on the digits of an integer it converts from text (4,300 by default).
        return (
            f"a number in the body has more than {sys.get_int_max_str_digits()} digits, too long to be read; "
            "send a number that long as a string"
        )
    return None


def allowed_methods(request: Request) -> str:
    """Every method some route serves at this path: Starlette's own Allow names only the first route's, and
    HEAD where GET is."""
    methods = set()
    for route in endpoint_routes(request.app.router.routes):
        match, _ = route.matches({**request.scope, "method": "GET"})
        if match != Match.NONE and getattr(route, "methods", None):
            methods |= route.methods
    if "GET" in methods:
        methods.add("HEAD")  # the guard answers HEAD on every GET route
    return ", ".join(sorted(methods))


def endpoint_routes(routes):
    """The routes that serve requests, through included routers: recent FastAPI keeps an included router
    as one node (holding ``original_router``) instead of copying its routes into the app's list. Our
    routers are included without a prefix, so their routes' paths are the app's paths."""
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is None:
            yield route
        else:
            yield from endpoint_routes(included.routes)


def on_database_unavailable(request: Request, exc: pw.DatabaseError) -> Response:
    why = refusal(exc)
    # The driver's first line: libpq's own words run on over several lines, which broke the log's one-line records.
    reason = driver_reason(exc) + (f" ({why})" if why else "")
    logger.warning("database error on %s %s: %s", request.method, request.url.path, reason)
    if why:
        # A read-only or unprivileged role, a statement timeout: "retry shortly" would not mend it, and the
        # client's operator needs to know what to ask for.
        return problem_response(
            503, f"the database refused the request: {why}", type=UNAVAILABLE, headers={"Retry-After": "10"}
        )
    return problem_response(
        503,
        "the database is unavailable or busy; retry shortly",
        type=UNAVAILABLE,
        headers={"Retry-After": "1"},
    )


def on_database_file_gone(request: Request, exc: DatabaseFileGone) -> Response:
    logger.error("%s %s refused: %s", request.method, request.url.path, exc)
    return problem_response(
        503,
        f"{exc} while the server ran: nothing was read or written; restart the server to open the database at "
        "that path (or put the file back where it was)",
        type=UNAVAILABLE,
        title="Database file moved or deleted",
        headers={"Retry-After": "10"},
    )


def on_disk_full(request: Request, exc: DiskFullError) -> Response:
    logger.warning("disk full on %s %s: %s", request.method, request.url.path, exc)
    return problem_response(507, str(exc), type=DISK_FULL, headers={"Retry-After": "10"})


def on_data_error(request: Request, exc: pw.DataError) -> Response:
    # e.g. a NUL character, which PostgreSQL refuses to store or compare.
    return problem_response(
        422, f"a value cannot be stored by the database: {str(exc).splitlines()[0]}", type=VALIDATION
    )


EXCEPTION_HANDLERS = {
    RequestValidationError: on_request_validation_error,
    ValidationError: on_validation_error,
    IdempotencyConflict: on_idempotency_conflict,
    HTTPException: on_http_error,
    pw.DataError: on_data_error,
    # Before the 503 below: each is a pw.OperationalError too (the most specific handler wins).
    DatabaseFileGone: on_database_file_gone,
    DiskFullError: on_disk_full,
    # Any other database error (PostgreSQL's InternalError, say) is trouble on the database's side too;
    # the most specific handler wins, so DataError keeps its 422.
    pw.DatabaseError: on_database_unavailable,
    pw.InterfaceError: on_database_unavailable,
}
