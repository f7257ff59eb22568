"""``GET /metrics``: the queue in the Prometheus text format, read from the database on each scrape.

Behind the server's token like every route but ``/healthz`` (a scraper sends ``Authorization: Bearer``).
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from ...metrics import CONTENT_TYPE_LATEST, metrics_text
from .common import Repo

router = APIRouter()


@router.get(
    "/metrics",
    response_class=Response,
    summary="Prometheus metrics: jobs per queue and status, oldest pending age, stale claims, workers, rates",
    responses={200: {"content": {CONTENT_TYPE_LATEST: {}}, "description": "Prometheus text format"}},
)
def metrics(repo: Repo) -> Response:
    return Response(metrics_text(repo), media_type=CONTENT_TYPE_LATEST)
