-- wrk -t2 -c16 -d10s -s tests/bench/post_job.lua http://127.0.0.1:8000
-- Every request enqueues a new job (no idempotency key), the guide's web handler in a loop.
wrk.method = "POST"
wrk.path = "/jobs"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"type": "bench", "payload": {"to": "ann@example.com", "n": 1}, "priority": "high"}'
