"""What the HTTP API and its client agree on, with no web framework behind it.

``queue_core.client`` (a remote worker's queue) reads these; ``queue_core.server`` writes them. Kept
apart from the server so that ``queue-worker --api`` never imports FastAPI or Starlette.
"""

from __future__ import annotations

PROBLEM_JSON = "application/problem+json"
# The most jobs one claim-many request asks for. A claim means "up to n", so a client with more free slots
# asks for this many and its other slots claim on the next round.
MAX_CLAIM_BATCH = 100

# RFC 9457 problem types: URNs, not URLs, because nothing is served at them; "about:blank" means the
# status code says it all (RFC 9457 section 4.2.1).
BLANK = "about:blank"
VALIDATION = "urn:queue-core:problem:validation-error"
MALFORMED_JSON = "urn:queue-core:problem:malformed-json"
IDEMPOTENCY_CONFLICT = "urn:queue-core:problem:idempotency-conflict"
NOT_FOUND = "urn:queue-core:problem:job-not-found"
# A worker's heartbeat or stop for an id the registry has no row for: it must register first.
WORKER_NOT_REGISTERED = "urn:queue-core:problem:worker-not-registered"
# One type per cause of a 409: a client may branch on it (a worker's lost claim vs an operator's retry).
NOT_HELD = "urn:queue-core:problem:job-not-held"
NOT_FAILED = "urn:queue-core:problem:job-not-failed"
ALREADY_FINAL = "urn:queue-core:problem:job-already-final"  # cancel of a completed, failed or cancelled job
UNAUTHORIZED = "urn:queue-core:problem:unauthorized"
READ_ONLY = "urn:queue-core:problem:read-only-token"  # a write sent with the read token
CROSS_ORIGIN = "urn:queue-core:problem:cross-origin"  # a browser page of another site, to a server without a token
BODY_TOO_LARGE = "urn:queue-core:problem:body-too-large"
UNAVAILABLE = "urn:queue-core:problem:database-unavailable"
DISK_FULL = "urn:queue-core:problem:disk-full"  # 507: the SQLite database's disk is full, nothing was written
INTERNAL = "urn:queue-core:problem:internal-error"
