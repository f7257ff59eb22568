"""``python -m queue_core.server``: the guide's lifecycle as HTTP endpoints, on FastAPI.

This module only translates HTTP: it parses the request, calls ``JobRepository`` (which owns every
rule), and maps the outcome to a status code. Every error is RFC 9457 problem+json (``problems.py``).
Endpoints are plain ``def``: FastAPI runs them in its thread pool, and peewee gives each thread its
own connection.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import math
import os
import sys
from datetime import timedelta
from typing import Annotated

import peewee as pw
from fastapi import FastAPI, Header, Path, Query
from fastapi.openapi.utils import get_openapi
from starlette.responses import JSONResponse, Response

from .. import wire
from ..cli.args import EXIT_USAGE, CLIArgumentParser, api_token, bounded_number, fail, open_for_command
from ..errors import QueueError, ValidationError
from ..store.database import default_url
from ..store.repository import JobRepository
from ..validation import validate_token
from . import problems
from .guard import RequestGuard
from .problems import EXCEPTION_HANDLERS, problem_doc, problem_response
from .schemas import (
    INT64_MAX,
    LIST_LIMIT_DOC,
    Ack,
    ClaimJob,
    ClaimMany,
    CreateJob,
    FailJob,
    Health,
    Heartbeat,
    HeartbeatResult,
    JobBatch,
    JobDetail,
    JobOut,
    JobPage,
    Reap,
    ReapResult,
    Stats,
)

DEFAULT_MAX_BODY_BYTES = 1024 * 1024

JobIdPath = Annotated[int, Path(ge=1, le=INT64_MAX, description="the job's id")]

# Documented on every route (the guard and the handlers below can return them anywhere).
COMMON_ERRORS = {
    400: problem_doc("malformed JSON body"),
    401: problem_doc("missing or wrong bearer token (when the server has one)"),
    413: problem_doc("body larger than the server's limit"),
    415: problem_doc("body sent without Content-Type: application/json"),
    422: problem_doc("a field is invalid; `errors` names each one"),
    503: problem_doc("the database is unavailable or busy; retry later"),
}
NOT_FOUND = {404: problem_doc("no job with this id")}
NOT_HELD = {409: problem_doc("the job is not running, or is held by another worker or attempt")}


class JobsJSONResponse(JSONResponse):
    """JSON with non-ASCII escaped: a payload may hold any string JSON can escape, a lone surrogate included,
    which UTF-8 cannot encode (Starlette's JSONResponse would fail with a 500)."""

    def render(self, content) -> bytes:
        return json.dumps(content, allow_nan=False, separators=(",", ":")).encode("ascii")


def job_response(job, status: int = 200) -> JSONResponse:
    return JobsJSONResponse(job.to_dict(), status_code=status)


def not_found(job_id: int) -> Response:
    return problem_response(404, f"no job with id {job_id}", type=wire.NOT_FOUND, job_id=job_id)


def not_finishable(repo: JobRepository, job_id: int, ack: Ack, verb: str) -> Response:
    """The 404 or 409 for a complete/fail/release that matched nothing, saying which it was."""
    job = repo.find_by_id(job_id)
    if job is None:
        return not_found(job_id)
    if job.status != "running":
        reason = f"it is {job.status}, not running"
    elif ack.worker_id is not None and job.worker_id != ack.worker_id:
        reason = f"it is held by worker {job.worker_id!r}, not {ack.worker_id!r}"
    else:
        reason = f"attempt {ack.attempt} is over; the job is now on attempt {job.attempt}"
    return problem_response(
        409, f"cannot {verb} job {job_id}: {reason}", type=wire.NOT_HELD, title="Job not held", job_id=job_id
    )


def seconds(field: str, value: float) -> timedelta:
    if not math.isfinite(value) or value < 0:
        raise ValidationError(field, "must be a finite number of seconds >= 0")
    try:
        return timedelta(seconds=value)
    except OverflowError:
        raise ValidationError(field, "is too large; use at most 999999999 days") from None


def idempotency_key_from(body: CreateJob, header: str | None) -> str | None:
    if header is None:
        return body.idempotency_key
    # The IETF draft sends the key as a structured-field string ("abc"); plain abc is accepted too.
    key = header[1:-1] if len(header) >= 2 and header[0] == header[-1] == '"' else header
    if body.idempotency_key is not None and body.idempotency_key != key:
        raise ValidationError("idempotency_key", "the Idempotency-Key header and the body's idempotency_key differ")
    return key


# --- the app ---------------------------------------------------------------------------------------


def create_app(
    repo_or_db: JobRepository | pw.Database,
    *,
    token: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> FastAPI:
    """The API over one repository (or a database, wrapped in one). ``token`` turns bearer auth on."""
    repo = repo_or_db if isinstance(repo_or_db, JobRepository) else JobRepository(repo_or_db)
    app = FastAPI(
        title="queue-core",
        version="1",
        summary="A persistent job queue: enqueue, claim, complete, fail.",
        exception_handlers=EXCEPTION_HANDLERS,
        responses=COMMON_ERRORS,
    )
    app.state.repo = repo
    app.add_middleware(RequestGuard, token=token, max_body_bytes=max_body_bytes)
    app.openapi = lambda: openapi_schema(app, secured=token is not None)

    @app.post(
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
        idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None,
    ) -> Response:
        job, created = repo.create(
            body.type,
            body.payload,
            priority=body.priority,
            max_retries=body.max_retries,
            idempotency_key=idempotency_key_from(body, idempotency_key),
            run_at=body.run_at,
            retry_backoff=body.retry_backoff,
        )
        return job_response(job, 201 if created else 200)

    @app.post(
        "/jobs/claim",
        status_code=200,
        response_model=None,
        responses={200: {"model": JobOut, "description": "the job, now running"}, 204: {"description": "no job due"}},
        summary="Claim the next due job",
    )
    def claim_job(body: ClaimJob) -> Response:
        job = repo.claim(body.worker_id, types=body.types)
        return Response(status_code=204) if job is None else job_response(job)

    @app.post("/jobs/claim-many", response_model=JobBatch, summary="Claim up to n due jobs at once")
    def claim_many(body: ClaimMany) -> JSONResponse:
        jobs = repo.claim_many(body.worker_id, body.n, types=body.types)
        return JobsJSONResponse({"jobs": [job.to_dict() for job in jobs]})

    @app.post("/jobs/heartbeat", response_model=HeartbeatResult, summary="Keep running jobs' claims fresh")
    def heartbeat(body: Heartbeat) -> dict:
        return {"held": repo.heartbeat(body.job_ids, worker_id=body.worker_id)}

    @app.post("/jobs/reap", response_model=ReapResult, summary="Take back stale claims")
    def reap(body: Reap) -> dict:
        return {"reaped": repo.reap_stale(seconds("older_than_seconds", body.older_than_seconds))}

    ack_docs = {200: {"model": JobOut, "description": "the job after the change"}, **NOT_FOUND, **NOT_HELD}

    def ack_route(verb: str, transition, summary: str) -> None:
        """complete and release: the same body, the same 404/409 when the transition matched nothing."""

        @app.post(
            f"/jobs/{{job_id:int}}/{verb}", name=f"{verb}_job", response_model=None, responses=ack_docs, summary=summary
        )
        def ack(job_id: JobIdPath, body: Ack | None = None) -> Response:
            body = body or Ack()
            job = transition(job_id, worker_id=body.worker_id, attempt=body.attempt)
            return not_finishable(repo, job_id, body, verb) if job is None else job_response(job)

    ack_route("complete", repo.complete, "Complete a running job")
    ack_route("release", repo.release, "Give a running job back without counting a retry (a worker shutting down)")

    @app.post(
        "/jobs/{job_id:int}/fail",
        response_model=None,
        responses=ack_docs,
        summary="Fail an attempt: back to pending while retries are left, else failed",
    )
    def fail_job(job_id: JobIdPath, body: FailJob) -> Response:
        job = repo.fail(job_id, body.error, worker_id=body.worker_id, attempt=body.attempt)
        return not_finishable(repo, job_id, body, "fail") if job is None else job_response(job)

    @app.post(
        "/jobs/{job_id:int}/retry",
        response_model=None,
        responses={
            200: {"model": JobOut, "description": "the job, pending again"},
            **NOT_FOUND,
            409: problem_doc("the job is not failed"),
        },
        summary="Retry a failed job now",
    )
    def retry_job(job_id: JobIdPath) -> Response:
        job = repo.retry(job_id)
        if job is not None:
            return job_response(job)
        found = repo.find_by_id(job_id)
        if found is None:
            return not_found(job_id)
        return problem_response(
            409,
            f"cannot retry job {job_id}: it is {found.status}; only failed jobs can be retried",
            type=wire.NOT_FAILED,
            title="Job not failed",
            job_id=job_id,
        )

    @app.get("/jobs", response_model=JobPage, summary="List jobs in id order, a page at a time")
    def list_jobs(
        status: str | None = None,
        type: str | None = None,
        limit: Annotated[int, Query(json_schema_extra=LIST_LIMIT_DOC)] = 100,
        after: Annotated[int | None, Query(ge=0, le=INT64_MAX, description="the last id of the previous page")] = None,
    ) -> JSONResponse:
        jobs = repo.list(status, type, limit=limit, after=after)
        next_after = jobs[-1].id if len(jobs) == limit else None
        return JobsJSONResponse({"jobs": [job.to_dict() for job in jobs], "next_after": next_after})

    @app.get(
        "/jobs/{job_id:int}",
        response_model=None,
        responses={200: {"model": JobDetail, "description": "the job and its failed attempts"}, **NOT_FOUND},
        summary="One job, with every failed attempt's error",
    )
    def get_job(job_id: JobIdPath) -> Response:
        job = repo.find_by_id(job_id)
        if job is None:
            return not_found(job_id)
        data = job.to_dict()
        data["errors"] = [error.to_dict() for error in repo.errors_for(job_id)]
        return JobsJSONResponse(data)

    @app.get("/stats", response_model=Stats, summary="Jobs per status and throughput")
    def stats() -> dict:
        return {"counts": repo.counts(), "per_minute_last_5m": repo.throughput()}

    @app.get("/healthz", response_model=Health, summary="Liveness and database check (no token needed)")
    def healthz() -> dict:
        repo.db.execute_sql("SELECT 1")  # a dead database becomes a 503 through on_database_unavailable
        return {"status": "ok"}

    return app


def openapi_schema(app: FastAPI, *, secured: bool) -> dict:
    """FastAPI's schema, plus the Problem schema our error responses refer to and, with a token, bearer auth."""
    if app.openapi_schema is None:
        schema = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        problem = problems.Problem.model_json_schema(ref_template="#/components/schemas/{model}")
        components.update(problem.pop("$defs", {}))
        components["Problem"] = problem
        for path in schema["paths"].values():
            for operation in path.values():
                operation["responses"].pop("default", None)
        if secured:
            schema["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
            schema["security"] = [{"bearer": []}]
            schema["paths"]["/healthz"]["get"]["security"] = []
        app.openapi_schema = schema
    return app.openapi_schema


# --- python -m queue_core.server -------------------------------------------------------------------


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def port_number(text: str) -> int:
    return bounded_number(text, int, 1, 65535, "a port number")


def build_parser() -> argparse.ArgumentParser:
    parser = CLIArgumentParser(prog="python -m queue_core.server", description="HTTP API of the job queue.")
    parser.add_argument("--db", default=None, help="database URL (default: $QUEUE_DB_URL or sqlite:///queue.db)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=port_number, default=8000, help="port to listen on, 1-65535 (default 8000)")
    token_help = "require 'Authorization: Bearer TOKEN' (default: $QUEUE_API_TOKEN)"
    parser.add_argument("--token", type=api_token, default=None, help=token_help)
    parser.add_argument("--insecure", action="store_true", help="allow a non-loopback address without a token")
    body_help = f"refuse request bodies larger than this with 413 (default {DEFAULT_MAX_BODY_BYTES})"
    parser.add_argument("--max-body-bytes", type=positive_int, default=DEFAULT_MAX_BODY_BYTES, help=body_help)
    levels = ["critical", "error", "warning", "info", "debug"]
    parser.add_argument("--log-level", default="info", choices=levels, help="(default info)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    token = args.token or os.environ.get("QUEUE_API_TOKEN") or None
    if token is not None and args.token is None:
        try:
            validate_token("QUEUE_API_TOKEN", token)  # --token was checked by argparse
        except QueueError as exc:
            return fail(str(exc))
    if token is None and not is_loopback(args.host) and not args.insecure:
        print(
            f"error: refusing to listen on {args.host} without a token: set --token or QUEUE_API_TOKEN "
            "(or pass --insecure to expose the queue to anyone who can reach it)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        db = open_for_command(args.db or default_url())
    except QueueError as exc:
        return fail(str(exc))
    import uvicorn

    app = create_app(db, token=token, max_body_bytes=args.max_body_bytes)
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    finally:
        db.close()
    return 0
