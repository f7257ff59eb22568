"""What the job detail shows, as bounded Textual ``Content``: built on a thread, never parsed as markup.

A job can be large: an 850 KB payload, 300 attempts with 10,000-character errors. Laying out megabytes of
text froze the console for tens of seconds, so the detail shows the payload a page (``PAGE_CHARS``) at a
time, the attempt history a page of ``ATTEMPTS_SHOWN`` attempts at a time (the newest first; the database
cuts each error to ``ERROR_CHARS``), each with a note of what is left out. Job data (types, errors, worker
ids, keys) goes into ``Content`` as plain strings: ``[/x`` in an error is shown as typed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from rich.syntax import Syntax
from rich.text import Text
from textual.content import Content
from textual.css.styles import RulesMap
from textual.strip import Strip
from textual.style import Style
from textual.visual import RenderOptions, Visual

from queue_core.store.pages import AttemptPage

from .formatting import shown, time_of_day, timestamp

PAGE_CHARS = 16 * 1024
ATTEMPTS_SHOWN = 50
ERROR_CHARS = 500
FIELD_CHARS = 300  # a field (worker id, idempotency key) longer than this is cut too


@dataclass(frozen=True)
class JobDetail:
    """Everything the detail screen shows of one job, each part bounded."""

    job_id: int
    status: str
    title: Content
    fields: Content
    payload_pages: tuple[str, ...]  # the pretty-printed payload in pages of at most PAGE_CHARS
    errors_title: Content
    errors: Content
    attempts: AttemptPage | None = None  # the page the errors show (the first, newest page)


def build_detail(job, attempts: AttemptPage) -> JobDetail:
    payload = json.dumps(job.payload, indent=2, sort_keys=True)
    return JobDetail(
        job_id=job.id,
        status=job.status,
        title=title_text(job),
        fields=fields_text(job),
        payload_pages=tuple(pages(payload)),
        errors_title=errors_title(attempts),
        errors=error_history(attempts),
        attempts=attempts,
    )


def title_text(job) -> Content:
    return Content.assemble(
        (job.type, "bold"),
        "  ·  ",
        (job.status, "bold"),
        f"  ·  {job.priority_label} ({job.priority})  ·  retries {job.retry_count}/{job.max_retries}",
    )


def fields_text(job) -> Content:
    cancel = "—" if job.cancel_requested_at is None else f"requested {timestamp(job.cancel_requested_at)}"
    result = "—" if job.result is None else json.dumps(job.result, sort_keys=True)
    rows = [
        ("queue", job.queue),
        ("attempt", f"{job.attempt} (claims so far; an ack names it)"),
        ("worker", job.worker_id or "—"),
        ("cancel", cancel),
        ("result", result),
        ("idempotency key", job.idempotency_key or "—"),
        ("created", timestamp(job.created_at)),
        ("updated", timestamp(job.updated_at)),
        ("run at", timestamp(job.run_at)),
        ("claimed", timestamp(job.claimed_at)),
        ("heartbeat", timestamp(job.heartbeat_at)),
    ]
    lines = (Content.assemble((f"{name:>16}", "dim"), "  ", cut(str(value), FIELD_CHARS)) for name, value in rows)
    return Content("\n").join(lines)


def waiting_text(reasons: list) -> Content:
    """ "Why is this job waiting?" (repo.why_waiting): each reason in words, a title line first."""
    lines = [Content.styled("Why is this job waiting?", "bold")]
    lines += [Content.assemble(("  • ", "yellow"), reason.message) for reason in reasons]
    return Content("\n").join(lines)


def gone_text(job_id: int, read_at: datetime) -> Content:
    """The job was deleted (pruned) while its detail was open: what is shown is how it was."""
    return Content.assemble(
        (f"⚠ Job {job_id} is gone: deleted (pruned) since it was last read at {time_of_day(read_at)} UTC", "bold red"),
        (". Below is the job as it was then; escape closes.", "dim"),
    )


def stale_text(error: str, read_at: datetime) -> Content:
    """Reading the job again failed: what is shown is not current."""
    first_line = (error.splitlines() or [""])[0]
    return Content.assemble(
        ("⚠ not current: ", "bold red"),
        cut(first_line, FIELD_CHARS),
        (f" · as read at {time_of_day(read_at)} UTC, retrying", "dim"),
    )


def errors_title(attempts: AttemptPage) -> Content:
    return Content(f"Errors ({attempts.total:,} failed attempt{'' if attempts.total == 1 else 's'})")


def error_history(attempts: AttemptPage) -> Content:
    """One page of the attempt history, oldest first, between notes of the attempts before and after it."""
    if not attempts.total:
        return Content.styled("none: this job has not failed", "dim")
    parts = []
    if attempts.older:
        more = min(attempts.older, attempts.size)
        parts.append(Content.styled(f"… {attempts.older:,} earlier attempts not shown: o shows {more} more", "dim"))
    # A traceback -> the first attempt on this page that has it: a job retried 20 times that failed the
    # same way each time showed the same traceback 20 times. The page holds each traceback's end and its
    # length (the database cut it), so two are "the same" when both agree: two that differ only before
    # their last 1,500 characters, at the same length, fold too (`show ID` prints every one whole).
    first_with: dict[tuple[str, int], object] = {}
    for error in attempts.rows:
        tb = getattr(error, "traceback", None)
        first = first_with.setdefault((tb, error.traceback_length), error) if tb else error
        parts.append(
            Content.assemble(
                (f"attempt {error.attempt}", "bold red"),
                "  ",
                (f"{timestamp(error.created_at)}  worker {error.worker_id or '—'}", "dim"),
                "\n",
                cut(error.error, ERROR_CHARS, length=error.error_length),
                traceback_text(error) if first is error else same_traceback_text(first.attempt),
            )
        )
    if attempts.newer:
        parts.append(Content.styled(f"… {attempts.newer:,} later attempts not shown: i shows them", "dim"))
    return Content("\n\n").join(parts)


def traceback_text(error) -> Content:
    """An attempt's traceback under its error, dim and indented: its end as the database cut it (the
    innermost frames), from a line's start, without the exception's line when it repeats the error above."""
    tb = getattr(error, "traceback", None)
    if not tb:
        return Content()
    lines = tb.rstrip("\n").split("\n")
    earlier = error.traceback_length - len(tb)
    if earlier > 0 and len(lines) > 1:
        earlier += len(lines[0]) + 1
        lines = lines[1:]  # begins inside a line
    if lines[-1] == error.error and len(lines) > 1:
        lines.pop()
    parts = []
    if earlier > 0:
        note = f"{earlier:,} earlier characters: python -m queue_core show {error.job_id} prints them"
        parts.append(("\n  … " + note, "dim"))
    parts += [("\n  " + shown(line), "dim") for line in lines]
    return Content.assemble(*parts)


HANGING_TEXT = 20  # a line hangs under its indent only while this much room is left for its text


class Hanging(Visual):
    """``content`` laid out so that a line too long for the width goes on under its own indent.

    Review finding: a long traceback line (a frame's path, a line of code) wrapped back to the left edge, in
    among the "File ..." lines, and the traceback was hard to follow. Lines that fit are as they were; the
    text (``str()``, copied or searched) is the content's, without the breaks the layout adds."""

    def __init__(self, content: Content) -> None:
        self.content = content
        self._lines = content.split("\n")
        self._laid_out: tuple[int, Content] | None = None

    def __str__(self) -> str:
        return self.content.plain

    def laid_out(self, width: int) -> Content:
        if self._laid_out is None or self._laid_out[0] != width:
            self._laid_out = (width, Content("\n").join(hang(line, width) for line in self._lines))
        return self._laid_out[1]

    def render_strips(self, width: int, height: int | None, style: Style, options: RenderOptions) -> list[Strip]:
        return self.laid_out(width).render_strips(width, height, style, options)

    def get_optimal_width(self, rules: RulesMap, container_width: int) -> int:
        return self.content.get_optimal_width(rules, container_width)

    def get_height(self, rules: RulesMap, width: int) -> int:
        return self.laid_out(width).get_height(rules, width)


def hang(line: Content, width: int) -> Content:
    """One line in ``width`` columns: as it is if it fits, else wrapped with each piece under its indent (the
    indent given up when it would leave less than ``HANGING_TEXT`` columns)."""
    if line.cell_length <= width:
        return line
    indent = len(line.plain) - len(line.plain.lstrip(" "))
    if not indent or width - indent < HANGING_TEXT:
        return line
    return Content("\n").join(line[:indent] + piece for piece in line[indent:].wrap(width - indent))


def same_traceback_text(attempt: int) -> Content:
    """In place of a traceback identical to an earlier attempt's on the page: one dim line."""
    return Content.styled(f"\n  same traceback as attempt {attempt}", "dim")


def cut(text: str, limit: int, *, length: int | None = None) -> Content:
    """``text`` up to ``limit`` characters, then a dim note of how many more there are (of ``length`` in all,
    when the text was already cut by the database); what a terminal would act on is written as escapes."""
    length = len(text) if length is None else length
    if length <= limit:
        return Content(shown(text, keep_newlines=True))
    return Content.assemble(shown(text[:limit], keep_newlines=True), (f" … {length - limit:,} more characters", "dim"))


def pages(text: str, size: int = PAGE_CHARS) -> list[str]:
    """``text`` in pieces of at most ``size`` characters, cut after a line break when one is near the end."""
    result = []
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            newline = text.rfind("\n", start + size // 2, end)
            end = newline + 1 if newline >= 0 else end
        result.append(text[start:end])
        start = end
    return result or [""]


def highlight_page(page: str) -> Text:
    """One page of the payload, JSON-highlighted (as ``Text``, so it is laid out like any other text)."""
    text = Syntax(page, "json", theme="ansi_dark").highlight(page)
    text.rstrip()  # in place: highlight() ends the text with a newline
    return text


def page_note(pages: tuple[str, ...], index: int) -> Content:
    """Where this page is in the payload, and the keys to move: empty when the payload fits one page."""
    if len(pages) <= 1:
        return Content()
    before = sum(len(page) for page in pages[:index])
    shown = len(pages[index])
    after = sum(len(page) for page in pages[index + 1 :])
    parts = [f"page {index + 1} of {len(pages)}: characters {before:,}–{before + shown:,}"]
    if after:
        parts.append(f"… {kilobytes(after)} more, m shows the next page")
    if index:
        parts.append("b the previous")
    return Content.styled(" · ".join(parts), "dim")


def kilobytes(chars: int) -> str:
    return f"{chars / 1024:,.0f} KB" if chars >= 1024 else f"{chars:,} characters"
