"""Operations: take back stale claims, prune, planner statistics, the counts behind a dashboard, and the
liveness probe."""

from __future__ import annotations

import math
from datetime import timedelta

from fastapi import APIRouter

from ...errors import ValidationError
from ..schemas import Health, Prune, PruneResult, Reap, ReapResult, StatisticsResult, Stats
from .common import Repo

router = APIRouter()


def seconds(field: str, value: float) -> timedelta:
    if not math.isfinite(value) or value < 0:
        raise ValidationError(field, "must be a finite number of seconds >= 0")
    try:
        return timedelta(seconds=value)
    except OverflowError:
        raise ValidationError(field, "is too large; use at most 999999999 days") from None


@router.post("/jobs/reap", response_model=ReapResult, summary="Take back stale claims")
def reap(body: Reap, repo: Repo) -> dict:
    return {"reaped": repo.reap_stale(seconds("older_than_seconds", body.older_than_seconds))}


@router.post("/jobs/prune", response_model=PruneResult, summary="Delete finished jobs older than an age")
def prune(body: Prune, repo: Repo) -> dict:
    age = seconds("older_than_seconds", body.older_than_seconds)
    return {"pruned": repo.prune(age, batch=body.batch, max_batches=body.max_batches)}


@router.post(
    "/jobs/refresh-statistics",
    response_model=StatisticsResult,
    summary="Refresh the database's planner statistics of the jobs table if stale",
)
def refresh_statistics(repo: Repo) -> dict:
    """PostgreSQL plans a claim by these statistics (README, "Planner statistics and claim plans"): a worker
    over this API asks for this as a worker on the database does it itself. Nothing to do on SQLite."""
    return {"analyzed": repo.refresh_statistics()}


@router.get("/stats", response_model=Stats, summary="Jobs per status and throughput")
def stats(repo: Repo) -> dict:
    return {"counts": repo.counts(), "per_minute_last_5m": repo.throughput()}


@router.get("/healthz", response_model=Health, summary="Liveness and database check (no token needed)")
def healthz(repo: Repo) -> dict:
    repo.db.execute_sql("SELECT 1")  # a dead database becomes a 503 through on_database_unavailable
    return {"status": "ok"}
