"""The HTTP API as a FastAPI app: the routes of ``routes/``, problem+json errors, the guard, the OpenAPI schema.

The routes only translate HTTP: they parse the request, call ``JobRepository`` (which owns every rule),
and map the outcome to a status code. Every error is RFC 9457 problem+json (``problems.py``). Routes
are plain ``def``: FastAPI runs them in its thread pool, and peewee gives each thread its own connection.
``python -m queue_core.server`` (``cli.py``) serves the app.
"""

from __future__ import annotations

import peewee as pw
from fastapi import Depends, FastAPI
from fastapi.openapi.utils import get_openapi

from ..store.repository import JobRepository
from . import problems
from .guard import RequestGuard
from .problems import EXCEPTION_HANDLERS, problem_doc
from .routes import ROUTERS
from .routes.common import no_body, query_parameters

DEFAULT_MAX_BODY_BYTES = 1024 * 1024

# Documented on every route (the guard and the exception handlers can return them anywhere).
COMMON_ERRORS = {
    400: problem_doc("malformed JSON body, or a path or query string that is not UTF-8 once percent-decoded"),
    401: problem_doc("missing or wrong bearer token (when the server has one)"),
    403: problem_doc(
        "a write sent with the read-only token; or, to a server without a token, a request from a web page of"
        " another site (or, on loopback, one not addressed to 127.0.0.1, localhost or [::1])"
    ),
    413: problem_doc("body larger than the server's limit"),
    415: problem_doc("body sent without Content-Type: application/json"),
    422: problem_doc("a field is invalid; `errors` names each one"),
    503: problem_doc(
        "the database is unavailable or busy; retry later. Or its SQLite file was moved or deleted while the server"
        " ran: put it back, or restart the server"
    ),
    507: problem_doc("the disk under the (SQLite) database is full; nothing was written; retry once space is freed"),
}


def create_app(
    repo_or_db: JobRepository | pw.Database,
    *,
    token: str | None = None,
    read_token: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    loopback: bool = False,
) -> FastAPI:
    """The API over one repository (or a database, wrapped in one). ``token`` turns bearer auth on;
    ``read_token`` (with a ``token``) may only read. Without a token a browser's page of another site is
    refused, and with ``loopback`` (it listens there) so is a request not addressed to a loopback name."""
    if read_token is not None and token is None:
        raise ValueError("a read token needs a token for writes: without one, writes would need no token at all")
    app = FastAPI(
        title="queue-core",
        version="1",
        summary="A persistent job queue: enqueue, claim, complete, fail.",
        exception_handlers=EXCEPTION_HANDLERS,
        responses=COMMON_ERRORS,
        # A query parameter a route does not take, or a body sent to one that takes none, is a 422.
        dependencies=[Depends(query_parameters), Depends(no_body)],
    )
    # The routes reach the repository through this (routes.common.repository).
    app.state.repo = repo_or_db if isinstance(repo_or_db, JobRepository) else JobRepository(repo_or_db)
    for router in ROUTERS:
        app.include_router(router)
    app.add_middleware(
        RequestGuard, token=token, read_token=read_token, max_body_bytes=max_body_bytes, loopback=loopback
    )
    app.openapi = lambda: openapi_schema(app, secured=token is not None)
    return app


def openapi_schema(app: FastAPI, *, secured: bool) -> dict:
    """FastAPI's schema, plus the Problem schema our error responses refer to and, with a token, bearer auth."""
    if app.openapi_schema is None:
        schema = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
        add_problem_schema(schema)
        for path in schema["paths"].values():
            for operation in path.values():
                # FastAPI's generic "default" entry: every error is a documented problem instead.
                operation["responses"].pop("default", None)
        if secured:
            add_bearer_auth(schema)
        app.openapi_schema = schema
    return app.openapi_schema


def add_problem_schema(schema: dict) -> None:
    """The ``Problem`` component that every ``problem_doc`` response refers to, with the models it nests."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    problem = problems.Problem.model_json_schema(ref_template="#/components/schemas/{model}")
    components.update(problem.pop("$defs", {}))
    components["Problem"] = problem


def add_bearer_auth(schema: dict) -> None:
    """Bearer auth on every operation but ``/healthz``, which the guard leaves open for probes."""
    schema["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
    schema["security"] = [{"bearer": []}]
    schema["paths"]["/healthz"]["get"]["security"] = []
