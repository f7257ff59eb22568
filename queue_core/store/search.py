"""A search for the jobs an operator's query matches when no index serves it, in bounded steps.

``parse_query``'s qualifiers on id, type, queue and status are equalities on indexed columns: the console
narrows its tables by them in every refresh (``JobQuery.condition``). Free text, ``error:``, ``worker:``
and ``payload.KEY:`` are not: each would read every job of a status in every refresh. ``search`` reads
the jobs instead in steps of ``chunk`` ids, newest first (each step a primary-key range read), and yields
the matches found so far after each step, so a caller on a thread can show them at once, stop at a time
budget, or drop the search when the query changes. The console's refresh then reads only the matched ids.
Every value stays a bound parameter (store.query). Nothing here changes a job.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime

import peewee as pw

from ..rules import PENDING, RUNNING
from .pages import SCHEDULED, Cursor, Page
from .query import JobQuery
from .reads import page_columns

INDEXED_FIELDS = frozenset({"id", "type", "queue", "status"})
MATCH_LIMIT = 1000  # matches kept (the newest); a query matching more says "first 1,000"
CHUNK = 20_000  # ids read per step: tens of milliseconds of LIKE at most, so a stop takes effect at once
BUDGET = 5.0  # seconds a search may read before it stops with what it found


def served_by_index(query: JobQuery) -> bool:
    """True when every term is an equality on an indexed column (empty queries too)."""
    return all(term.field in INDEXED_FIELDS for term in query.terms)


@dataclass(frozen=True)
class SearchProgress:
    ids: tuple[int, ...]  # matches found so far, newest first
    searched: int  # ids checked so far (the newest ones)
    total: int  # ids to check: the highest id when the search began
    seconds: float
    done: bool  # every job checked, or MATCH_LIMIT matches found
    stopped: bool = False  # the time budget ran out first
    limit: int = MATCH_LIMIT  # the search stops at this many matches

    @property
    def full(self) -> bool:
        return len(self.ids) >= self.limit

    def text(self, gone: int = 0) -> str:
        """What the header says about it: "first 37 matches in 0.2 s, still searching" and the like; ``gone``
        of the matches found have been deleted since (a bulk delete of them, a prune): they are not counted."""
        left = len(self.ids) - gone
        found = f"{left:,} match{'es' if left != 1 else ''}"
        took = f"in {self.seconds:.1f} s" if self.seconds >= 0.1 else f"in {self.seconds * 1000:.0f} ms"
        since = f" ({gone:,} deleted since)" if gone else ""
        if self.full:
            return f"first {found}{since} (the newest) {took}"
        if self.stopped:
            return f"first {found}{since} {took}: stopped, searched the newest {self.searched:,} of {self.total:,} jobs"
        if self.done:
            return f"{found}{since}, every job searched {took}"
        return f"first {found}{since} {took}, still searching"


def search(
    repo,
    query: JobQuery,
    *,
    budget: float = BUDGET,
    chunk: int = CHUNK,
    limit: int = MATCH_LIMIT,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[SearchProgress]:
    """The matches of ``query``, newest first, after each step of ``chunk`` ids; the last progress says
    ``done`` (or ``stopped`` at ``budget`` seconds). Close the generator to abandon the search."""
    Job = repo.Job
    where = query.condition(repo)
    started = clock()
    table = repo.statements.by_primary_key()  # each step a primary-key range read, whatever the query says
    top = (Job.select(pw.fn.MAX(Job.id)).scalar() or 0) + 1
    below, ids = top, []
    while True:
        low = max(1, below - chunk)
        step = Job.select(Job.id).from_(table).where((Job.id >= low) & (Job.id < below) & where)
        ids += [job_id for (job_id,) in step.order_by(Job.id.desc()).limit(limit - len(ids)).tuples()]
        below = low
        seconds = clock() - started
        done = below <= 1 or len(ids) >= limit
        stopped = not done and seconds >= budget
        yield SearchProgress(tuple(ids), top - below, top - 1, seconds, done, stopped, limit)
        if done or stopped:
            return


@dataclass(frozen=True)
class FoundJobs:
    """A query no index serves, as a refresh reads it: the matches its search has found so far, by id."""

    query: JobQuery
    progress: SearchProgress | None = None  # None until the search's first step

    @property
    def text(self) -> str:
        return self.query.text

    def __bool__(self) -> bool:
        return True

    def condition(self, repo):
        return repo.Job.id.in_(self.progress.ids if self.progress else ())

    def note(self, present: int | None = None) -> str:
        """The header's words for it; ``present``: how many of the matches found are still there (None: all)."""
        if self.progress is None:
            return "searching…"
        return self.progress.text(0 if present is None else max(0, len(self.progress.ids) - present))


def found_rows(repo, found: FoundJobs, *, type: str | None = None) -> list:
    """The matches found so far that are still there, as light rows (store.pages), read by primary key in one
    go; with ``type``, only that type's.

    Only the ids narrow the SQL: with a status beside them, a planner walks that status's index and checks
    every entry against the id list (350 ms for 1,000 ids at a million jobs instead of 3)."""
    ids = found.progress.ids if found.progress else ()
    if not ids:
        return []
    Job = repo.Job
    query = Job.select(*page_columns(Job)).where(repo.statements.id_in(Job.id, ids))
    rows = repo._window_reader.named(repo.db.execute_sql(*query.sql()), keep="found")
    return [row for row in rows if type is None or row.type == type]


# The live tables' orders (JobReads.window_rows), for rows already in memory: each a key of a row and now.
WINDOW_ORDER = {
    # Run order: the due jobs in claim order, then the jobs due later, soonest first.
    PENDING: (
        lambda row, now: (0, -row.priority, row.run_at, row.id) if row.run_at <= now else (1, row.run_at, row.id),
        False,
    ),
    RUNNING: (lambda row, now: (row.heartbeat_at or row.claimed_at, row.id), False),
}
NEWEST_FIRST_ORDER = (lambda row, now: (row.updated_at, row.id), True)


def in_window_order(rows: list, status: str, now: datetime) -> list:
    key, reverse = WINDOW_ORDER.get(status, NEWEST_FIRST_ORDER)
    return sorted((row for row in rows if row.status == status), key=lambda row: key(row, now), reverse=reverse)


def found_page(rows: list, state: str, *, after: Cursor | None, limit: int, now: datetime) -> Page:
    """``store.pages.page`` over the matches found: the same states, orders and keyset cursors."""
    if state == SCHEDULED:
        due_later = [row for row in rows if row.status == PENDING and row.run_at > now]
        ordered = sorted(due_later, key=lambda row: (row.run_at, row.id))
        past = [row for row in ordered if after is None or (row.run_at, row.id) > after]
    else:
        ordered = in_window_order(rows, state, now)
        past = [row for row in ordered if after is None or (row.updated_at, row.id) < after]
    shown = past[:limit]
    sort_time = "run_at" if state == SCHEDULED else "updated_at"
    next_after = (getattr(shown[-1], sort_time), shown[-1].id) if len(past) > limit else None
    return Page(state, shown, after, next_after)
