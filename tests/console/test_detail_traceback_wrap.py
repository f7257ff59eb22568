"""A traceback line too long for the job detail wraps under its own indent, not at the left edge.

Review finding: at 80 columns a long line of a failed attempt's traceback (a frame's path, a line of code)
went on at the left edge of the detail, in among the "File ..." lines, and the traceback was hard to follow.
"""

from __future__ import annotations

import pytest
from console_helpers import screen_lines, settle
from textual.content import Content

from console.detail_text import Hanging, hang
from console.screens.detail import JobDetailScreen

pytestmark = pytest.mark.asyncio

CODE = "    charge = gateway.charge(card=order.card, amount=order.total, currency=order.currency, idempotency=key)"
TRACEBACK = "\n".join(
    [
        "Traceback (most recent call last):",
        '  File "/srv/app/handlers/billing.py", line 41, in charge_card',
        CODE,
        "PaymentDeclined: card declined",
    ]
)


async def test_a_long_traceback_line_goes_on_under_its_indent_and_short_lines_stay_as_they_were(make_app, scene):
    scene.create("charge-card", {"order": 1}, max_retries=0, queue="billing")
    job = scene.claim("host-a:1", queues=["billing"])
    scene.fail(job.id, "PaymentDeclined: card declined", traceback=TRACEBACK)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.push_screen(JobDetailScreen(app.repo, job.id))
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, JobDetailScreen) and screen.detail is not None
        errors = screen.query_one("#detail-errors")
        screen.query_one("#dialog").scroll_to_widget(errors, animate=False)
        await settle(pilot)
        await pilot.pause()
        lines = screen_lines(app)
        (file_row,) = [i for i, line in enumerate(lines) if 'File "/srv/app/handlers/billing.py"' in line]
        code_row = file_row + 1
        file_at = lines[file_row].index("File")
        code_at = lines[code_row].index("charge = gateway")
        assert code_at == file_at + 2, lines[file_row : file_row + 3]  # short lines: as Python prints them
        assert code_row + 1 < len(lines)
        continuation = lines[code_row + 1]
        word = continuation[code_at:].split()[0]
        assert continuation[:code_at].strip(" █") == "" and word in CODE, lines[file_row : code_row + 3]
        assert " ".join(CODE.split()) in " ".join(screen.shown_text().split())  # the text is the whole line


@pytest.mark.backends("sqlite")
async def test_hang_keeps_lines_that_fit_and_gives_up_an_indent_that_leaves_too_little_room():
    assert hang(Content("    short"), 40).plain == "    short"
    assert hang(Content("    " + "word " * 12), 40).plain.split("\n") == [
        "    word word word word word word word",
        "    word word word word word ",
    ]
    deep = Content(" " * 30 + "word " * 10)
    assert hang(deep, 40) is deep  # 10 columns left: wrapped as any text, from the left edge
    text = Content("attempt 1\n  " + "x " * 40 + "\n\nnext")
    assert str(Hanging(text)) == text.plain  # copied or searched: the text, without the layout's breaks
