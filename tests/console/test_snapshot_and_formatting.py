"""The console's plain parts: the snapshot a refresh reads, the text it shows, the command line."""

from __future__ import annotations

from datetime import timedelta

import pytest

from console.app import main
from console.formatting import header_text, one_line, short_duration
from console.options import build_parser
from console.screens.enqueue import parse_delay
from console.snapshot import COUNT_CAP, format_count, load_snapshot
from console.widgets.jobs.stack import share_height
from queue_core.errors import ValidationError


def test_snapshot_of_the_scene(scene):
    snapshot = load_snapshot(scene, stale_after=timedelta(seconds=300))
    assert (
        snapshot.counts == scene.counts() == {"pending": 20, "running": 4, "completed": 30, "failed": 4, "cancelled": 1}
    )
    assert [job.id for job in snapshot.rows["pending"]] == [job.id for job in scene.window("pending")]
    assert [job.id for job in snapshot.rows["failed"]] == [job.id for job in scene.window("failed")]
    [stale] = [job for job in snapshot.rows["running"] if job.id in snapshot.stale_ids]
    assert stale.worker_id == "host-c:977" and snapshot.stale_count == 1
    assert snapshot.throughput == scene.throughput(timedelta(minutes=5))
    assert snapshot.shown_text("pending") == "20"


def test_snapshot_window_and_filter(scene):
    snapshot = load_snapshot(scene, stale_after=timedelta(seconds=300), window=5, type_filter="send-invoice")
    assert len(snapshot.rows["pending"]) == 5 and {job.type for job in snapshot.rows["pending"]} == {"send-invoice"}
    assert snapshot.shown_text("pending") == f"5 of {scene.counts(type='send-invoice')['pending']}"
    assert snapshot.stale_count == 0  # the stale job is a generate-report


def test_stale_threshold_is_the_option(scene):
    assert load_snapshot(scene, stale_after=timedelta(seconds=3)).stale_count == 4  # heartbeats 5 s old
    assert load_snapshot(scene, stale_after=timedelta(hours=1)).stale_count == 0


def test_counts_past_the_cap_read_as_more_than():
    assert format_count(9_876) == "9,876"
    assert format_count(COUNT_CAP + 1) == f"{COUNT_CAP:,}+"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (59.9, "59s"), (65, "1m05s"), (3600 + 120, "1h02m"), (86400 * 3 + 3600 * 4, "3d04h")],
)
def test_short_duration(seconds, text):
    assert short_duration(seconds) == text


def test_one_line_of_an_error():
    assert one_line("boom\nmore", 10) == "boom"
    assert one_line("Traceback (most recent call last):\n  File x\nValueError: bad", 40) == "ValueError: bad"
    assert one_line("x" * 50, 10) == "x" * 9 + "…"
    assert one_line(None, 10) == ""


def test_tables_share_the_height_by_need():
    # Short tables get what they need, no more: an empty table (4) is not given a blank row to reach the minimum.
    assert share_height(30, [7, 4, 20], minimum=5) == [7, 4, 19]
    assert share_height(30, [40, 40, 40], minimum=5) == [10, 10, 10]
    assert share_height(33, [4, 4, 4], minimum=5) == [25, 4, 4]  # room to spare: the first table takes it


@pytest.mark.parametrize(
    "argv",
    [
        ["--stale-after", "0"],
        ["--refresh", "soon"],
        ["--concurrency", "0"],
        ["--stale-after", "-5"],
        ["--worker-id", " "],
        ["--handlers", "no_such_module_here"],
    ],
)
def test_bad_options_say_what_to_fix(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_bad_database_url_is_one_line_not_a_traceback(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--db", "mysql://nope/x"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.startswith("error: unsupported database URL") and len(err.splitlines()) == 1


def test_defaults():
    args = build_parser().parse_args([])
    assert (args.stale_after, args.refresh, args.worker, args.demo) == (300.0, 1.0, False, False)


@pytest.mark.parametrize("name", ["mail", "two words", 'say "hi"', "back\\slash", '"quoted'])
def test_a_queue_name_goes_into_the_query_line_and_back_unchanged(name):
    from console.controls import query_value
    from queue_core.store.query import Term, parse_query

    assert parse_query(f"queue:{query_value(name)}").terms == (Term("queue", name),)


@pytest.mark.parametrize("text", ["１m", "1_0s", "1e3", "٥", "inf", "nan", "-5m", "5mm"])
def test_a_delay_in_other_digits_is_refused(text):
    # float() reads "１", "1_0" and "1e3"; a delay is ASCII digits, perhaps a fraction, then a unit.
    with pytest.raises(ValidationError, match="is not a delay"):
        parse_delay(text)


@pytest.mark.parametrize(("text", "seconds"), [("90", 90), ("90s", 90), ("5m", 300), ("1.5h", 5400), ("5 m", 300)])
def test_a_delay_in_ascii_digits_is_read(text, seconds):
    assert parse_delay(text).total_seconds() == seconds


@pytest.mark.parametrize(
    ("room", "expected"),
    [
        (200, "demo.db · read-only · Jobs · all types · query status:failed · 12:00:00 UTC · 3 selected"),
        (80, "demo.db · read-only · Jobs · query status:failed · 12:00:00 UTC · 3 selected"),
        (70, "read-only · Jobs · query status:failed · 12:00:00 UTC · 3 selected"),
        (60, "read-only · query status:failed · 12:00:00 UTC · 3 selected"),
        (55, "read-only · query stat…iled · 12:00:00 UTC · 3 selected"),
        (30, "read-only · query sta…led · 12:00:00 UTC · 3 selected"),  # never below 7: the end is cut
    ],
)
def test_the_header_gives_up_the_least_useful_part_first(room, expected):
    text = header_text("demo.db", "Jobs", None, "status:failed", "12:00:00 UTC · 3 selected", room, mode="read-only")
    assert text == expected and (len(text) <= room or room == 30)


def test_a_job_claimed_between_the_rows_and_the_counts_never_reads_as_more_shown_than_counted(scene, monkeypatch):
    """The rows and the counts are two reads: a job claimed between them was in the pending rows and not in
    the pending count, and the title read "Pending 20 of 19" for one refresh."""
    real_counts = scene.counts

    def counts_after_a_claim(**kwargs):
        scene.claim("w1")  # another process's worker claims between the two reads
        return real_counts(**kwargs)

    monkeypatch.setattr(scene, "counts", counts_after_a_claim)
    snapshot = load_snapshot(scene, stale_after=timedelta(seconds=300))
    assert len(snapshot.rows["pending"]) == 20 and real_counts()["pending"] == 19
    assert snapshot.shown_text("pending") == "20" and snapshot.count_text("pending") == "20"
    assert snapshot.shown_text("running") == "4 of 5"  # more counted than shown: true, and said
