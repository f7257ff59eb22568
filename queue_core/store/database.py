"""Opening the database: URL parsing and connection settings; on open, store.schema brings the schema up to date."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sqlite3
import stat
import time
import weakref
from urllib.parse import parse_qsl, quote, unquote, urlparse

import peewee as pw

from ..errors import DatabaseURLError, QueueError
from .models import SchemaMeta
from .postgres import ReconnectingPostgresqlDatabase, refusal
from .schema import SCHEMA_VERSION, migrate, newer_schema, schema_version

DEFAULT_URL = "sqlite:///queue.db"
BUSY_TIMEOUT_MS = 10_000
JOURNAL_MODE_RETRY = 0.005  # seconds between tries of a journal_mode that met another connection's switch to WAL
CONNECT_TIMEOUT = 10  # seconds a PostgreSQL connection attempt may take (libpq connect_timeout), unless the URL says
SYNCHRONOUS_MODES = ("NORMAL", "FULL")
# The page size of a new SQLite file (``?page_size=`` in the URL chooses another). A WAL commit writes every
# page it changed whole, and a job's claim and completion change a handful of table and index pages: at
# 2 KiB instead of SQLite's 4 KiB a one-slot worker writes half the bytes a job and drained no-op jobs
# 1.09-1.18x as fast in two A/B runs (README, "Page size"). Smaller pages cost big rows: a payload of
# several KiB spills into more overflow pages, all rewritten at each change of status (3 KiB: 0.93x).
DEFAULT_PAGE_SIZE = 2048
PAGE_SIZES = tuple(2**k for k in range(9, 17))  # what SQLite accepts: powers of two from 512 to 65,536
# WAL pages after which a commit copies the WAL back into the database file (SQLite's default is 1,000). A
# checkpoint copies each page once however often the WAL holds it, and fsyncs the WAL and the file: a queue
# rewrites the same few pages (the ends of its table and indexes) at every commit, so a checkpoint every
# 4,000 pages (8 MiB of WAL at 2 KiB pages) copies a quarter as often for the same pages. One-by-one
# creates ran 1.09x as fast (README, "SQLite settings"). ``?wal_autocheckpoint=`` in the URL for another.
DEFAULT_WAL_AUTOCHECKPOINT = 4000
# Peewee's mapping of a driver's errors to its own (pw.IntegrityError...), and its query log.
_PEEWEE_ERRORS = pw.__exception_wrapper__
_PEEWEE_LOG = logging.getLogger("peewee")
# What a database call can raise beyond our own errors: what the database reports, and a lost connection.
DATABASE_ERRORS = (pw.DatabaseError, pw.InterfaceError)
INVALID_SCHEMA_NAME = "3F000"  # PostgreSQL's SQLSTATE for a schema that does not exist


class DatabaseFileGone(QueueError, pw.OperationalError):
    """The SQLite file a process opened is no longer at its path (``QueueSqliteDatabase.file_gone``). Also a
    ``pw.OperationalError``: database trouble to whoever answers or retries those."""


class DiskFullError(QueueError, pw.OperationalError):
    """SQLite could not write because the disk (or quota) under the database is full; the statement wrote
    nothing. Also a ``pw.OperationalError``, so whoever retries database errors (a worker's ack, the
    console's refresh, the API's 503) treats it as the database trouble it is."""


def disk_full(exc: Exception) -> bool:
    """SQLITE_FULL, as peewee wraps it (the driver's exception is its first argument)."""
    original = exc.args[0] if exc.args and isinstance(exc.args[0], BaseException) else exc
    return getattr(original, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "disk is full" in str(exc)


def disk_full_error(exc: Exception) -> DiskFullError:
    return DiskFullError(f"the disk holding the database is full ({exc}): nothing was written; free space and retry")


class DiskFullCursor(sqlite3.Cursor):
    """A cursor whose SQLITE_FULL is a ``DiskFullError`` wherever a write meets it: at the statement, at the
    fetch that steps an ``INSERT ... RETURNING`` (outside peewee's own error wrapping), or at the COMMIT
    that appends to the WAL. A bare try costs nothing on the way through, so reads keep their speed."""

    def execute(self, *args):
        try:
            return super().execute(*args)
        except sqlite3.OperationalError as exc:
            if disk_full(exc):
                raise disk_full_error(exc) from exc
            raise

    def executemany(self, *args):
        try:
            return super().executemany(*args)
        except sqlite3.OperationalError as exc:
            if disk_full(exc):
                raise disk_full_error(exc) from exc
            raise

    def fetchone(self):
        try:
            return super().fetchone()
        except sqlite3.OperationalError as exc:
            if disk_full(exc):
                raise disk_full_error(exc) from exc
            raise

    def fetchmany(self, *args, **kwargs):
        try:
            return super().fetchmany(*args, **kwargs)
        except sqlite3.OperationalError as exc:
            if disk_full(exc):
                raise disk_full_error(exc) from exc
            raise

    def fetchall(self):
        try:
            return super().fetchall()
        except sqlite3.OperationalError as exc:
            if disk_full(exc):
                raise disk_full_error(exc) from exc
            raise

    def __next__(self):
        try:
            return super().__next__()
        except sqlite3.OperationalError as exc:
            if disk_full(exc):
                raise disk_full_error(exc) from exc
            raise


class DiskFullConnection(sqlite3.Connection):
    def cursor(self, factory=DiskFullCursor):
        return super().cursor(factory)


class QueueSqliteDatabase(pw.SqliteDatabase):
    """Peewee's SQLite database with a leaner ``execute_sql``: the statement goes straight to this thread's
    connection, its errors mapped to peewee's as before (``pw.IntegrityError``...; a ``DiskFullError`` as
    it is). Peewee's own path cost ~4.5 us more a statement on this project's machine (its log check, a
    context manager, its own cursor call), and a create or a one-slot worker's job is one statement. With
    query hooks or peewee's debug log on, peewee's path runs, so both still see every statement."""

    # The file its first connection opened: (st_dev, st_ino) and its absolute path. See file_gone.
    opened_file: tuple[int, int] | None = None
    opened_path: str | None = None

    def _connect(self):
        if self.opened_file is not None and (gone := self.file_gone()) is not None:
            # A thread's first connection after the file went: SQLite would make a new, empty file at the path
            # (a server's new request thread, a stopping worker's release), where an operator may be putting
            # the file back. Refused: the file this database opened is the only one it writes.
            raise DatabaseFileGone(gone)
        conn = super()._connect()
        if self.opened_file is None:
            try:
                found = os.stat(self.database)
            except OSError:
                return conn  # not a file at a path (nothing to watch)
            self.opened_file, self.opened_path = (found.st_dev, found.st_ino), os.path.abspath(self.database)
        return conn

    def file_gone(self) -> str | None:
        """None while the database's path still holds the file its first connection opened; else what became
        of it. A file deleted or renamed while a process has it open stays open: its writes go on into the
        unlinked or renamed file, lost to anyone who opens the path, and a new connection at the path makes
        a new, empty file. One ``os.stat`` (a few µs): for a server to call per request, not per statement."""
        if self.opened_file is None:
            return None
        try:
            found = os.stat(self.opened_path)
        except OSError as exc:
            return f"the database file {self.opened_path} was moved or deleted ({exc.strerror or exc})"
        if (found.st_dev, found.st_ino) != self.opened_file:
            return f"the database file {self.opened_path} was moved, deleted or replaced by another file"
        return None

    def execute_sql(self, sql, params=None):
        if self.query_hooks or _PEEWEE_LOG.isEnabledFor(logging.DEBUG):
            return super().execute_sql(sql, params)
        state = self._state
        if state.closed:
            if not self.autoconnect:
                raise pw.InterfaceError("Error, database connection not opened.")
            self.connect()
        try:
            return state.conn.cursor().execute(sql, params or ())  # a DiskFullCursor: SQLITE_FULL said plainly
        except sqlite3.Error:
            with _PEEWEE_ERRORS:
                raise

    def _set_pragmas(self, conn):
        """Peewee's, except that ``journal_mode`` is tried again within the busy timeout when it meets another
        connection turning the same new file to WAL: SQLite answers that race "database is locked" at once,
        without waiting in its busy handler, and of several workers started together on a new file, one
        failed to open it (one open in seven, four threads opening a new file at once)."""
        cursor = conn.cursor()
        try:
            for pragma, value in self._pragmas:
                give_up = time.monotonic() + (self.timeout if pragma == "journal_mode" else 0)
                while True:
                    try:
                        cursor.execute(f"PRAGMA {pragma} = {value};")
                        break
                    except sqlite3.OperationalError as exc:
                        if "database is locked" not in str(exc) or time.monotonic() >= give_up:
                            raise
                        time.sleep(JOURNAL_MODE_RETRY)
        finally:
            cursor.close()


def default_url() -> str:
    return os.environ.get("QUEUE_DB_URL") or DEFAULT_URL


# Every database open_database returned, and the connections a forked child inherited from them (see
# _forget_inherited_connections).
_OPENED: weakref.WeakSet[pw.Database] = weakref.WeakSet()
_INHERITED: list[object] = []


def _forget_inherited_connections() -> None:
    """In a child just forked: its databases open a connection of their own at their next statement.

    The child inherited its parent's open connection (a web application's module opened the queue before
    ``gunicorn --preload`` forked its workers, say). Used by both, one socket carried both processes' statements
    and answers: on PostgreSQL they crossed ("server sent data without prior row description", "server closed
    the connection unexpectedly"), and SQLite says never to use a connection across a fork. The inherited one is
    kept, never closed here: closing it would end the parent's session (PostgreSQL's Terminate message on the
    shared socket) or touch the parent's file locks (SQLite); psycopg's own finaliser leaves another process's
    connection alone."""
    for db in list(_OPENED):
        state = db._state  # this thread's: the only thread a forked child has
        if state.conn is not None:
            _INHERITED.append(state.conn)
        state.reset()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_inherited_connections)


def open_database(
    url: str | None = None, *, synchronous: str | None = None, create: bool = True, upgrade: bool = True
) -> pw.Database:
    """Open ``url`` (a ``playhouse.db_url`` URL; default ``$QUEUE_DB_URL`` or ``sqlite:///queue.db``).

    The schema is created or migrated on open, so any command can be the first to touch a new file; with
    ``create=False`` a SQLite file that does not exist, or a database (either backend) that holds no queue
    tables, is a DatabaseURLError instead: a command that only reads or changes jobs would show a mistyped
    path or database name as an empty queue, and leave a new file, or the queue's tables in another
    application's database, behind. With ``upgrade=False`` tables of an older schema version are a
    DatabaseURLError too, not upgraded: a read-only look must not write, and an upgrade would also stop the
    workers of the older queue_core from opening the database again. The database's ``schema_found`` is the
    schema version it held before this open (0: no queue tables, made now; below ``SCHEMA_VERSION``:
    upgraded now).
    SQLite: WAL, a busy timeout, ``synchronous=NORMAL`` (durable against a process crash; a power loss
    may drop the last commits) unless ``synchronous="FULL"`` or ``?synchronous=full`` in the URL asks
    for durability against power loss too, at the cost of an fsync per commit.
    """
    url = url or default_url()
    try:
        parsed = urlparse(url)
        parsed.port  # noqa: B018 - read for its check: a port that is no number (or out of range) raises here
    except ValueError as exc:  # an unclosed [IPv6 host, a port that is not a number
        raise DatabaseURLError(f"bad database URL {without_password(url)!r}: {exc}") from None
    scheme = parsed.scheme.split("+")[0]
    if scheme == "sqlite":
        db = _open_sqlite(url, parsed, synchronous)
        if not create and not os.path.exists(db.database):
            raise DatabaseURLError(
                f"no database at {db.database} ({without_password(url)}): check --db or $QUEUE_DB_URL"
                " (python -m queue_core migrate, enqueue or a worker makes a new one)"
            )
        if not create and not _sqlite_has_queue_tables(db.database):
            raise _no_queue_tables(url)
    elif scheme in ("postgres", "postgresql"):
        db = _open_postgres(url, parsed)
    else:
        raise DatabaseURLError(
            f"unsupported database URL {without_password(url)!r}: use sqlite:///path/to/file.db or"
            " postgresql://user@host/dbname"
        )
    version = None  # the schema version found, once read: from then on an error is the migration's
    try:
        db.connect(reuse_if_open=True)
        _check_page_size(db, url)
        # A current schema is only read: no write lock (SQLite) or migration lock (PostgreSQL), so a
        # read-only command never waits behind, or fails for, a writer holding the database.
        version = schema_version(db)
        if version == 0 and not create:
            raise _no_queue_tables(url)
        if version > SCHEMA_VERSION:
            # Said before migrate, which would take the write or migration lock and try CREATE first: a role
            # without CREATE heard "permission denied", a read-only look took the write lock, for nothing.
            raise newer_schema(version, without_password(url))
        if 0 < version < SCHEMA_VERSION and not upgrade:
            raise DatabaseURLError(
                f"the queue's tables in {without_password(url)} are at schema version {version}, older than this"
                f" queue_core's {SCHEMA_VERSION}, and a read-only look does not upgrade them: look with the"
                " queue_core the workers run, or upgrade them for every process with python -m queue_core migrate"
            )
        if version != SCHEMA_VERSION:
            version = migrate(db)
        db.schema_found = version
    except DatabaseURLError:
        db.close()
        raise
    except DATABASE_ERRORS as exc:
        db.close()
        reason = driver_reason(exc)
        if getattr(getattr(exc, "orig", None), "sqlstate", None) == INVALID_SCHEMA_NAME:
            reason += f"; {_missing_schema_hint(parsed.query)}"
        elif why := refusal(exc):  # a read-only or unprivileged role, no connection slot left...
            reason += f": {why}"
        elif version is not None and isinstance(db, pw.SqliteDatabase) and "database is locked" in reason:
            reason += f": {_locked_migration(version, db.timeout)}"
        raise DatabaseURLError(f"cannot open {without_password(url)}: {reason}") from exc
    _OPENED.add(db)
    return db


def _locked_migration(found: int, busy_seconds: float) -> str:
    """Why a SQLite open that had tables to make or upgrade found the file locked, and what to do: of a
    deploy's workers restarted together on tables an older queue_core made, one upgrades them and the rest
    wait for it, each up to the busy timeout (a large file's upgrade takes longer), then said only this."""
    task = "make the queue's tables" if found == 0 else f"upgrade the queue's tables from schema version {found}"
    return (
        f"this open had to {task} to {SCHEMA_VERSION}, and another process (one upgrading them too, a worker,"
        f" the server, a prune) held the write lock for longer than the busy timeout ({busy_seconds:g} s); nothing"
        " was changed. Start it again once that process is done (python -m queue_core migrate upgrades them"
        " once for every process), or let it wait longer: ?busy_timeout=60000 in the URL"
    )


def driver_reason(exc: BaseException) -> str:
    """The first line of a driver's error, which says what is wrong; the rest (the failing SQL, a caret,
    libpq's "Is the server running on that host...") is noise to an operator and breaks a log's lines."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def schema_change(db: pw.Database, url: str | None = None) -> str | None:
    """What ``open_database`` did to the schema of ``db`` (opened from ``url``), as a line for an operator:
    the queue's tables made or upgraded; None when they were current already."""
    found, where = db.schema_found, without_password(url or default_url())
    if found == 0:
        return f"made the queue's tables in {where} (schema version {SCHEMA_VERSION})"
    if found < SCHEMA_VERSION:
        return f"upgraded the queue's tables in {where} from schema version {found} to {SCHEMA_VERSION}"
    return None


def _no_queue_tables(url: str) -> DatabaseURLError:
    return DatabaseURLError(
        f"no queue tables in {without_password(url)}: check --db or $QUEUE_DB_URL (python -m queue_core migrate,"
        " enqueue or a worker makes them)"
    )


def _sqlite_has_queue_tables(path: str) -> bool:
    """Does the SQLite file hold the queue's tables? Looked at read-only, before the connection's pragmas:
    WAL mode persists in the file, and another application's file must be left as it was. A file this cannot
    read says so on the open that follows (True: not this check's to report)."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True)) as conn:
            meta = SchemaMeta._meta.table_name
            found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (meta,))
            return found.fetchone() is not None
    except sqlite3.Error:
        return True


def _missing_schema_hint(query: str) -> str:
    """What to do when PostgreSQL found no schema on the search_path to create the tables in: PostgreSQL's own
    "no schema has been selected to create in" names neither the schema nor the fix."""
    options = dict(parse_qsl(query)).get("options", "")
    named = re.search(r"search_path\s*=\s*([^\s,]+)", options)
    schema = named.group(1) if named else "SCHEMA"
    return f"the search_path's schema must exist first: create it once (psql -c 'CREATE SCHEMA {schema}')"


def without_password(url: str) -> str:
    """``url`` fit for an error message or a log: the password replaced by ``***``, in ``user:password@`` and in
    the query string, where libpq reads ``?password=`` (and ``?sslpassword=``, the client key's) as well. Read
    as libpq reads it, not as ``urlparse`` does, which ends the host at a ``#`` or ``?`` that libpq takes as
    part of the password (and which may not parse at all, for an error message that names the URL)."""
    return re.sub(r"^([^/]*//[^/@]*?:)[^/@]*@", r"\1***@", _without_query_secrets(url))


SECRET_PARAMETERS = ("password", "sslpassword")


def _without_query_secrets(url: str) -> str:
    """``url`` with the value of each secret query parameter replaced by ``***``; libpq percent-decodes a
    parameter's name (``%70assword`` is ``password``), so the name is compared decoded."""
    head, mark, query = url.partition("?")
    if not mark:
        return url
    query, hash_mark, fragment = query.partition("#")
    parts = []
    for part in query.split("&"):
        name, equals, _ = part.partition("=")
        parts.append(f"{name}=***" if equals and unquote(name).strip().lower() in SECRET_PARAMETERS else part)
    return f"{head}?{'&'.join(parts)}{hash_mark}{fragment}"


# SQLite keeps busy_timeout and wal_autocheckpoint in a C int: a larger value in a PRAGMA silently became 0
# (no busy wait at all; checkpoints off and a WAL that grows without bound).
SQLITE_INT_MAX = 2**31 - 1


def _whole(value: str, low: int) -> bool:
    """``value`` is a whole number (ASCII digits: ``int`` refuses other digits) from ``low`` to SQLite's int."""
    return value.isascii() and value.isdigit() and low <= int(value) <= SQLITE_INT_MAX


def _sqlite_options(url: str, query: str) -> dict[str, str]:
    """The URL's options by lower-case name; one given twice is an error: which one would win is the parser's
    detail, and the operator meant one of them."""
    pairs = [(name.lower(), value) for name, value in parse_qsl(query)]
    names = [name for name, _ in pairs]
    if twice := sorted({name for name in names if names.count(name) > 1}):
        raise DatabaseURLError(f"SQLite URL option(s) {', '.join(twice)} given more than once in {url!r}: keep one")
    return dict(pairs)


def _open_sqlite(url, parsed, synchronous) -> pw.SqliteDatabase:
    path = parsed.path[1:] if parsed.path.startswith("/") else parsed.path
    if not parsed.netloc and (not path or _in_memory(path, parsed.query)):
        # Every connection (each worker thread has its own) would get its own empty database.
        raise DatabaseURLError(
            f"SQLite URL {url!r} names no database file: an in-memory database is not shared between "
            "connections; use a file path, e.g. sqlite:///queue.db (or a file in a temporary directory for tests)"
        )
    if parsed.netloc:
        raise DatabaseURLError(
            f"bad SQLite URL {url!r}: use three slashes for a relative path (sqlite:///queue.db) "
            "or four for an absolute one (sqlite:////var/lib/queue.db)"
        )
    _check_is_a_file(path, url)
    options = _sqlite_options(url, parsed.query)
    unknown = set(options) - {"synchronous", "busy_timeout", "page_size", "wal_autocheckpoint"}
    if unknown:
        raise DatabaseURLError(
            f"unknown SQLite URL option(s) {', '.join(sorted(unknown))}: "
            "use synchronous, busy_timeout, page_size, wal_autocheckpoint"
        )
    mode = (synchronous or options.get("synchronous") or "NORMAL").upper()
    if mode not in SYNCHRONOUS_MODES:
        raise DatabaseURLError(f"synchronous must be one of {', '.join(SYNCHRONOUS_MODES)}, not {mode!r}")
    busy_ms = options.get("busy_timeout", str(BUSY_TIMEOUT_MS))
    if not _whole(busy_ms, 0):
        raise DatabaseURLError(
            f"busy_timeout must be a whole number of milliseconds, 0 to {SQLITE_INT_MAX:,}, not {busy_ms!r}"
        )
    page_size = options.get("page_size")
    if page_size is not None and (not _whole(page_size, 0) or int(page_size) not in PAGE_SIZES):
        raise DatabaseURLError(
            f"page_size must be a power of two from 512 to 65536 bytes (a new file's SQLite pages), not {page_size!r}"
        )
    checkpoint = options.get("wal_autocheckpoint", str(DEFAULT_WAL_AUTOCHECKPOINT))
    if not _whole(checkpoint, 1):
        raise DatabaseURLError(
            f"wal_autocheckpoint must be a whole number of pages, 1 to {SQLITE_INT_MAX:,} (SQLite's default 1000), "
            f"not {checkpoint!r}"
        )
    db = QueueSqliteDatabase(
        path,
        pragmas={
            # First: it sizes the pages of a file not yet written, and does nothing to an existing one.
            "page_size": DEFAULT_PAGE_SIZE if page_size is None else int(page_size),
            "journal_mode": "wal",
            "busy_timeout": int(busy_ms),
            "synchronous": mode,
            "wal_autocheckpoint": int(checkpoint),
            "foreign_keys": 1,
        },
        timeout=int(busy_ms) / 1000,
        # Every transaction we open writes: take the write lock up front so a reader never has to
        # upgrade mid-transaction (the source of "database is locked" errors that busy_timeout cannot fix).
        lock_type="IMMEDIATE",
        check_same_thread=False,
        factory=DiskFullConnection,  # "database or disk is full" as a DiskFullError
    )
    db.page_size_asked = None if page_size is None else int(page_size)
    return db


def _check_is_a_file(path: str, url: str) -> None:
    """A path that exists must be a file: SQLite's open of a FIFO waits for a writer for ever (the command
    hung), and a directory or a device gave "no database at" or "no queue tables", as if it were missing."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # missing (a new file, or create=False says so) or unreadable (the open says why)
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise DatabaseURLError(f"{path} ({url}) is {kind}: name a SQLite database file, e.g. sqlite:///queue.db")


def _check_page_size(db: pw.Database, url: str) -> None:
    """A page size the URL asks for that the existing file does not have is an error: SQLite would ignore it."""
    asked = getattr(db, "page_size_asked", None)
    if asked is None:
        return
    actual = db.execute_sql("PRAGMA page_size").fetchone()[0]
    if actual != asked:
        raise DatabaseURLError(
            f"{url} asks for page_size={asked}, but this database file has {actual}-byte pages: the page size "
            "is chosen when the file is created. Drop the option, or convert the file while nothing uses it "
            f"(sqlite3 FILE 'PRAGMA journal_mode=DELETE; PRAGMA page_size={asked}; VACUUM; PRAGMA journal_mode=WAL')"
        )


def _in_memory(path: str, query: str) -> bool:
    return path == ":memory:" or ":memory:" in path or (path.startswith("file:") and "mode=memory" in query)


def _open_postgres(url, parsed) -> pw.PostgresqlDatabase:
    if not parsed.path.strip("/"):
        raise DatabaseURLError(
            f"bad PostgreSQL URL {without_password(url)!r}: name the database (postgresql://user@host:5432/dbname)"
        )
    try:
        import psycopg  # noqa: F401  (peewee would only say "driver not found" at connect time)
    except ImportError:
        raise DatabaseURLError(
            "PostgreSQL needs psycopg 3: pip install 'queue-core[postgres]' (or pip install 'psycopg[binary]')"
        ) from None
    # libpq parses the URL itself (user, password, host, port, and every libpq option in the query string,
    # e.g. ?sslmode=require or ?options=-csearch_path%3Dmyschema), so what works for psql works here.
    conninfo = "postgresql://" + url.split("://", 1)[1]
    options = {}
    if "connect_timeout" not in dict(parse_qsl(parsed.query)):
        # libpq waits for ever and psycopg 130 s for a server that does not answer (a hung host, a dropped
        # route): a stopping worker's reconnect held its exit that long. ?connect_timeout=N sets another.
        options["connect_timeout"] = CONNECT_TIMEOUT
    return ReconnectingPostgresqlDatabase(conninfo, prefer_psycopg3=True, **options)
