"""``queue-console`` as a program: its exit code, and what ``--demo`` agrees to seed."""

from __future__ import annotations

import pytest
from textual.app import App

from console.app import QueueConsole, main

# --- a crash exits non-zero ---------------------------------------------------------------------


def test_a_crash_exits_non_zero(tmp_path, monkeypatch):
    def crash(self) -> None:
        raise RuntimeError("boom in the console")

    monkeypatch.setattr(QueueConsole, "on_mount", crash)
    monkeypatch.setattr(QueueConsole, "run", lambda self: App.run(self, headless=True))
    with pytest.raises(SystemExit) as info:
        main(["--db", f"sqlite:///{tmp_path / 'q.db'}"])
    assert info.value.code == 1


def test_a_clean_quit_exits_zero(tmp_path, monkeypatch):
    def quit_at_once(self) -> None:
        self.exit()

    monkeypatch.setattr(QueueConsole, "on_mount", quit_at_once)
    monkeypatch.setattr(QueueConsole, "run", lambda self: App.run(self, headless=True))
    with pytest.raises(SystemExit) as info:
        main(["--db", f"sqlite:///{tmp_path / 'q.db'}"])
    assert info.value.code == 0
