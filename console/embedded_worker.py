"""The embedded worker's controls: ``w`` starts and stops a ``queue_core.worker.Worker`` inside the console.

A mixin of ``QueueConsole``. Worker threads only post messages; stopping waits on a thread worker, so the UI
keeps answering while running jobs finish, and quitting stops the worker first: no job is left running.
"""

from __future__ import annotations

import asyncio
import signal
from functools import partial

from textual import work

from queue_core.worker import Worker
from queue_core.worker.scheduler import Scheduler

from .hangup import HangUpGuard
from .messages import QueueWorkerStopped, WorkerEventReceived
from .widgets.worker.pane import WorkerPane


def forward_event(pane: WorkerPane, event) -> None:
    """Called on a worker thread: hand the event to the UI thread (post_message is thread-safe); never
    query or touch a widget here."""
    pane.post_message(WorkerEventReceived(event))


class EmbeddedWorkerControls:
    """Needs from the app: ``repo``, ``stale_after``, ``worker_concurrency``, ``worker_queues``,
    ``worker_shutdown_timeout``, ``worker_id``, ``schedules``, ``request_refresh``, ``refresh_soon`` and
    ``_on_main_screen``."""

    queue_worker: Worker | None = None
    _stopping_worker = False
    _exit_after_stop = False

    @property
    def worker_pane(self) -> WorkerPane:
        return self.query_one(WorkerPane)

    def action_toggle_worker(self) -> None:
        self._on_main_screen()
        if self._stopping_worker:
            self.hurry_worker_stop()
        elif self.queue_worker is not None and self.queue_worker.is_running:
            self.stop_queue_worker()
        else:
            self.start_queue_worker()

    def start_queue_worker(self) -> None:
        options = {"shutdown_timeout": self.worker_shutdown_timeout, "worker_id": self.worker_id}
        # With per-queue slots the slots are theirs: --concurrency (which has a default here) is left out.
        slots = (
            {"concurrency": self.worker_concurrency} if self.worker_queues is None else {"queues": self.worker_queues}
        )
        worker = Worker(
            self.repo,
            **slots,
            stale_after=self.stale_after.total_seconds(),
            on_event=partial(forward_event, self.worker_pane),
            # The periodic jobs of the --handlers modules, as every worker of them runs: without it the schedules
            # view promised a next run that this worker never enqueued.
            scheduler=Scheduler(self.repo, self.schedules) if self.schedules else None,
            **{name: value for name, value in options.items() if value is not None},
        )
        self.queue_worker = worker
        self.worker_pane.set_state("running", worker)
        worker.start()

    def on_worker_event_received(self, message: WorkerEventReceived) -> None:
        self.refresh_soon()

    def stop_queue_worker(self, *, then_exit: bool = False) -> None:
        self._stopping_worker = True
        self._exit_after_stop = self._exit_after_stop or then_exit
        self.worker_pane.set_state("stopping")
        running = self.queue_worker.stats.running
        if running:
            key = "q" if then_exit else "w"
            self.notify(
                f"Stopping the worker: {running} running job(s) get up to {self.queue_worker.shutdown_timeout:g} s "
                f"to finish, then go back to pending. Press {key} again to release them now.",
                title="Stopping",
            )
        self._stop_in_thread()

    def hurry_worker_stop(self) -> None:
        """A second w or q while stopping: release the running jobs now instead of waiting for them."""
        self.queue_worker.request_stop(0)
        self.notify("Releasing the running jobs back to pending now.", title="Stopping")

    @work(thread=True, exit_on_error=False, group="queue-worker")
    def _stop_in_thread(self) -> None:
        try:
            self.queue_worker.stop()
        finally:
            self.post_message(QueueWorkerStopped(self._exit_after_stop))

    def on_queue_worker_stopped(self, message: QueueWorkerStopped) -> None:
        self._stopping_worker = False
        panes = self.query(WorkerPane)
        if not panes:  # heard as the console closes, its widgets taken down: nothing to show it on, nor to refresh
            return  # (a test run raised NoMatches here: the operator would have seen a traceback on the way out)
        panes.first().set_state("stopped")
        self.request_refresh()
        if message.then_exit or self._exit_after_stop:
            self.exit()

    def stop_queue_worker_now(self) -> None:
        """Blocking stop for the way out (the app already gone): never leave a job running."""
        if self.queue_worker is not None and self.queue_worker.is_running:
            self.queue_worker.stop()

    # --- signals: a closed terminal, or a stop asked by another process -------------------------------

    def watch_signals(self) -> None:
        """SIGHUP (the terminal closed: tmux session killed, SSH dropped) and SIGTERM leave no job of the
        embedded worker running: by default each killed the process at once, its jobs still ``running`` for
        ``--stale-after``. SIGTERM quits as ``q`` does (a second one releases the running jobs now); SIGHUP
        releases them now and exits, since no one is left to watch a graceful stop (``hangup.HangUpGuard``:
        a terminal that is gone must not hold the way out)."""
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGTERM, self.terminate)
        except (NotImplementedError, RuntimeError, ValueError):  # no signals here (not the main thread)
            return
        self._signals = (signal.SIGTERM,)
        self._hang_up_guard = HangUpGuard(loop.call_soon_threadsafe, self.hang_up)
        self._hang_up_guard.install()

    def unwatch_signals(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in getattr(self, "_signals", ()):
            loop.remove_signal_handler(signum)
        self._signals = ()
        guard = getattr(self, "_hang_up_guard", None)
        if guard is not None:
            guard.uninstall()
            self._hang_up_guard = None

    def hang_up(self) -> None:
        if self.queue_worker is not None and self.queue_worker.is_running:
            self.queue_worker.request_stop(0)  # the way out (run_console's finally) then releases its jobs
        self.exit()

    def terminate(self) -> None:
        self.call_next(self.action_quit)

    async def action_quit_console(self) -> None:
        """``q`` on the main screen: as ctrl+q, which quits from a dialog too."""
        await self.action_quit()

    async def action_quit(self) -> None:
        if self.queue_worker is not None and (self.queue_worker.is_running or self._stopping_worker):
            if not self._stopping_worker:
                self.stop_queue_worker(then_exit=True)
            else:
                self._exit_after_stop = True
                self.hurry_worker_stop()
            return
        self.exit()
