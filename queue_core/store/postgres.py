"""PostgreSQL connections that outlive the server's restarts: a dropped connection is replaced, never reused.

psycopg is not imported here: ``driver`` wires it into peewee once a PostgreSQL database is made, and this
module is imported by every program, SQLite ones too.
"""

from __future__ import annotations

import select

import peewee as pw

# How many times a readable idle connection's input is read before it is taken as alive: a LISTENing
# connection's notifications may keep coming, and each read keeps them for the application.
IDLE_READS = 4


class ReconnectingPostgresqlDatabase(pw.PostgresqlDatabase):
    """Opens a new connection when the server has dropped this thread's (a restart, a failover, a killed
    backend): peewee alone would keep answering "the connection is closed" until someone closed it, so a
    worker, the API and the console would each need a restart after the database came back. Only between
    transactions: inside one, the failure belongs to the transaction, which the caller retries whole.

    A connection the server closed while it sat idle is found before a statement is sent on it, not by the
    statement failing (``connection_dropped``): each of a server's pooled connections cost one 503 after a
    restart or a ``pg_terminate_backend``, and a worker's heartbeat or claim one error line. Nothing is ever
    sent twice: a statement that meets a connection dropped after the check fails as before."""

    generic_plans = False  # see use_generic_plans

    def use_generic_plans(self) -> None:
        """Plan each prepared statement once for all its parameters (``plan_cache_mode``), on this thread's
        connection if open and on every connection opened after: for a worker, whose claim psycopg prepares
        after five runs. With statistics, PostgreSQL kept re-planning it for every claim (its custom plans
        look cheaper than the generic one), ~0.4 ms of server CPU a claim for the same plan: the pending
        jobs in index order. Other programs keep the default: their statements vary more and run less."""
        self.generic_plans = True
        if not self.is_closed():
            self._plan_generically(self._state.conn)

    def _initialize_connection(self, conn):
        super()._initialize_connection(conn)
        watch_idle(conn)
        if self.generic_plans:
            self._plan_generically(conn)

    @staticmethod
    def _plan_generically(conn) -> None:
        with conn.cursor() as cursor:  # autocommit (peewee sets it): a session setting, outside any transaction
            cursor.execute("SET plan_cache_mode = force_generic_plan")

    def cursor(self, named_cursor=None):
        if not self.is_closed() and self.transaction_depth() == 0 and connection_dropped(self._state.conn):
            self._replace_connection()
        return super().cursor(named_cursor)

    def _replace_connection(self) -> None:
        """Close the dropped connection and open another, keeping this thread's open ``connection_context()``s:
        peewee's close and connect each empty their stack, and leaving a context then raised "IndexError: pop
        from empty list" (review finding: the console, which reads and writes inside one, said "Cannot read
        the queue: IndexError" for a read that worked, and a write that did too ended in that error). The
        outermost context closes the new connection when it is left, as it would have the old one."""
        contexts = self._state.ctx
        try:
            self.close()
            self.connect()
        finally:
            self._state.ctx = contexts


class IdleWatch:
    """A connection's socket, polled without waiting, and whether the server sent the connection a notice or an
    error since ``heard`` was last cleared (its notice handler). Between transactions an idle backend speaks
    unprompted only to say goodbye: a terminated backend's FATAL, an immediate shutdown's WARNING, each just
    before the end of the stream, which may come a moment later."""

    __slots__ = ("heard", "poller")

    def __init__(self, conn):
        self.heard = False
        self.poller = select.poll()  # not select(): a busy server's socket numbers may pass select's 1,024
        self.poller.register(conn.fileno(), select.POLLIN)

    def __call__(self, diagnostic) -> None:
        self.heard = True


WATCH = "_queue_core_idle_watch"  # the connection's IdleWatch, kept as an attribute of it


def watch_idle(conn) -> IdleWatch:
    watch = IdleWatch(conn)
    conn.add_notice_handler(watch)
    setattr(conn, WATCH, watch)
    return watch


def connection_dropped(conn) -> bool:
    """Has the server dropped ``conn``, a psycopg connection between transactions? One ``poll`` of its socket
    (under a µs): an idle connection is sent nothing unless the server is dropping it (a goodbye notice, then
    the end of the stream) or it LISTENs. So only a readable socket is read: dropped if the stream ended or a
    notice came; a notification read is kept for the application's next ``notifies()``."""
    if conn.closed:
        return True
    watch = getattr(conn, WATCH, None) or watch_idle(conn)  # one peewee did not open (never, so far)
    for _ in range(IDLE_READS):
        if not watch.poller.poll(0):
            return False
        try:
            conn.pgconn.consume_input()
        except Exception:  # psycopg's OperationalError: "server closed the connection unexpectedly"
            return True
        watch.heard = False  # a notice a statement of the application's got is no goodbye
        conn.pgconn.is_busy()  # parses what was read: a notice reaches the handler, a notification waits
        if conn.closed or watch.heard:
            return True
    return False


# What an operator must change when PostgreSQL refuses the queue's statements in a way no retry mends, by
# SQLSTATE: the driver's own words name the symptom ("cannot execute UPDATE in a read-only transaction"), not
# the setting behind it. Each says that nothing was written: the statement failed whole.
REFUSALS = {
    "25006": "the server runs this connection read-only (default_transaction_read_only set for the role or the"
    " database, or a standby server, as after a fail-over): nothing was written; point the URL at the primary,"
    " with a role that may write",
    "42501": "the role lacks a privilege the queue needs: nothing was written; the queue's role needs SELECT,"
    " INSERT, UPDATE and DELETE on its tables and USAGE on their sequences, and making or upgrading the"
    " tables (python -m queue_core migrate, run once) needs a role that may CREATE in the schema",
    "57014": "the server cancelled the statement (its statement_timeout, or pg_cancel_backend): nothing was"
    " written; raise the queue role's statement_timeout (ALTER ROLE ... SET statement_timeout = '60s'), or"
    " give it in the URL (?options=-cstatement_timeout%3D60s)",
    "53300": "the server has no connection left for this role (max_connections, or the role's CONNECTION"
    " LIMIT): each worker process holds --concurrency + 3 connections (+ 1 with periodic jobs); raise the"
    " limit, or run fewer slots",
}
# A refused connection has no SQLSTATE in psycopg: PostgreSQL's words for 53300 at connect.
TOO_MANY_CONNECTIONS = ("too many clients already", "remaining connection slots are reserved", "too many connections")


def refusal(exc: BaseException) -> str | None:
    """What to change when ``exc`` (a peewee error, or one it wraps) is one of PostgreSQL's ``REFUSALS``; None
    for any other error (a lost connection, say, which the next try may get past)."""
    seen: BaseException | None = exc
    for _ in range(8):  # peewee's error holds psycopg's as its first argument, and as its context
        if seen is None:
            return None
        state = getattr(seen, "sqlstate", None)
        if state in REFUSALS:
            return REFUSALS[state]
        if any(words in str(seen) for words in TOO_MANY_CONNECTIONS):
            return REFUSALS["53300"]
        wrapped = seen.args[0] if seen.args and isinstance(seen.args[0], BaseException) else None
        seen = wrapped or seen.__cause__ or seen.__context__
    return None
