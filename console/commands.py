"""The equivalent command: the admin-CLI line (``python -m queue_core ...``) that does what a key just did.

Pure text, no import of the CLI (the console is its peer, not its user: see the import contracts); a test
feeds every line made here to ``queue_core.cli.admin``'s parser to prove each is a real command. Lines run
against ``$QUEUE_DB_URL`` as the console does; add ``--db URL`` for another database.
"""

from __future__ import annotations

import json
import re
import shlex
import unicodedata
from collections.abc import Sequence

PROGRAM = "python -m queue_core"
SAFE = re.compile(r"[\w@%+=:,./-]+")
DOUBLE_QUOTE_SPECIAL = re.compile(r'["\\$`!]')
IDS_SPELT_OUT = 5  # a hand-picked selection longer than this is named by its first ids and a count


def quote(value: str) -> str:
    """``value`` as one shell word: bare when safe, in double quotes as an operator would type it, and in
    single quotes (shlex's) when it holds a character double quotes do not keep literal, and as ``$'...'``
    with escapes when it holds a control character, which a terminal would act on (``ansi_c_quote``)."""
    if any(unicodedata.category(char) == "Cc" for char in value):
        return ansi_c_quote(value)
    if value and SAFE.fullmatch(value):
        return value
    if not DOUBLE_QUOTE_SPECIAL.search(value):
        return f'"{value}"'
    return shlex.quote(value)


def ansi_c_quote(value: str) -> str:
    """``value`` as a bash/zsh ``$'...'`` word, every character that is not printable as its escape: the word
    is the value, byte for byte, and the line shows no control character. Review finding: a cause holding
    a handler's ``\\x1b[31m`` went into the panel's ``--cause "..."`` raw, and coloured the terminal. (The
    query line refuses control characters, so only a cause, made of a handler's error, holds one.)"""
    escaped = []
    for char in value:
        if char in "\\'":
            escaped.append("\\" + char)
        elif char.isprintable():
            escaped.append(char)
        elif ord(char) < 0x80:
            escaped.append(f"\\x{ord(char):02x}")
        elif ord(char) <= 0xFFFF:
            escaped.append(f"\\u{ord(char):04x}")
        else:
            escaped.append(f"\\U{ord(char):08x}")
    return "$'" + "".join(escaped) + "'"


def command_line(verb: str, *arguments: object, **options: object) -> str:
    """``python -m queue_core VERB ARG... --option value``; a True option is a flag, None is left out."""
    words = [PROGRAM, verb, *(quote(str(argument)) for argument in arguments)]
    for name, value in options.items():
        if value is None or value is False:
            continue
        option = "--" + name.replace("_", "-")
        if value is True:
            words.append(option)
        elif str(value).startswith("-"):  # argparse would read "-x" after the option as an option of its own
            words.append(f"{option}={quote(str(value))}")
        else:
            words += [option, quote(str(value))]
    return " ".join(words)


def bulk_lines(
    action: str, *, query: str | None, ids: Sequence[int], cause: str | None = None, cause_query: str = ""
) -> list[str]:
    """What a bulk action on a selection was: one ``--query`` line when the selection was "everything
    matching" that query, one ``--cause`` line when it was a failure group's jobs, else one line per job (the
    first few, then a note of how many more)."""
    if cause is not None:
        return [command_line(action, cause=cause, query=cause_query or None)]
    if query is not None:
        return [command_line(action, query=query)]
    ids = sorted(ids)
    lines = [command_line(action, job_id) for job_id in ids[:IDS_SPELT_OUT]]
    if len(ids) > IDS_SPELT_OUT:
        lines.append(f"# … and {len(ids) - IDS_SPELT_OUT:,} more, one {action} per job id")
    return lines


def enqueue_line(job) -> str:
    # The form adds the delay to its clock's now, a moment before the create stamps created_at: 2s came out
    # as 1.99999. To the hundredth, as anyone types a delay.
    delay = round((job.run_at - job.created_at).total_seconds(), 2)
    return command_line(
        "enqueue",
        job.type,
        payload=json.dumps(job.payload, separators=(",", ":"), sort_keys=True),
        priority=job.priority,
        max_retries=job.max_retries,
        idempotency_key=job.idempotency_key,
        delay=f"{delay:g}" if delay > 0 else None,
        queue=job.queue,
    )


def is_command(line: str) -> bool:
    """A line to run (the rest are notes, starting with ``#``)."""
    return line.startswith(PROGRAM + " ")
