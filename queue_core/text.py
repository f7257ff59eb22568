"""JSON text for a stream whose encoding may not be UTF-8 (``PYTHONIOENCODING=ascii``, a Latin-1 locale, a
C locale on an old Python): the admin CLI's ``--json`` output and the worker's JSON log lines."""

from __future__ import annotations

import codecs
import json
from typing import Any, TextIO


def writes_unicode(stream: TextIO) -> bool:
    """Whether every character can be written to ``stream`` as itself (a UTF encoding)."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        return codecs.lookup(encoding).name.startswith("utf")
    except LookupError:
        return False


def json_text(data: Any, stream: TextIO, *, indent: int | None = None) -> str:
    """``data`` as JSON that ``stream`` can write: non-ASCII characters as themselves on a UTF stream, as
    ``\\u`` escapes on any other. Written as themselves there, the stream's ``backslashreplace`` turned
    ``ë`` into ``\\xeb``, which is not JSON, and a JSON reader of the output refused the whole line."""
    return json.dumps(data, indent=indent, ensure_ascii=not writes_unicode(stream))
