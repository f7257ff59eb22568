"""A handler's return value as the job's ``result`` (issue 14, item 5): JSON text, at most ``MAX_RESULT_BYTES``.

Pure (no database): the worker checks a value before it acknowledges, so a value that cannot be stored
fails the attempt with a message that says why; the repository checks again for callers of its own.
"""

from __future__ import annotations

import json

from .errors import ValidationError

MAX_RESULT_BYTES = 64 * 1024  # a result is a summary for whoever reads the job, not a blob store


def encode_result(value) -> str | None:
    """``value`` as compact JSON text (None stays None); a ``ValidationError`` naming ``result`` if it is not
    JSON-serialisable or its JSON is over ``MAX_RESULT_BYTES``."""
    if value is None:
        return None
    try:
        text = json.dumps(value, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    except RecursionError:
        raise ValidationError("result", "the handler's return value nests too deep to store as JSON") from None
    except (TypeError, ValueError) as exc:
        raise ValidationError("result", f"the handler's return value is not JSON-serialisable: {exc}") from None
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValidationError("result", "the handler's return value holds a lone surrogate: not text") from None
    if size > MAX_RESULT_BYTES:
        raise ValidationError(
            "result", f"the handler's return value is {size} bytes as JSON, over the {MAX_RESULT_BYTES}-byte limit"
        )
    return text
