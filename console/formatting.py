"""Plain text for the tables: short durations, one-line errors. No Textual here, so it is easy to test."""

from __future__ import annotations

from datetime import datetime


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
    """One line of ``text`` cut to ``width``: the first, or for a traceback the last (the one that says what broke)."""
    if not text:
        return ""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[-1] if lines[0].startswith("Traceback") else lines[0]
    return line if len(line) <= width else line[: width - 1] + "…"


def time_of_day(moment: datetime) -> str:
    return moment.strftime("%H:%M:%S")


def timestamp(moment: datetime | None) -> str:
    return "—" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def plural(count: int, word: str) -> str:
    """``word`` as a count of it reads: "1 cause", "2 causes" (the count itself is the caller's)."""
    return word if count == 1 else f"{word}s"


SHORTEST_LABEL = 12  # a database label is never cut below this: "demo.db" stays whole, a URL keeps its ends


def fit_label(label: str, room: int) -> str:
    """``label`` in ``room`` characters, cut in the middle (``postgresql://queue@db…search_path%3Djobs``): the
    header cut its end, and with it the view, the query, the time and the selection count after the label."""
    room = max(room, SHORTEST_LABEL)
    if len(label) <= room:
        return label
    head = (room - 1) // 2 + (room - 1) % 2
    return f"{label[:head]}…{label[len(label) - (room - 1 - head) :]}"
