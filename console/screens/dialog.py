"""The base of every modal of the console: it answers once, and its footer shows its own keys.

Two Enter presses in quick succession both reach a dialog before it leaves the screen stack; a second
``dismiss`` then pops a screen that is not there (``ScreenStackError``) and a form would submit twice.

A modal screen has no footer of its own: the main screen's stayed in sight under it, listing Retry, Cancel,
Delete and the rest, none of which does anything on a dialog. Each dialog docks its own footer over it,
with the dialog's keys (the app hides its main-screen keys there: ``QueueConsole.check_action``), and the
main screen's footer is not drawn meanwhile (console.tcss).
"""

from __future__ import annotations

from textual.screen import ModalScreen

from ..widgets.footer import WrappingFooter

UNDER_DIALOG = "-under-dialog"  # on the main screen while a dialog is open: its footer is not drawn


class Dialog(ModalScreen):
    answered = False  # set by the first answer; anything after it is a late key press and does nothing

    def on_mount(self) -> None:
        self.mount(WrappingFooter(compact=True))
        # The main screen's footer, on more lines than this one at 80 columns, showed its keys above it.
        self.app.screen_stack[0].add_class(UNDER_DIALOG)

    def on_unmount(self) -> None:
        stack = self.app.screen_stack
        if stack and not any(isinstance(screen, Dialog) and screen is not self for screen in stack):
            stack[0].remove_class(UNDER_DIALOG)

    def answer(self, result=None) -> None:
        if self.answered:
            return
        self.answered = True
        self.dismiss(result)
