"""``POST /jobs/bulk/{action}``: retry, cancel or delete every job a query (and a selection) names, in
batches as ``JobRepository.bulk`` does them; ``dry_run`` says how many it would touch and changes none."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path

from ...errors import ValidationError
from ..problems import problem_doc
from ..schemas import BulkRequest, BulkResult
from .common import Repo

router = APIRouter()

# A Literal, not a pattern: a bad action's 422 says "Input should be 'retry', 'cancel' or 'delete'", not a regex.
ActionPath = Annotated[Literal["retry", "cancel", "delete"], Path(description="retry, cancel or delete")]


@router.post(
    "/jobs/bulk/{action}",
    response_model=BulkResult,
    responses={422: problem_doc("a bad query, status or action: `errors` names it; nothing was changed")},
    summary="Retry, cancel or delete every job a query matches (dry_run: only count them)",
)
def bulk_action(action: ActionPath, body: BulkRequest, repo: Repo) -> dict:
    if not body.query.strip() and body.status is None and body.ids is None:
        # Not "every job": a client that lost its query must not delete the whole table.
        raise ValidationError("query", f"is empty: name the jobs to {action}, e.g. status:failed type:send-invoice")
    plan = repo.plan_bulk(action, body.query, status=body.status, ids=body.ids)
    result = {"action": action, "query": plan.query, "description": plan.describe(), "dry_run": body.dry_run}
    if body.dry_run:
        return {**result, "planned": plan.count, "changed": 0, "skipped": 0}
    outcome = repo.apply_bulk(plan)
    return {**result, "planned": outcome.planned, "changed": outcome.changed, "skipped": outcome.skipped}
