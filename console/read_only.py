"""Read-only mode (``--read-only`` or ``QUEUE_CONSOLE_READ_ONLY=1``): look, never write.

A mixin of ``QueueConsole``. Every action that writes answers ``None`` to ``check_action``, so the footer
shows its key dimmed and Textual never runs it; the key then reaches ``on_key``, which says why. The
embedded worker is a writer too (it claims jobs): ``w`` is disabled and ``--worker`` is refused.
"""

from __future__ import annotations

from textual import events

WRITE_ACTIONS = frozenset({"enqueue", "retry", "fail", "cancel_job", "bulk", "toggle_pause", "reap", "toggle_worker"})
WHY = "the console is read-only (--read-only or QUEUE_CONSOLE_READ_ONLY=1): nothing is written"


def action_name(action: str) -> str:
    return action.split("(", 1)[0]


class ReadOnlyGuard:
    """Needs from the app: ``read_only``, ``BINDINGS``, ``screen_stack``, ``notify``."""

    read_only: bool = False

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self.read_only and action in WRITE_ACTIONS:
            return None  # shown, dimmed; not run
        return True

    def write_binding(self, key: str):
        """The write binding of ``key`` on the main screen, if any."""
        return next(
            (b for b in self.BINDINGS if key in b.key.split(",") and action_name(b.action) in WRITE_ACTIONS), None
        )

    def on_key(self, event: events.Key) -> None:
        if not self.read_only or len(self.screen_stack) > 1:
            return
        binding = self.write_binding(event.key)
        if binding is not None:
            event.stop()
            self.say_disabled(binding)

    def say_disabled(self, binding) -> None:
        self.notify(f"{binding.description} is disabled: {WHY}.", title="Read-only", severity="warning")

    async def run_binding(self, binding) -> None:
        """The command palette's way to a key's action: a write says why it does nothing when read-only."""
        if self.read_only and action_name(binding.action) in WRITE_ACTIONS:
            self.say_disabled(binding)
            return
        await self.run_action(binding.action)
