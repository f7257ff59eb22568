"""queue_core.store.reads: the read model's own rules (the rest is exercised in test_repository)."""

from __future__ import annotations


def test_refusal_says_why_an_ack_would_match_nothing(repo):
    pending, _ = repo.create("t")
    assert repo.refusal(424242) == "no job with id 424242"
    assert repo.refusal(pending.id) == "it is pending, not running"
    job = repo.claim("w1")
    assert repo.refusal(job.id) is None
    assert repo.refusal(job.id, worker_id="w1", attempt=job.attempt) is None
    assert repo.refusal(job.id, worker_id="w2") == "it is held by worker 'w1', not 'w2'"
    assert repo.refusal(job.id, worker_id="w1", attempt=job.attempt + 1) == (
        f"attempt {job.attempt + 1} is over; the job is now on attempt {job.attempt}"
    )
    # Each reason is the one the ack itself ran into: what refusal says None to, the ack accepts.
    assert repo.complete(job.id, worker_id="w2") is None and repo.refusal(job.id, worker_id="w2") is not None
    assert repo.complete(job.id, worker_id="w1", attempt=job.attempt) is not None
    assert repo.refusal(job.id, worker_id="w1", attempt=job.attempt) == "it is completed, not running"


def test_the_running_window_puts_the_longest_silent_first(repo, clock):
    first, _ = repo.create("t")
    second, _ = repo.create("t")
    third, _ = repo.create("t")
    repo.claim("w")  # first
    clock.advance(10)
    repo.claim("w")  # second
    clock.advance(10)
    repo.claim("w")  # third
    clock.advance(10)
    repo.heartbeat([first.id], worker_id="w")  # claimed first, but the latest sign of life now
    order = [second.id, third.id, first.id]
    assert [job.id for job in repo.window("running")] == order
    assert [row.id for row in repo.window_rows("running")] == order


def test_capped_counts_and_window_rows_replay_their_statement_with_each_type(repo):
    # Both are compiled once per shape and replayed: the type is a bound value, never the first one's.
    for type_, n in (("a", 3), ("b", 1)):
        for _ in range(n):
            repo.create(type_)
    repo.claim("w", types=["a"])
    for _ in range(2):  # the second pass replays the statements compiled by the first
        assert repo.counts(type="a", cap=10) == {**repo.counts(cap=10), "pending": 2, "running": 1}
        assert repo.counts(type="b", cap=10)["pending"] == 1 and repo.counts(type="b", cap=10)["running"] == 0
        assert repo.counts(cap=2)["pending"] == 3  # more than the cap reads as cap + 1
        assert [row.type for row in repo.window_rows("pending", type="a")] == ["a", "a"]
        assert [row.type for row in repo.window_rows("pending", type="b")] == ["b"]
        assert len(repo.window_rows("pending")) == 3
