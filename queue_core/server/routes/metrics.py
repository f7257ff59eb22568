"""``GET /metrics``: the queue in the Prometheus text format, read from the database on each scrape.

Behind the server's token like every route but ``/healthz`` (a scraper sends ``Authorization: Bearer``).
"""

from __future__ import annotations

import threading
import weakref

from fastapi import APIRouter, Response

from ...metrics import CONTENT_TYPE_LATEST, SharedScrape
from .common import Repo

router = APIRouter()

# One per repository (an app's): scrapes that overlap share one set of reads (metrics.SharedScrape). It holds
# no reference to its repository, so an app's entry goes with its repository.
_SCRAPES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_SCRAPES_LOCK = threading.Lock()


def shared_scrape(repo) -> SharedScrape:
    with _SCRAPES_LOCK:
        scrape = _SCRAPES.get(repo)
        if scrape is None:
            scrape = _SCRAPES[repo] = SharedScrape()
        return scrape


@router.get(
    "/metrics",
    response_class=Response,
    summary="Prometheus metrics: jobs per queue and status, oldest pending age, stale claims, workers, rates",
    responses={200: {"content": {CONTENT_TYPE_LATEST: {}}, "description": "Prometheus text format"}},
)
def metrics(repo: Repo) -> Response:
    return Response(shared_scrape(repo).text(repo), media_type=CONTENT_TYPE_LATEST)
