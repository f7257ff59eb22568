"""The PostgreSQL planner's statistics of the jobs table, kept fresh by the workers that depend on them.

A claim reads the next pending jobs in index order (``jobs_pending_claim``) and stops after a few; the
planner takes that plan only if it knows how many jobs are pending. Without statistics (a table never
analyzed, or analyzed before a backlog arrived) it guesses a handful, and reads every pending job of the
worker's types through the type index (``jobs_type_due``) and sorts them, for every claim: 9 ms a claim with 20,000
jobs pending here, a 20,000-job drain 5x slower than with statistics, and worse the bigger the backlog.

Autovacuum keeps statistics fresh where it runs (schema v3 sets the jobs table's analyze threshold:
``ANALYZE_THRESHOLD`` rows plus ``ANALYZE_SCALE_FACTOR`` of the table), but it may be off, as on this
project's CI server, and it looks at a table once a minute at most. So a worker checks when it starts and
then every ``STATISTICS_INTERVAL`` of its heartbeat thread: the same rule, read from ``pg_stat`` (one
catalog row), and an ``ANALYZE`` (a sample of 30,000 rows, ~10-200 ms) when it says so. ``SKIP_LOCKED``:
when another worker (or autovacuum) is analyzing the table, this one does not wait for it.
"""

from __future__ import annotations

import peewee as pw

# The analyze rule of the jobs table's reloptions (schema.POSTGRES_CHURN_V3), which autovacuum follows.
ANALYZE_THRESHOLD = 1000
ANALYZE_SCALE_FACTOR = 0.02

# Only a table this role may analyze (its owner's, or a superuser): another role's ANALYZE is skipped with
# a warning, and would be tried again at every check.
STALE_SQL = (
    "SELECT (c.reltuples < 0 OR COALESCE(s.n_mod_since_analyze, 0) > %s + %s * GREATEST(c.reltuples, 0))"
    " AND pg_has_role(c.relowner, 'USAGE')"
    " FROM pg_class AS c LEFT JOIN pg_stat_user_tables AS s ON s.relid = c.oid WHERE c.oid = %s::regclass"
)


def statistics_stale(db: pw.Database, table: str) -> bool:
    """True when ``table`` was never analyzed or has changed by more than the analyze rule since, and this
    connection's role may analyze it."""
    row = db.execute_sql(STALE_SQL, (ANALYZE_THRESHOLD, ANALYZE_SCALE_FACTOR, _quoted(table))).fetchone()
    return bool(row and row[0])


def refresh_statistics(db: pw.Database, table: str) -> bool:
    """ANALYZE ``table`` if its statistics are stale; True if this call analyzed it."""
    if not statistics_stale(db, table):
        return False
    db.execute_sql(f"ANALYZE (SKIP_LOCKED) {_quoted(table)}")
    return True


def _quoted(table: str) -> str:
    return '"' + table.replace('"', '""') + '"'
