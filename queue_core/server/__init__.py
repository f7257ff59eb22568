"""The HTTP API (FastAPI): the guide's lifecycle endpoints and the operator routes, as problem+json on error.

``python -m queue_core.server`` (script ``queue-server``, ``server/cli.py``) serves it; ``create_app(repo)`` builds it.
"""

from .app import create_app

__all__ = ["create_app"]
