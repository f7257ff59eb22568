"""The base of every modal of the console: it answers once.

Two Enter presses in quick succession both reach a dialog before it leaves the screen stack; a second
``dismiss`` then pops a screen that is not there (``ScreenStackError``) and a form would submit twice.
"""

from __future__ import annotations

from textual.screen import ModalScreen


class Dialog(ModalScreen):
    answered = False  # set by the first answer; anything after it is a late key press and does nothing

    def answer(self, result=None) -> None:
        if self.answered:
            return
        self.answered = True
        self.dismiss(result)
