"""One refresh's read of the database, as plain data the UI can show without touching the database again.

``load_snapshot`` runs on a thread worker; everything here is a bounded read (a window of rows, counts that
stop at ``COUNT_CAP``), so a refresh costs the same with a hundred jobs or a million.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from weakref import WeakKeyDictionary

from queue_core.rules import is_stale
from queue_core.store.activity import Activity, ActivityReads
from queue_core.store.models import JobStatus
from queue_core.store.overview import lost_workers, paused_queues, queue_overview
from queue_core.store.pages import PAGED_STATES, Cursor, Page, filtered_counts, page
from queue_core.store.query import JobQuery
from queue_core.store.repository import JobRepository
from queue_core.store.search import FoundJobs, found_page, found_rows, in_window_order

SHOWN_STATUSES = ("pending", "running", "failed")
LIVE = "tables"  # the home (Jobs) view: the live tables of SHOWN_STATUSES
WINDOW = 200
# Counting stops here: "10,000+" is what an operator needs to know, and counting further costs a full scan.
# Each count walks up to this many index entries per status (and per queue on the queues view): at 50,000
# the header's counts alone took 7-14 ms of a 1M-job refresh, at 10,000 under 2 ms.
COUNT_CAP = 10_000
THROUGHPUT_PERIOD = timedelta(minutes=5)


@dataclass(frozen=True)
class Snapshot:
    now: datetime
    counts: dict[str, int]  # per status; a value above COUNT_CAP means "more than COUNT_CAP"
    # status -> the first ``window`` jobs (payload-less rows) in operator order: the live tables' statuses on
    # the Jobs view (and with a searched query), a paged state's page on its view; no other status
    rows: dict[str, list]
    stale_ids: frozenset[int]  # stale running jobs among the rows shown
    stale_count: int  # stale running jobs in the whole database
    throughput: dict[str, float]  # completed / failed attempts per minute over THROUGHPUT_PERIOD
    type_filter: str | None = None
    query_text: str = ""  # the operator's query these rows and counts match ("" for none)
    query_note: str = ""  # a searched query's progress: its rows and counts are the matches found so far
    throughput_period: timedelta = THROUGHPUT_PERIOD
    view: str = "tables"  # the view this refresh was read for: it reads only what that view shows
    pages: dict[str, PageView] = field(default_factory=dict)  # the paged view's page (its rows are in ``rows`` too)
    activity: Activity | None = None
    extra: dict = field(default_factory=dict)  # per view: "queues", "workers", "schedules"
    page_number: int = 1
    paused_queues: tuple[str, ...] = ()  # the header's: on every view
    lost_workers: tuple[str, ...] = ()

    @property
    def narrowed(self) -> bool:
        """True when a type filter or a query narrows the jobs tables and counts (the queues and activity
        views, and the header's rates, count every job all the same)."""
        return bool(self.type_filter or self.query_text)

    def count_text(self, status: str) -> str:
        return format_count(self.counts[status])

    def shown_text(self, status: str) -> str:
        """What a table's title says: "200 of 12,345", or just "3" when every job is shown."""
        if status in self.pages:
            return self.pages[status].shown_text()
        shown, total = len(self.rows[status]), self.counts[status]
        return f"{shown:,}" if shown == total else f"{shown:,} of {format_count(total)}"


# Beside the counts of a view that a type filter and a query do not narrow, while one is set.
NOT_NARROWED = "all jobs, not the type filter or query"


def format_count(n: int) -> str:
    return f"{COUNT_CAP:,}+" if n > COUNT_CAP else f"{n:,}"


def load_snapshot(
    repo: JobRepository,
    *,
    type_filter: str | None = None,
    window: int = WINDOW,
    stale_after: timedelta,
    view: str = "tables",
    after: Cursor | None = None,
    page_number: int = 1,
    extra_reads: dict | None = None,
    query: JobQuery | FoundJobs | None = None,
) -> Snapshot:
    """Read everything one refresh of the console shows, at the repository clock's now.

    The live tables and the header's counts are read on every view (the header is on every view); a paged
    state's page, the activity or a view's ``extra_reads`` (name -> function of the repository and now)
    only when that view is on screen. A ``FoundJobs`` query narrows to the matches its search found so far.
    """
    now = repo.now()
    query_note = ""
    if isinstance(query, FoundJobs):
        rows, counts, pages, present = _found(repo, query, type_filter, window, view, after, page_number, now)
        query_note = query.note(present)
    else:
        rows, counts, pages = _narrowed(repo, query, type_filter, window, view, after, page_number, now)
    if view in pages:
        rows[view] = pages[view].rows
    counts = at_least_shown(counts, rows)
    activity = activity_reads(repo).last_hour(now=now) if view == "activity" else None
    extra = {name: read(repo, now) for name, read in (extra_reads or {}).items()}
    return Snapshot(
        now=now,
        counts=counts,
        rows=rows,
        stale_ids=frozenset(job.id for job in rows.get("running", ()) if is_stale(job, now, stale_after)),
        stale_count=repo.count_stale(stale_after, type=type_filter, now=now),
        throughput=repo.throughput(THROUGHPUT_PERIOD),
        type_filter=type_filter,
        query_text=query.text if query else "",
        query_note=query_note,
        view=view,
        pages=pages,
        activity=activity,
        extra=extra,
        page_number=page_number if view in PAGED_STATES else 1,
        paused_queues=tuple(paused_queues(repo)),
        lost_workers=tuple(lost_workers(repo)),
    )


def at_least_shown(counts: dict[str, int], rows: dict[str, list]) -> dict[str, int]:
    """Each status counted at least as many jobs as its rows show. The rows and the counts are separate reads:
    a job claimed between them was in the pending rows and not in the pending count, and the title read
    "Pending 3 of 2" (and the header "pending 2" over three rows) until the next refresh."""
    return {status: max(count, len(rows.get(status, ()))) for status, count in counts.items()}


def _narrowed(repo, query, type_filter, window, view, after, page_number, now) -> tuple[dict, dict, dict]:
    """The tables, counts and page, narrowed by the type filter and a query an index serves (if any)."""
    where = query.condition(repo) if query else None
    live = SHOWN_STATUSES if view == LIVE else ()  # the live tables are read when they are on screen
    if where is None:
        rows = {status: repo.window_rows(status, type=type_filter, limit=window, now=now) for status in live}
        counts = repo.counts(type=type_filter, cap=COUNT_CAP)
    else:
        rows = {
            status: repo.window_rows(status, type=type_filter, limit=window, now=now, where=where) for status in live
        }
        counts = filtered_counts(repo, where, type=type_filter, cap=COUNT_CAP)
    pages = {}
    if view in PAGED_STATES:
        current = page(repo, view, after=after, limit=window, now=now, type=type_filter, where=where)
        pages[view] = PageView(current, page_number, window)
    return rows, counts, pages


def _found(repo, found: FoundJobs, type_filter, window, view, after, page_number, now) -> tuple[dict, dict, dict, int]:
    """The same, over the matches a search has found so far: read once by id, ordered here; and how many of
    those matches are still there (of any type: the header counts those deleted since apart)."""
    present = found_rows(repo, found)
    matches = present if type_filter is None else [row for row in present if row.type == type_filter]
    rows = {status: in_window_order(matches, status, now)[:window] for status in SHOWN_STATUSES}
    counts = {status.value: sum(row.status == status.value for row in matches) for status in JobStatus}
    pages = {}
    if view in PAGED_STATES:
        current = found_page(matches, view, after=after, limit=window, now=now)
        pages[view] = PageView(current, page_number, window)
    return rows, counts, pages, len(present)


_ACTIVITY_READS: WeakKeyDictionary = WeakKeyDictionary()


def activity_reads(repo: JobRepository) -> ActivityReads:
    """One ``ActivityReads`` per repository, kept across refreshes: it keeps the minutes that have settled."""
    if repo not in _ACTIVITY_READS:
        _ACTIVITY_READS[repo] = ActivityReads(repo)
    return _ACTIVITY_READS[repo]


def read_queues(repo: JobRepository, now: datetime) -> list:
    """The queues view's read: every queue, its counts capped as the header's are (store.overview)."""
    return queue_overview(repo, now=now, cap=COUNT_CAP)


def read_workers(repo: JobRepository, now: datetime) -> list:
    return repo.workers()


@dataclass(frozen=True)
class PageView:
    """A page as a table shows it: which page it is, and the rows it holds."""

    page: Page
    number: int  # 1-based
    size: int

    @property
    def rows(self) -> list:
        return self.page.rows

    @property
    def has_next(self) -> bool:
        return self.page.next_after is not None

    def shown_text(self) -> str:
        """ "page 3 · 401–600", or "empty"."""
        if not self.page.rows:
            return "none" if self.number == 1 else f"page {self.number} · none"
        first = (self.number - 1) * self.size + 1
        last = first + len(self.page.rows) - 1
        more = " · pgdn for more" if self.has_next else ""
        return f"page {self.number} · {first:,}–{last:,}{more}"
