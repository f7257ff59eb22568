"""Plain text for the tables: short durations, one-line errors. No Textual here, so it is easy to test."""

from __future__ import annotations

from datetime import datetime

from queue_core.store.postgres import refusal
from queue_core.text import printable


def short_duration(seconds: float) -> str:
    """The two largest units that matter: 7s, 3m05s, 2h10m, 3d04h."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h{minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours:02d}h"


def since(then: datetime | None, now: datetime) -> str:
    return "" if then is None else short_duration((now - then).total_seconds())


def one_line(text: str | None, width: int) -> str:
    """One line of ``text`` cut to ``width``: the first, or for a traceback the last (the one that says what broke),
    with what a terminal would act on written as escapes (``shown``)."""
    if not text:
        return ""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    line = shown(lines[-1] if lines[0].startswith("Traceback") else lines[0])
    return line if len(line) <= width else line[: width - 1] + "…"


def shown(text: str, *, keep_newlines: bool = False) -> str:
    """Free text from the database (a handler's exception, its traceback, a cause made of them) as the console
    draws it: a control character, an escape sequence's ESC or a bidi override written as its ``\\u`` escape.
    Review finding: drawn raw, ``\\x1b[31m`` in a handler's error reached the operator's terminal, which coloured
    the rest of the failed table and shifted its row (the table had counted the escape as text); U+202E
    reversed the rest of the line. Names (types, queues, worker ids, keys) are refused such characters when
    written, so only free text needs this."""
    return printable(text, keep_newlines=keep_newlines)


def time_of_day(moment: datetime) -> str:
    return moment.strftime("%H:%M:%S")


def timestamp(moment: datetime | None) -> str:
    return "—" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def plural(count: int, word: str) -> str:
    """``word`` as a count of it reads: "1 cause", "2 causes" (the count itself is the caller's)."""
    return word if count == 1 else f"{word}s"


SHORTEST_LABEL = 12  # a database label is never cut below this: "demo.db" stays whole, a URL keeps its ends


def fit_label(label: str, room: int, *, shortest: int = SHORTEST_LABEL) -> str:
    """``label`` in ``room`` characters, cut in the middle (``postgresql://queue@db…search_path%3Djobs``): the
    header cut its end, and with it the view, the query, the time and the selection count after the label."""
    room = max(room, shortest)
    if len(label) <= room:
        return label
    head = (room - 1) // 2 + (room - 1) % 2
    return f"{label[:head]}…{label[len(label) - (room - 1 - head) :]}"


SHORTEST_QUERY = 7  # a query or type filter cut to fit the header keeps this much: "type:…ing"


def header_text(
    label: str, view: str, type_filter: str | None, query: str, tail: str, room: int, mode: str = ""
) -> str:
    """The header's sub-title, "label · mode · view · scope · query Q · tail", in ``room`` characters if it can be.

    ``mode`` ("read-only") and ``tail`` (the time, a warning, "N selected") always stay whole. At 80 columns
    with a query or a selection the header lost the time and the selection off its end; now the least useful
    part gives way first: the database label is cut in the middle (down to ``SHORTEST_LABEL``), then "all
    types" (the default) goes, then the label, then the view (the view bar under the counts shows it
    highlighted), then the query and the type filter are cut in their middle (down to ``SHORTEST_QUERY``).
    """
    shown = {"label": label, "view": view, "all types": not type_filter, "type": type_filter or "", "query": query}

    def line() -> str:
        scope = f"type {shown['type']}" if shown["type"] else "all types" if shown["all types"] else ""
        query = f"query {shown['query']}" if shown["query"] else ""
        first = " · ".join(part for part in (shown["label"], mode) if part)
        return " · ".join(part for part in (first, shown["view"], scope, query, tail) if part)

    def cut(name: str, shortest: int) -> None:
        value = shown[name]
        shown[name] = fit_label(value, len(value) - (len(line()) - room), shortest=min(len(value), shortest))

    steps = [
        lambda: cut("label", SHORTEST_LABEL),
        lambda: shown.update({"all types": False}),
        lambda: shown.update(label=""),
        lambda: shown.update(view=""),
        lambda: cut("query", SHORTEST_QUERY),
        lambda: cut("type", SHORTEST_QUERY),
    ]
    for step in steps:
        if len(line()) <= room:
            break
        step()
    return line()


def write_error(exc: BaseException) -> str:
    """A refused write as the console says it: the database's words, then what to change when PostgreSQL
    refuses it for good (``refusal``: a read-only server or role, a missing privilege, a statement timeout).
    Review finding: a console on a server gone read-only (a fail-over to a standby) said only "Could not
    cancel: cannot execute UPDATE in a read-only transaction", and every retry said it again."""
    why = refusal(exc)
    return f"{exc}: {why}" if why else str(exc)
