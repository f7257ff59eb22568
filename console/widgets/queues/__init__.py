"""The queues view: per queue its pause state, counts and latency."""
