"""A SQLAlchemy Core ``SELECT`` compiled once and run on a bare DB-API connection, for the few reads on
every API request: over SQLite (``api/inline.py``), and over PostgreSQL on psycopg's asynchronous
connections (``api/inline_pg.py``, which runs ``sql`` with ``arguments`` itself and builds the rows with
``row_of``).

``Connection.execute`` costs about 60 us per statement here before and after SQLite's own work (the
compiled-cache lookup, an execution context, a cursor result: bench/bench_identity.py), more than the
one-row query itself. ``Prepared`` keeps what that work always produces for one statement: the SQL
text, its parameters in order (with the values bound in the statement, such as a ``LIMIT``), each
column's result processor (a datetime parsed, a JSON column decoded, as ``execute`` would) and a row
class with attribute access by column name. The statement is then one ``cursor.execute`` and a
``fetchone``/``fetchall`` (SQLite's statement cache reuses the parsed statement).

Only what this covers is prepared (``prepare`` returns None otherwise, and the caller executes through
SQLAlchemy): a ``SELECT`` on SQLite (``qmark`` parameters) or on PostgreSQL through psycopg (compiled
with positional ``%s`` parameters, which psycopg takes; the same type casts and result processors as
the engine's own dialect), without expanding or post-compile parameters."""

from __future__ import annotations

import collections
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa

Processor = Callable[[Any], Any] | None


class Prepared:
    """One compiled ``SELECT``: ``first``/``all`` on a DB-API connection with the statement's named
    parameters (``params``), rows with the statement's column names as attributes."""

    def __init__(self, sql: str, names: Sequence[str], defaults: Mapping[str, Any], columns: Sequence[str]) -> None:
        self.sql = sql
        self.names = tuple(names)
        self.defaults = dict(defaults)
        self.row: Any = collections.namedtuple("Row", columns, rename=True)  # type: ignore[misc]
        self.processors: tuple[tuple[int, Callable[[Any], Any]], ...] = ()

    def arguments(self, params: Mapping[str, Any]) -> list[Any]:
        """The positional arguments of ``sql`` for the named ``params`` (values bound in the statement
        filled in)."""
        defaults = self.defaults
        return [params[n] if n in params else defaults[n] for n in self.names]

    def row_of(self, raw: Sequence[Any]) -> Any:
        """A row of the statement from a DB-API row (the result processors applied)."""
        if not self.processors:
            return self.row._make(raw)
        values = list(raw)
        for n, process in self.processors:
            if values[n] is not None:
                values[n] = process(values[n])
        return self.row._make(values)

    def first(self, dbapi: Any, params: Mapping[str, Any]) -> Any:
        """The first row, or None."""
        found = dbapi.execute(self.sql, self.arguments(params)).fetchone()
        return None if found is None else self.row_of(found)

    def all(self, dbapi: Any, params: Mapping[str, Any]) -> list[Any]:
        """Every row."""
        return [self.row_of(r) for r in dbapi.execute(self.sql, self.arguments(params)).fetchall()]


_PREPARED: dict[tuple[int, str], tuple[sa.Select[Any], Prepared | None]] = {}
_POSITIONAL: dict[type[sa.Dialect], sa.Dialect] = {}


def prepare(stmt: sa.Select[Any], dialect: sa.Dialect) -> Prepared | None:
    """``stmt`` compiled for ``dialect`` (kept per statement object and backend: build statements once,
    as ``scoping`` does), or None when it is not one ``Prepared`` runs."""
    key = (id(stmt), dialect.name)
    found = _PREPARED.get(key)
    if found is not None and found[0] is stmt:
        return found[1]
    made = _compile(stmt, dialect)
    _PREPARED[key] = (stmt, made)
    return made


def _positional(dialect: sa.Dialect) -> sa.Dialect | None:
    """The dialect to compile for: SQLite's own (``qmark``); for psycopg, one of its class that writes
    positional ``%s`` parameters (the engine's writes named ones); None for any other driver."""
    if dialect.name == "sqlite" and dialect.paramstyle == "qmark":
        return dialect
    if dialect.name != "postgresql" or dialect.driver != "psycopg":
        return None
    made = _POSITIONAL.get(type(dialect))
    if made is None:
        made = _POSITIONAL[type(dialect)] = type(dialect)(paramstyle="format")  # type: ignore[call-arg]
    return made


def _compile(stmt: sa.Select[Any], dialect: sa.Dialect) -> Prepared | None:
    found = _positional(dialect)
    if found is None:
        return None
    dialect = found
    compiled = stmt.compile(dialect=dialect)
    sql = str(compiled)
    names = compiled.positiontup or []
    binds = compiled.binds
    if "POSTCOMPILE" in sql or any(binds[n].expanding or _bind_processor(binds[n], dialect) for n in names):
        return None
    defaults = {n: binds[n].effective_value for n in names if binds[n].value is not None}
    columns = list(stmt.selected_columns.keys())
    prepared = Prepared(sql, names, defaults, columns)
    processors = []
    for n, column in enumerate(stmt.selected_columns):
        impl = column.type.dialect_impl(dialect)
        oid = _oid(impl) if dialect.name == "postgresql" else None
        try:
            process = impl.result_processor(dialect, oid)
        except (TypeError, sa.exc.InvalidRequestError):  # a processor that needs the column's type
            return None
        if process is not None:
            processors.append((n, process))
    prepared.processors = tuple(processors)
    return prepared


FLOAT8_OID, NUMERIC_OID = 701, 1700
"""PostgreSQL's type oids of ``double precision`` and ``numeric`` (``pg_type``)."""


def _oid(impl: Any) -> int | None:
    """The oid a ``Float`` or ``Numeric`` column is created as (psycopg's numeric result processors are
    chosen by it; ``execute`` reads it from the result), None for other types."""
    if isinstance(impl, sa.Float):
        return FLOAT8_OID
    if isinstance(impl, sa.Numeric):
        return NUMERIC_OID
    return None


def _bind_processor(bind: Any, dialect: sa.Dialect) -> Processor:
    return bind.type.dialect_impl(dialect).bind_processor(dialect)  # type: ignore[no-any-return]
