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


def printable(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every character a terminal would act on or hide (controls, an escape sequence's ESC,
    bidi overrides, other format characters) written as its JSON ``\\u`` escape, which is also valid inside
    a JSON string; newlines kept with ``keep_newlines``. A handler's exception text reaches the worker's log:
    raw, ``\\x1b[31m`` coloured the operator's terminal and U+202E reversed the rest of the line."""
    if text.isprintable():
        return text
    lines = text.split("\n") if keep_newlines else [text]
    return "\n".join(line if line.isprintable() else "".join(map(_escaped, line)) for line in lines)


def _escaped(character: str) -> str:
    return character if character.isprintable() else json.dumps(character)[1:-1]
