"""Statements that peewee builds once and the hot path replays with new values.

Building a query costs peewee ~0.5 ms of Python per statement (measured by ``python -m tests.bench``):
more than SQLite needs to run it. A ``CompiledStatement`` builds the query once with marker values,
keeps the SQL text peewee generated, and records which bound parameter holds which marker; each call
then only converts its values and executes that same SQL. So the SQL that runs is exactly what peewee
would have built for those values, and rows come back as the same model objects ``query.execute()``
gives. (Compiled here, in Python: nothing is prepared on the database server.)

Two mistakes would replay the wrong statement silently, so neither is left to the caller:
- the statement's shape: ``CompiledStatements.statement(builder, *shape)`` keys a statement by the
  builder's name and exactly the arguments it is built from, so an input that changes the SQL cannot be
  left out of the key;
- the values: each run must name exactly the markers its statement was built with (``params``), so a
  value the statement would drop, or a marker left unfilled, raises instead of binding the wrong thing.
"""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta

import peewee as pw

_MARKER_TIME = datetime(1901, 2, 3, 4, 5, 6, tzinfo=UTC)
# Statements a repository keeps. A worker uses a handful (claim, complete, complete_and_claim, create);
# the bound only matters when callers vary the statements' shapes (type lists of many lengths), which
# would otherwise keep one compiled statement per shape for ever.
STATEMENT_CACHE_SIZE = 64


class Markers:
    """Distinct stand-in values, one per name, that no real input takes; ``field`` says how it is stored."""

    def __init__(self):
        self.by_name: dict[str, tuple[object, pw.Field]] = {}

    def text(self, name: str, field: pw.Field) -> str:
        return self._add(name, f"\x00queue-core-marker:{name}", field)

    def integer(self, name: str, field: pw.Field | None = None) -> int:
        return self._add(name, 1_987_654_000 + len(self.by_name), field)

    def real(self, name: str, field: pw.Field) -> float:
        return self._add(name, 1_987_654.000_123 + len(self.by_name), field)

    def time(self, name: str, field: pw.Field) -> datetime:
        return self._add(name, _MARKER_TIME + timedelta(microseconds=len(self.by_name) + 1), field)

    def texts(self, prefix: str, count: int | None, field: pw.Field) -> list[str] | None:
        """``count`` text markers named ``prefix0``, ``prefix1``, ... (None for None): fill them with ``numbered``."""
        return None if count is None else [self.text(f"{prefix}{i}", field) for i in range(count)]

    def of(self, field: pw.Field) -> object:
        """A marker named after ``field``, of the kind its column stores."""
        for kind, make in ((pw.DateTimeField, self.time), (pw.FloatField, self.real), (pw.IntegerField, self.integer)):
            if isinstance(field, kind):
                return make(field.name, field)
        return self.text(field.name, field)

    def _add(self, name, value, field):
        self.by_name[name] = (value, field)
        return value


def numbered(prefix: str, values: list | None) -> dict:
    """The values for ``Markers.texts(prefix, len(values), ...)``, by marker name."""
    return {f"{prefix}{i}": value for i, value in enumerate(values or ())}


class StatementCache:
    """At most ``size`` values by key, the least recently used dropped first; safe to share between threads."""

    def __init__(self, size: int = STATEMENT_CACHE_SIZE):
        self.size = size
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key, build: Callable[..., object], *args):
        """The value for ``key``, built by ``build(*args)`` (outside the lock) if it is not kept."""
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
                return value
        value = build(*args)
        with self._lock:
            # Another thread may have built it meanwhile: keep one, either is the same statement.
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self):
        """The keys kept, least recently used first (a snapshot)."""
        with self._lock:
            return iter(list(self._entries))


class CompiledStatements:
    """The compiled statements of one database whose rows are ``rows_as`` objects, at most ``size`` kept.

    ``statement(builder, *shape)`` is the statement ``builder(markers, *shape)`` builds, compiled on first
    use. Its key is (the builder's qualified name, *shape): everything a statement is built from is in
    its key, since the builder sees nothing else. A builder is a function or a method of an object that
    lives as long as this cache (a repository's statements); a lambda or a nested function could read
    variables the key does not hold, so they are refused.
    """

    def __init__(self, db: pw.Database, rows_as: type[pw.Model], size: int = STATEMENT_CACHE_SIZE):
        self.db = db
        self.rows_as = rows_as
        self.cache = StatementCache(size)

    def statement(self, builder: Callable[..., pw.BaseQuery], *shape) -> CompiledStatement:
        return self.cache.get((builder.__qualname__, *shape), self._compile, builder, shape)

    def _compile(self, builder, shape: tuple) -> CompiledStatement:
        if "<" in builder.__qualname__:  # <lambda>, <locals>: one name for many closures
            raise TypeError(f"{builder.__qualname__} cannot key a statement: use a function or a method")
        return CompiledStatement(self.db, lambda markers: builder(markers, *shape), self.rows_as)

    def __len__(self) -> int:
        return len(self.cache)

    def __iter__(self):
        """The keys kept, least recently used first (a snapshot)."""
        return iter(self.cache)


class CompiledStatement:
    """``build(markers)`` returns a peewee query; ``execute(values)`` runs its SQL with ``values`` bound."""

    def __init__(
        self, db: pw.Database, build: Callable[[Markers], pw.BaseQuery], rows_as: type[pw.Model] | None = None
    ):
        markers = Markers()
        self.query = build(markers)
        self.db = db
        self.sql, params = self.query.sql()
        stored = {}
        for name, (value, field) in markers.by_name.items():
            stored[_key(field.db_value(value) if field is not None else value)] = (name, field)
        # Per bound parameter: (marker name, its field) to fill from the values, or (None, the constant).
        self.slots = [stored.get(_key(param), (None, param)) for param in params]
        self.names = frozenset(markers.by_name)
        missing = set(markers.by_name) - {name for name, _ in self.slots}
        if missing:
            # Peewee folded a marker into the SQL text: replaying would bind the wrong values.
            raise RuntimeError(f"markers {sorted(missing)} are not bound parameters of {self.sql!r}")
        raw = {_key(value): name for name, (value, field) in markers.by_name.items() if field is not None}
        unconverted = sorted({raw[_key(param)] for name, param in self.slots if name is None and _key(param) in raw})
        if unconverted:
            # A marker bound as it is, not through its field (e.g. inside a CASE): it would be replayed as
            # a constant. Give the value its field's conversion (``field.to_value(marker)``).
            raise RuntimeError(f"markers {unconverted} are bound without their field's conversion in {self.sql!r}")
        # For params: each marker's converter, the constants, and per parameter its index in (markers + constants).
        # A value already of a plain field's type is bound as it is (its db_value would return it unchanged).
        self.converters = [
            (name, None, None) if field is None else (name, field.db_value, _PLAIN_TYPES.get(type(field)))
            for name, (_, field) in markers.by_name.items()
        ]
        self.constants = [constant for name, constant in self.slots if name is None]
        position = {name: i for i, (name, _, _) in enumerate(self.converters)}
        constant_index = iter(range(len(self.converters), len(self.converters) + len(self.constants)))
        self.layout = [next(constant_index) if name is None else position[name] for name, _ in self.slots]
        # Rows come back as models for UPDATE/INSERT ... RETURNING, and for a SELECT whose rows are ``rows_as``.
        model = rows_as or (self.query.model if getattr(self.query, "_returning", None) else None)
        self.reader = RowReader(model) if model is not None else None

    def execute(self, values: dict) -> list:
        """Run the statement with ``values`` (by marker name): model objects if it returns rows, else rows."""
        cursor = self.db.execute_sql(self.sql, self.params(values))
        return self.reader.models(cursor) if self.reader is not None else cursor.fetchall()

    def params(self, values: dict) -> list:
        """The bound parameters for ``values``, each converted as peewee would (``field.db_value``).

        ``values`` names exactly the statement's markers: a missing one would leave a parameter unfilled,
        and an extra one is a value the caller meant to apply that this statement does not (an attempt
        the statement does not check, say).
        """
        if values.keys() != self.names:
            raise ValueError(f"values {sorted(values)} do not match the markers {sorted(self.names)} of {self.sql!r}")
        # Each marker's value converted once (a claim binds its "now" twice), then laid out by parameter.
        bound = [
            value if convert is None or type(value) is plain else convert(value)
            for name, convert, plain in self.converters
            for value in (values[name],)
        ]
        bound += self.constants
        return [bound[i] for i in self.layout]


def _key(value):
    # 1 == 1.0 == True in a dict; markers are typed apart so the key keeps the type.
    return (type(value).__name__, value)


# Fields whose python_value only coerces to one type: a value the driver already gives in that type
# is left as it is (what the coercion would return anyway).
_PLAIN_TYPES = {pw.AutoField: int, pw.IntegerField: int, pw.CharField: str, pw.TextField: str, pw.FloatField: float}
_PLAIN_TYPES.update({pw.BigAutoField: int, pw.BigIntegerField: int, pw.DoubleField: float})


class FetchedRows:
    """Rows already fetched, with their column names: read like a cursor by ``RowReader`` (and ``column_names``)."""

    def __init__(self, columns: tuple, rows: list):
        self.columns = columns
        self._rows = rows

    def fetchall(self) -> list:
        return self._rows


def column_names(cursor) -> tuple:
    """The names of the cursor's columns, to compare with a layout worked out before (str, or bytes on psycopg).

    psycopg builds a ``Column`` object per column each time ``description`` is read: for a claim's 21
    columns, a quarter of the Python its statement cost a PostgreSQL worker (cProfile of a claim loop).
    Its result holds the names; read there, they are 21 calls into C.
    """
    if type(cursor) is FetchedRows:
        return cursor.columns
    result = getattr(cursor, "pgresult", None)
    if result is None:
        return tuple(map(_first, cursor.description))
    return tuple(map(result.fname, range(result.nfields)))


_first = operator.itemgetter(0)


def _text(name) -> str:
    return name.decode() if isinstance(name, bytes) else name


class RowReader:
    """Rows of ``RETURNING <every column>`` as model objects, equal to what peewee's cursor wrapper builds.

    Peewee sets up its wrapper per cursor and fills each object field by field through ``__init__``; here
    the column layout is worked out once and each object gets its data in one dict (the state
    ``Model(__no_default__=1, **data)`` followed by ``_dirty.clear()`` leaves), which halves the cost of
    a row. Models with foreign keys (whose accessors do more) take peewee's own path.
    """

    def __init__(self, model: type[pw.Model]):
        self.model = model
        self.direct = all(type(field) is not pw.ForeignKeyField for field in model._meta.sorted_fields)
        self.nulls = dict.fromkeys(model._meta.fields)
        self.layout: tuple[tuple, type | None, list] = ((), None, [])  # (column names, row type, per column)
        self._kept: dict[str, tuple[tuple, dict]] = {}  # named(keep=): name -> (columns, raw row -> row)

    def models(self, cursor) -> list:
        fields = self._layout(cursor)[1]
        jobs = []
        for row in cursor.fetchall():
            # Every field of ours reads NULL as None, so only other values go through a converter.
            jobs.append(
                self.build(
                    {
                        name: value if value is None or type(value) is plain else convert(value)
                        for (name, convert, plain), value in zip(fields, row, strict=True)
                    }
                )
            )
        return jobs

    def partition(self, cursor, field: str, value, keys: tuple[str, ...]) -> tuple[list[tuple], list]:
        """The rows whose ``field`` is ``value``, as tuples of their ``keys`` as the driver gives them, and the
        other rows as models: a caller that needs only the ids of some rows does not build them."""
        columns = column_names(cursor)
        names = [name for name, _, _ in self._layout_of(columns)[1]]
        at, picks = names.index(field), [names.index(key) for key in keys]
        matched, others = [], []
        for row in cursor.fetchall():
            if row[at] == value:
                matched.append(tuple(row[i] for i in picks))
            else:
                others.append(row)
        return matched, self.models(FetchedRows(columns, others))

    def named(self, cursor, *, keep: str | None = None) -> list:
        """The rows as named tuples of Python values (what peewee's ``namedtuples()`` gives, ~5x faster).

        With ``keep`` (a name per call site, e.g. one live table), the rows this call built are kept until the
        next call of that name, which reuses them for every raw row the driver gives unchanged: a console
        refresh re-reads mostly the same rows, and converting them (SQLite's datetimes are text) was most of
        its cost. Only the last call's rows are kept, so the memory is one window per name.
        """
        row_type, fields = self._layout(cursor)
        raw_rows = cursor.fetchall()

        def build(row):
            return row_type(
                *[
                    value if value is None or type(value) is plain else convert(value)
                    for (_, convert, plain), value in zip(fields, row, strict=True)
                ]
            )

        if keep is None:
            return [build(row) for row in raw_rows]
        columns = column_names(cursor)
        kept_columns, kept = self._kept.get(keep, ((), {}))
        if kept_columns != columns:
            kept = {}
        rows, fresh = [], {}
        for raw in raw_rows:
            try:
                row = kept.get(raw) or fresh.get(raw)
            except TypeError:  # a value the driver gives unhashable (PostgreSQL's json): no reuse
                rows.append(build(raw))
                continue
            if row is None:
                row = build(raw)
            fresh[raw] = row
            rows.append(row)
        self._kept[keep] = (columns, fresh)  # one assignment: threads share a repository
        return rows

    def _layout(self, cursor) -> tuple[type, list]:
        """(a named tuple type, (field name, converter, plain type) per column) for the cursor's columns."""
        return self._layout_of(column_names(cursor))

    def _layout_of(self, columns: tuple) -> tuple[type, list]:
        known, row_type, fields = self.layout
        if columns != known:
            by_column = self.model._meta.columns
            named = [by_column[_text(c)] for c in columns]
            fields = [(field.name, field.python_value, _PLAIN_TYPES.get(type(field))) for field in named]
            row_type = namedtuple("Row", [name for name, _, _ in fields])
            self.layout = (columns, row_type, fields)  # one assignment: threads share a repository
        return row_type, fields

    def build(self, data: dict) -> pw.Model:
        """A model object holding ``data`` (field name -> Python value), as if read from the database.

        Fields that ``data`` leaves out are None (a column written NULL).
        """
        model = self.model
        if self.direct:
            job = model.__new__(model)
            if len(data) != len(self.nulls):
                data = {**self.nulls, **data}
            job.__data__, job._dirty, job.__rel__ = data, set(), {}
        else:
            job = model(__no_default__=1, **data)
            job._dirty.clear()
        return job

    def build_all(self, shared: dict, names: list[str], rows: Iterable[tuple]) -> list[pw.Model]:
        """``build`` of each row: ``shared`` and, for each of ``rows``, its values of ``names``.

        A batch's jobs share most of their fields (create_many's type, status, times...): each starts as a
        copy of one dict instead of a dict built field by field, about a third of ``build``'s time a job.
        """
        if not self.direct:
            return [self.build({**shared, **dict(zip(names, row, strict=True))}) for row in rows]
        model = self.model
        new = model.__new__
        base = {**self.nulls, **shared}
        built = []
        for row in rows:
            data = base.copy()
            data.update(zip(names, row, strict=True))
            job = new(model)
            job.__data__ = data
            job._dirty = set()
            job.__rel__ = {}
            built.append(job)
        return built
