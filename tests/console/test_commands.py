"""The equivalent command (issue 16, item 5): every admin-CLI line the console shows is a real command.

Each line is split as a shell would and parsed by the admin CLI's own parser (``queue_core.cli.admin``; the
console itself may not import it), and what the parser read is what the console did.
"""

from __future__ import annotations

import shlex
import subprocess
from datetime import datetime, timedelta
from types import SimpleNamespace

import pytest
from console_helpers import settle, wait_for
from hypothesis import given
from hypothesis import strategies as st

from console.commands import PROGRAM, bulk_lines, command_line, enqueue_line, is_command, quote
from console.screens.confirm import ConfirmScreen
from console.widgets.command_panel import CommandPanel
from queue_core.cli.admin import build_parser


def parse(line: str):
    words = shlex.split(line)
    assert words[:3] == PROGRAM.split(), line
    return build_parser().parse_args(words[3:])


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=60))
def test_a_query_of_any_text_reaches_the_cli_as_typed(query):
    (line,) = bulk_lines("retry", query=query, ids=())
    args = parse(line)
    assert (args.command, args.query) == ("retry", query)


@pytest.mark.parametrize("action", ["retry", "cancel", "delete"])
def test_a_hand_picked_selection_is_one_line_per_job_then_a_note(action):
    lines = bulk_lines(action, query=None, ids=[9, 3, 5, 7, 11, 13, 15])
    commands = [line for line in lines if is_command(line)]
    assert [parse(line).id for line in commands] == [3, 5, 7, 9, 11]
    assert {parse(line).command for line in commands} == {action}
    assert lines[-1] == f"# … and 2 more, one {action} per job id"


def test_enqueue_reap_and_queue_lines_parse_to_what_was_done():
    job = SimpleNamespace(
        type="send-invoice",
        payload={"to": "ann o'hara", "note": 'say "$HOME"'},
        priority=-3,
        max_retries=4,
        idempotency_key="inv 77",
        created_at=datetime(2026, 1, 1),
        run_at=datetime(2026, 1, 1) + timedelta(seconds=90),
        queue="billing",
    )
    args = parse(enqueue_line(job))
    assert (args.type, args.payload, args.priority, args.max_retries) == (job.type, job.payload, "-3", 4)
    assert (args.idempotency_key, args.delay, args.queue) == ("inv 77", 90.0, "billing")
    assert parse(command_line("reap", older_than="300")).older_than == 300
    assert parse(command_line("pause", "reports")).name == "reports"


def test_a_delay_reads_as_it_was_typed_not_as_the_clocks_gap():
    # The form's now is a moment before the create's created_at: "2s" came out as --delay 1.99999.
    created = datetime(2026, 1, 1, 12, 0, 0, 12)
    job = SimpleNamespace(
        type="t", payload={}, priority=0, max_retries=3, idempotency_key=None, queue="default", created_at=created
    )
    job.run_at = created + timedelta(seconds=2) - timedelta(microseconds=12)
    assert "--delay 2 " in enqueue_line(job) + " "


@pytest.mark.asyncio
@pytest.mark.backends("sqlite", "postgresql")
async def test_every_line_the_console_showed_is_a_real_command(pilot, scene):
    """Actions by key (enqueue, retry, cancel, pause, reap, a bulk retry), then each panel line parsed."""
    app = pilot.app
    await pilot.press("n", *"echo", "tab", *'{"a": "b c"}', "enter")
    await settle(pilot)
    while app.focused.id != "failed":
        await pilot.press("tab")
    await pilot.press("r")
    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation of one job")
    await pilot.press("y")
    await settle(pilot)
    await pilot.press("a")
    await settle(pilot)
    await pilot.press("r")
    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
    await pilot.press("y")
    await settle(pilot)
    await pilot.press("x")
    await settle(pilot)
    await pilot.press("e")
    lines = list(app.query_one(CommandPanel).lines)
    assert len(lines) == 4, lines
    parsed = [parse(line) for line in lines]
    assert [args.command for args in parsed] == ["enqueue", "retry", "retry", "reap"]
    assert parsed[0].payload == {"a": "b c"} and parsed[0].type == "echo"
    assert parsed[2].query == "status:failed"
    assert app.query_one(CommandPanel).has_class("-expanded")


def test_the_collapsed_panel_shows_a_command_even_when_a_note_came_last():
    """After a hand-picked action on more jobs than are spelt out, the one-line panel showed only
    "# … and 2 more, one delete per job id": no command until ``e``. It shows the last command, then the note."""
    panel = CommandPanel()
    panel.add(bulk_lines("delete", query=None, ids=[9, 3, 5, 7, 11, 13, 15]))
    [line] = panel._last()
    command, note = line.split("  # ", 1)
    assert parse(command).command == "delete" and note.startswith("… and 2 more")
    assert shlex.split(line, comments=True) == shlex.split(command)  # as a shell reads it: the note is a comment
    panel.add(bulk_lines("retry", query="status:failed", ids=()))
    assert panel._last() == [panel.lines[-1]] and is_command(panel.lines[-1])


@pytest.mark.parametrize(
    "value",
    ["card \x1b[31mRED\x1b[0m \u202eRTL\u202c \x9b2J", "tab\there", "it's \\ \x1b", "C1 \x85, astral \U000e0001"],
)
def test_a_cause_with_a_control_character_is_a_word_bash_reads_back_byte_for_byte(value):
    """Review finding: a cause (a handler's error) holding ``\\x1b[31m`` went into the ``--cause "..."`` line raw,
    and the command panel coloured the terminal. It is a ``$'...'`` word now: printable, and the cause itself
    once a shell reads it."""
    word = quote(value)
    assert word.isprintable() and word.startswith("$'")
    env = {"LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin"}
    read = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True, env=env, check=True).stdout
    assert read == value.encode()
