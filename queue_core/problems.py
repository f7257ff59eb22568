"""RFC 9457 problem details: every error the HTTP API returns, as ``application/problem+json``.

The server turns each failure (ours, FastAPI's, Starlette's) into one of these, so a client in any
language parses one shape: ``type``, ``title``, ``status``, ``detail``, and for bad input ``errors``
naming each field to fix.
"""

from __future__ import annotations

import json
from http import HTTPStatus

from pydantic import BaseModel, Field
from starlette.responses import Response

PROBLEM_JSON = "application/problem+json"
# Problem types: URNs, not URLs, because nothing is served at them; "about:blank" means the
# status code says it all (RFC 9457 section 4.2.1).
BLANK = "about:blank"
VALIDATION = "urn:queue-core:problem:validation-error"
MALFORMED_JSON = "urn:queue-core:problem:malformed-json"
IDEMPOTENCY_CONFLICT = "urn:queue-core:problem:idempotency-conflict"
NOT_FOUND = "urn:queue-core:problem:job-not-found"
NOT_HELD = "urn:queue-core:problem:job-not-held"
UNAUTHORIZED = "urn:queue-core:problem:unauthorized"
BODY_TOO_LARGE = "urn:queue-core:problem:body-too-large"
UNAVAILABLE = "urn:queue-core:problem:database-unavailable"
INTERNAL = "urn:queue-core:problem:internal-error"


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


def problem_response(
    status: int,
    detail: str,
    *,
    type: str = BLANK,
    title: str | None = None,
    errors: list[dict] | None = None,
    job_id: int | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
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
    content = json.dumps(body, ensure_ascii=False).encode()
    return Response(content, status_code=status, media_type=PROBLEM_JSON, headers=headers)


def problem_doc(description: str) -> dict:
    """An OpenAPI ``responses`` entry whose body is a Problem served as problem+json."""
    return {"description": description, "content": {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}}}
