"""Everything about one job: its fields, the payload pretty-printed a page at a time, and its attempt history
a page at a time (``o`` older, ``i`` newer).

The job is read and its text built on a thread worker (``load``), which posts ``DetailLoaded`` back: a
large job never blocks a key press, and what is laid out stays bounded (see ``console.detail_text``).

While open, the app's refresh cycle reads the job again (``reread``: every column but the payload, which
never changes, and the page of attempts shown), so a job that finishes, fails or is retried meanwhile is
shown as it is now, at the scroll position and payload page the operator chose. A job deleted meanwhile
(pruned) is said to be gone at the top of the view; a read that fails keeps what was shown and says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Static

from queue_core.store.pages import AttemptPage, attempt_page, job_without_payload
from queue_core.store.waiting import WaitReason

from ..detail_text import (
    ATTEMPTS_SHOWN,
    ERROR_CHARS,
    Hanging,
    JobDetail,
    build_detail,
    error_history,
    errors_title,
    fields_text,
    gone_text,
    highlight_page,
    page_note,
    stale_text,
    title_text,
    waiting_text,
)
from ..messages import DetailFailed, DetailLoaded, DetailRefreshed, DetailStale, PageRendered, WaitingExplained
from ..snapshot import COUNT_CAP
from .dialog import Dialog


@dataclass(eq=False)
class AttemptsLoaded(Message):
    page: AttemptPage


@dataclass(eq=False)
class AttemptsFailed(Message):
    error: str


class JobDetailScreen(Dialog):
    BINDINGS: ClassVar[list[Binding]] = [
        Binding("escape,q,enter", "close", "Close", id="close-detail", tooltip="close the detail"),
        Binding("m", "page(1)", "Next page", id="detail-next-page", tooltip="a large payload's next 16 KB"),
        Binding("b", "page(-1)", "Previous page", id="detail-previous-page", tooltip="its previous 16 KB"),
        Binding("o", "attempts(1)", "Older attempts", id="detail-older-attempts", tooltip="the 50 attempts before"),
        Binding("i", "attempts(-1)", "Newer attempts", id="detail-newer-attempts", tooltip="the 50 attempts after"),
    ]

    def __init__(self, repo, job_id: int) -> None:
        super().__init__()
        self.repo = repo
        self.job_id = job_id
        self.detail: JobDetail | None = None
        self.page_index = 0
        self.attempts: AttemptPage | None = None
        self.status: str | None = None  # the job's status as last read
        self.read_at = None  # this host's time of the last read that worked (repo.local_now: no round trip)
        self.gone = False  # deleted while open: never read again (it cannot come back: ids are never reused)
        self._reading = True  # a read is on its way: the app's next refresh does not start another

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog", classes="detail") as scroll:
            scroll.border_title = f"Job {self.job_id}"
            status = Static(id="detail-status")
            status.display = False  # shown when the job is gone or could not be read again
            yield status
            yield Static("loading…", id="detail-title", classes="dialog-title")
            yield Static(id="detail-fields", classes="fields")
            waiting = Static(id="detail-waiting", classes="waiting")
            waiting.display = False  # shown for a pending job: why it is not running yet
            yield waiting
            yield Static("Payload", classes="section")
            yield Static(id="detail-payload")
            note = Static(id="detail-page-note")
            note.display = False  # shown when the payload is longer than a page
            yield note
            yield Static(id="detail-errors-title", classes="section")
            yield Static(id="detail-errors", classes="errors")
            yield Static("[dim]escape[/] close", classes="hint")

    def on_mount(self) -> None:
        self.load()

    @work(thread=True, exit_on_error=False, group="detail")
    def load(self) -> None:
        try:
            with self.repo.db.connection_context():
                job = self.repo.find_by_id(self.job_id)
                attempts = attempt_page(self.repo, self.job_id, size=ATTEMPTS_SHOWN, chars=ERROR_CHARS + 1)
            detail = build_detail(job, attempts) if job is not None else None
            page = highlight_page(detail.payload_pages[0]) if detail is not None else None
        except Exception as exc:  # a database error or an undecodable row: say so, keep the console
            self.post_message(DetailFailed(f"{type(exc).__name__}: {exc}"))
        else:
            self.post_message(DetailLoaded(detail, page))
            if job is not None and job.status == "pending":
                self.explain_waiting(job)

    def explain_waiting(self, job) -> None:
        """On the loading thread: why this pending job is not running yet (repo.why_job_waits), in words; the
        jobs ahead counted up to COUNT_CAP, as the tables count, since this is asked again on every refresh."""
        stale_after = getattr(self.app, "stale_after", None)
        try:
            with self.repo.db.connection_context():
                reasons = self.repo.why_job_waits(job, stale_after=stale_after, ahead_cap=COUNT_CAP)
        except Exception as exc:  # the detail itself is shown: say what could not be read, in its place
            reasons = [WaitReason("error", f"cannot tell: {type(exc).__name__}: {exc}")]
        self.post_message(WaitingExplained(reasons))

    def on_waiting_explained(self, message: WaitingExplained) -> None:
        if self.gone or self.status != "pending":  # a late answer: a later read found it running or done
            return
        waiting = self.query_one("#detail-waiting", Static)
        waiting.update(waiting_text(message.reasons))
        waiting.display = True

    def on_detail_loaded(self, message: DetailLoaded) -> None:
        self._reading = False
        detail = message.detail
        if detail is None:
            self.app.notify(f"Job {self.job_id} is gone (pruned).", severity="warning")
            self.answer(None)
            return
        self.read_at = self.repo.local_now()
        self.status = detail.status
        self.detail = detail
        self.query_one("#detail-title", Static).update(detail.title)
        self.query_one("#detail-fields", Static).update(detail.fields)
        self.query_one("#detail-errors-title", Static).update(detail.errors_title)
        self.query_one("#detail-errors", Static).update(Hanging(detail.errors))
        self.page_index = 0
        self.attempts = detail.attempts  # the first page, as built
        self.show_page(0, message.page)
        self.refresh_bindings()

    # --- read again on the app's refresh cycle (QueueConsole.request_refresh) ---------------------------

    def reread(self) -> None:
        """Read the job again, unless it is gone, not shown yet, or a read is still on its way."""
        if self.detail is None or self.gone or self._reading:
            return
        self._reading = True
        self._reread(self.attempts.number if self.attempts else 1)

    @work(thread=True, exit_on_error=False, group="detail-refresh")
    def _reread(self, number: int) -> None:
        try:
            job, attempts = self._read_again(number)
            shown = None if job is None else (job.status, title_text(job), fields_text(job), attempts)
        except Exception as exc:  # the database is gone or locked: keep what is shown, say it is not current
            # (also what laying it out raised: a message is always posted, or the detail would never read again)
            self.post_message(DetailStale(f"{type(exc).__name__}: {exc}"))
            return
        if job is None:
            self.post_message(DetailRefreshed(None, None, None, None))
            return
        self.post_message(DetailRefreshed(*shown))
        if job.status == "pending":
            # Every refresh, as the rest of the detail: the queue paused or resumed, a worker started or lost,
            # the jobs ahead claimed meanwhile change why it waits (the count of those stops at COUNT_CAP).
            self.explain_waiting(job)

    def _read_again(self, number: int) -> tuple:
        """On the thread: the job without its payload, and attempt page ``number``; (None, None) once gone."""
        with self.repo.db.connection_context():
            job = job_without_payload(self.repo, self.job_id)
            if job is None:
                return None, None
            return job, attempt_page(self.repo, self.job_id, number=number, size=ATTEMPTS_SHOWN, chars=ERROR_CHARS + 1)

    def on_detail_refreshed(self, message: DetailRefreshed) -> None:
        self._reading = False
        if message.status is None:
            self.show_status(gone_text(self.job_id, self.read_at))
            self.gone = True
            return
        self.read_at = self.repo.local_now()
        self.status = message.status
        self.query_one("#detail-status", Static).display = False
        self.query_one("#detail-title", Static).update(message.title)
        self.query_one("#detail-fields", Static).update(message.fields)
        if message.status != "pending":
            self.query_one("#detail-waiting", Static).display = False
        shown = self.attempts.number if self.attempts else 1
        if message.attempts.number == shown:  # the operator did not move to another page meanwhile
            self.show_attempts(message.attempts)

    def on_detail_stale(self, message: DetailStale) -> None:
        self._reading = False
        self.show_status(stale_text(message.error, self.read_at))

    def show_status(self, text) -> None:
        status = self.query_one("#detail-status", Static)
        status.update(text)
        status.display = True

    def on_detail_failed(self, message: DetailFailed) -> None:
        self.app.notify(f"Could not read job {self.job_id}: {message.error}", title="Database error", severity="error")
        self.answer(None)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """m, b, o and i in the footer only when there is a page that way (this payload, this history)."""
        if action == "page":
            return self.detail is not None and 0 <= self.page_index + parameters[0] < len(self.detail.payload_pages)
        if action == "attempts":
            page = self.attempts
            return page is not None and (page.older if parameters[0] > 0 else page.newer) > 0
        return True

    def show_page(self, index: int, page: Text) -> None:
        self.refresh_bindings()
        self.query_one("#detail-payload", Static).update(page)
        note = page_note(self.detail.payload_pages, index)
        self.query_one("#detail-page-note", Static).update(note)
        self.query_one("#detail-page-note", Static).display = bool(note)

    def action_page(self, step: int) -> None:
        if self.detail is None:
            return
        index = self.page_index + step
        if 0 <= index < len(self.detail.payload_pages):
            self.page_index = index  # at once, so keys pressed faster than pages render still add up
            self.refresh_bindings()
            self.render_page(index)

    @work(thread=True, exit_on_error=False, group="detail-page")
    def render_page(self, index: int) -> None:
        self.post_message(PageRendered(index, highlight_page(self.detail.payload_pages[index])))

    def on_page_rendered(self, message: PageRendered) -> None:
        if message.index == self.page_index:  # an older page that finished late is not shown
            self.show_page(message.index, message.page)

    # --- the attempt history, a page of ATTEMPTS_SHOWN at a time, read when asked -----------------------

    def action_attempts(self, step: int) -> None:
        if self.detail is None:
            return
        current = self.attempts.number if self.attempts else 1
        total = self.attempts.total if self.attempts else None
        number = current + step
        if number < 1 or (total is not None and (number - 1) * ATTEMPTS_SHOWN >= total):
            return
        self.load_attempts(number)

    @work(thread=True, exclusive=True, exit_on_error=False, group="detail-attempts")
    def load_attempts(self, number: int) -> None:
        try:
            with self.repo.db.connection_context():
                page = attempt_page(self.repo, self.job_id, number=number, size=ATTEMPTS_SHOWN, chars=ERROR_CHARS + 1)
        except Exception as exc:  # the job shown stays: only the page asked for could not be read
            self.post_message(AttemptsFailed(f"{type(exc).__name__}: {exc}"))
        else:
            self.post_message(AttemptsLoaded(page))

    def on_attempts_failed(self, message: AttemptsFailed) -> None:
        error = f"Could not read that page of attempts: {message.error}"
        self.app.notify(error, title="Database error", severity="error")

    def on_attempts_loaded(self, message: AttemptsLoaded) -> None:
        self.show_attempts(message.page)

    def show_attempts(self, page: AttemptPage) -> None:
        if not page.rows and page.number > 1:
            return  # the history shrank meanwhile (pruned): stay on the page shown
        self.attempts = page
        self.refresh_bindings()
        self.query_one("#detail-errors-title", Static).update(errors_title(page))
        self.query_one("#detail-errors", Static).update(Hanging(error_history(page)))

    def shown_text(self) -> str:
        """The plain text on screen now (for tests: what an operator can read, and how much of it)."""
        return "\n".join(str(static.render()) for static in self.query(Static))

    def action_close(self) -> None:
        self.answer(None)
