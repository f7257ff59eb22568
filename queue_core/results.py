"""A handler's return value as the job's ``result`` (issue 14, item 5): JSON text, at most ``MAX_RESULT_BYTES``.

Pure (no database): the worker checks a value before it acknowledges, so a value that cannot be stored
fails the attempt with a message that says why; the repository checks again for callers of its own.
"""

from __future__ import annotations

import json

from .errors import ValidationError
from .validation import MAX_PAYLOAD_DEPTH, validate_payload_depth

MAX_RESULT_BYTES = 64 * 1024  # a result is a summary for whoever reads the job, not a blob store
# A payload's bound, for the same reason: every read of the job decodes the result, and a value nested near
# Python's recursion limit was stored, then raised RecursionError in each reader deeper in its stack.
MAX_RESULT_DEPTH = MAX_PAYLOAD_DEPTH


def encode_result(value) -> str | None:
    """``value`` as compact JSON text (None stays None); a ``ValidationError`` naming ``result`` if it is not
    JSON-serialisable, nests deeper than ``MAX_RESULT_DEPTH`` or its JSON is over ``MAX_RESULT_BYTES``."""
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
    # Nesting needs an opening bracket per level: few brackets in all cannot nest too deep (encode_payload's test).
    if text.count("{") + text.count("[") > MAX_RESULT_DEPTH:
        try:
            validate_payload_depth(value, MAX_RESULT_DEPTH)
        except ValidationError:
            too_deep = f"nests objects and arrays more than {MAX_RESULT_DEPTH} levels deep; return a flatter value"
            raise ValidationError("result", f"the handler's return value {too_deep}") from None
    return text
