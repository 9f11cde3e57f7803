"""The one tenant-scoped query layer. Every route reads and writes through a ``Scope``; none holds a
bare session (tests/controlplane/test_layering.py checks that route modules never import SQLAlchemy).

Rules, by the model's ``tenancy`` (see ``db.models.Base``):
- ``tenant``: a tenant key sees its tenant's rows; a provider key sees every row.
- ``own``: a key sees its own tenancy only (provider keys: the provider's rows, tenant NULL).
- ``self``: the tenants table; a tenant key sees its own tenant.
A row outside the view answers ``NotFoundError`` (404), exactly as a row that does not exist.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import errors
from velyrix.controlplane.auth.principals import Principal
from velyrix.controlplane.db import models, prepared
from velyrix.controlplane.reconcile import allocation

M = TypeVar("M", bound=models.Base)

MAX_PAGE = 200
_CURSOR_ID = re.compile(r"^[a-z]{1,12}_[0-9a-f]{1,48}$")
"""What ``models.new_id`` makes; a cursor naming anything else was not issued by us."""


def encode_cursor(last_id: str) -> str:
    """Cursor pointing after ``last_id``: the id itself (docs/api-limits.md)."""
    return last_id


def decode_cursor(cursor: str) -> str:
    """The id a cursor points after; ``InvalidInputError`` (422) for a cursor we did not issue."""
    if not _CURSOR_ID.match(cursor):
        raise errors.InvalidInputError(
            "invalid pagination cursor", hint="pass the next_cursor of the previous page unchanged"
        )
    return cursor


def _tenancy(model: type[models.Base], provider: bool) -> list[sa.ColumnElement[bool]]:
    """The tenancy rule of ``model`` for a provider or tenant principal, with ``:tenant``."""
    table = model.__table__
    tenant: sa.BindParameter[Any] = sa.bindparam("tenant")
    if model.tenancy == "self" and not provider:
        return [table.c.id == tenant]
    if model.tenancy == "own":
        return [table.c.tenant_id.is_(None) if provider else table.c.tenant_id == tenant]
    if model.tenancy == "tenant" and not provider:
        return [table.c.tenant_id == tenant]
    if model.tenancy not in ("self", "tenant"):
        raise errors.VelyrixError(f"table {model.__tablename__} is not readable through the API")
    return []


@functools.cache
def _read_statement(model: type[models.Base], provider: bool, json_text: bool = False) -> sa.Select[Any]:
    """``SELECT <columns> WHERE id = :obj_id`` plus the tenancy rule with ``:tenant``; built once per
    table and kind of principal (statement construction costs more than the SQLite query itself).
    ``json_text``: JSON columns come back as the text stored (not decoded), for answers that send them on
    (a cast: PostgreSQL's drivers decode a ``json`` column, its text they hand over as it is)."""
    table = model.__table__
    return sa.select(*_every_column(model, json_text)).where(
        table.c.id == sa.bindparam("obj_id"), *_tenancy(model, provider)
    )


def _every_column(model: type[models.Base], json_text: bool) -> list[Any]:
    """The columns of ``model``, its JSON ones as the text stored when ``json_text``."""
    return [
        sa.cast(c, sa.Text).label(c.name) if json_text and isinstance(c.type, sa.JSON) else c for c in model.__table__.c
    ]


@functools.cache
def _page_statement(
    model: type[models.Base], provider: bool, filters: tuple[str, ...], after: bool, json_text: bool
) -> sa.Select[Any]:
    """``SELECT <columns> WHERE <tenancy> AND <filter> = :f_<filter> ... [AND id > :after] ORDER BY id
    LIMIT :limit`` (``Scope.page_rows``), built once per table, kind of principal, filters given and
    cursor or none, like ``_read_statement``."""
    table = model.__table__
    where = [*_tenancy(model, provider), *(table.c[f] == sa.bindparam(f"f_{f}") for f in filters)]
    if after:
        where.append(table.c.id > sa.bindparam("after"))
    stmt = sa.select(*_every_column(model, json_text)).where(*where).order_by(table.c.id)
    return stmt.limit(sa.bindparam("limit", type_=sa.Integer))


@functools.cache
def _columns_statement(model: type[models.Base], names: tuple[str, ...], provider: bool, limit: int) -> sa.Select[Any]:
    """``SELECT <names> ... ORDER BY id LIMIT limit`` within the tenancy rule (``:tenant``), built once
    per table, columns and kind of principal, like ``_read_statement``."""
    table = model.__table__
    columns = [table.c[n] for n in names]
    return sa.select(*columns).where(*_tenancy(model, provider)).order_by(table.c.id).limit(limit)


class Scope:
    """A principal's view of the database, bound to one request's session.

    Give either ``session``, or a ``factory`` that makes one on first use (the API does that, so that
    read-only routes never pay for a session: ``read`` then uses ``connection``, or a short connection
    of ``engine``).
    """

    def __init__(
        self,
        session: orm.Session | None,
        principal: Principal,
        *,
        factory: Callable[[], orm.Session] | None = None,
        engine: sa.Engine | None = None,
        connection: sa.Connection | None = None,
        dbapi: Any = None,
        dialect: sa.Dialect | None = None,
    ) -> None:
        self._session = session
        self._connection = connection
        self._dbapi = dbapi
        """The DB-API connection under ``connection`` (SQLite, ``api/inline.py``), or one of ``dialect``
        without a SQLAlchemy connection (PostgreSQL, ``api/inline_pg.py``): ``read`` and ``columns`` run
        their statements on it (``db/prepared.py``)."""
        self._dialect = dialect if dialect is not None or connection is None else connection.dialect
        self._factory = factory
        self._engine = engine
        self.principal = principal

    @property
    def session_open(self) -> bool:
        """Whether this scope has made its session (its uncommitted changes live there)."""
        return self._session is not None

    @property
    def session(self) -> orm.Session:
        """The session of this scope (created on first use)."""
        if self._session is None:
            assert self._factory is not None
            self._session = self._factory()
        return self._session

    def _where(self, model: type[M]) -> list[sa.ColumnElement[bool]]:
        p = self.principal
        tenancy = model.tenancy
        if tenancy == "self":
            return [] if p.is_provider else [model.id == p.tenant_id]  # type: ignore[attr-defined]
        if tenancy == "own":
            col = model.tenant_id  # type: ignore[attr-defined]
            return [col.is_(None)] if p.is_provider else [col == p.tenant_id]
        if tenancy == "tenant":
            return [] if p.is_provider else [model.tenant_id == p.tenant_id]  # type: ignore[attr-defined]
        raise errors.VelyrixError(f"table {model.__tablename__} is not readable through the API")

    def select(self, model: type[M]) -> sa.Select[Any]:
        """``SELECT model`` restricted to this principal's view."""
        return sa.select(model).where(*self._where(model))

    def get(self, model: type[M], obj_id: str, kind: str) -> M:
        """The row ``obj_id`` if this principal may see it, else ``NotFoundError`` (404)."""
        row: M | None = self.session.execute(self.select(model).where(model.id == obj_id)).scalar_one_or_none()  # type: ignore[attr-defined]
        if row is None:
            raise errors.NotFoundError(kind=kind, name=obj_id)
        return row

    def read(self, model: type[M], obj_id: str, kind: str, *, json_text: bool = False) -> sa.Row[Any]:
        """Like ``get`` but a read-only row of columns (attribute access by column name), several times
        cheaper than an ORM entity: for the GET routes that only render the object. ``json_text``: JSON
        columns as stored (text on SQLite; a driver may still hand over decoded values)."""
        stmt = _read_statement(model, self.principal.is_provider, json_text)
        params = {"obj_id": obj_id, "tenant": self.principal.tenant_id}
        fast = self._prepared(stmt)
        row: Any
        if fast is not None:
            row = fast.first(self._dbapi, params)
        elif self._session is None and self._connection is not None:
            row = self._connection.execute(stmt, params).first()
        elif self._session is None and self._engine is not None:
            with self._engine.connect() as conn:
                row = conn.execute(stmt, params).first()
        else:
            row = self.session.execute(stmt, params).first()
        if row is None:
            raise errors.NotFoundError(kind=kind, name=obj_id)
        return row  # type: ignore[no-any-return]

    def _prepared(self, stmt: sa.Select[Any]) -> prepared.Prepared | None:
        """``stmt`` prepared for this scope's DB-API connection, when it has one and no session is open."""
        if self._dbapi is None or self._session is not None or self._dialect is None:
            return None
        return prepared.prepare(stmt, self._dialect)

    def rows(self, stmt: sa.Select[Any]) -> list[sa.Row[Any]]:
        """The rows of a column ``stmt`` (built on ``select``) on the request's connection when no
        session is open: for pages that render a few columns of many rows."""
        if self._session is None and self._connection is not None:
            return list(self._connection.execute(stmt))
        return list(self.session.execute(stmt))

    def columns(self, model: type[M], names: tuple[str, ...], limit: int = MAX_PAGE) -> list[sa.Row[Any]]:
        """The first ``limit`` visible rows of ``model`` in id order, as rows of the columns ``names``
        (a statement built once: for pages that render a few columns of many rows)."""
        stmt = _columns_statement(model, names, self.principal.is_provider, limit)
        params = {"tenant": self.principal.tenant_id}
        fast = self._prepared(stmt)
        if fast is not None:
            return fast.all(self._dbapi, params)
        if self._session is None and self._connection is not None:
            return list(self._connection.execute(stmt, params))
        return list(self.session.execute(stmt, params))

    def page(
        self,
        model: type[M],
        *,
        filters: Mapping[str, Any] | None = None,
        cursor: str | None = None,
        limit: int = 50,
        extra: Sequence[sa.ColumnElement[bool]] = (),
    ) -> tuple[list[M], str | None]:
        """One page of rows in id (= creation) order and the cursor of the next page (None at the end).

        ``filters`` maps column names to required values (None values are ignored).
        """
        limit = max(1, min(int(limit), MAX_PAGE))
        stmt = self.select(model).where(*extra)
        for column, value in (filters or {}).items():
            if value is not None:
                stmt = stmt.where(getattr(model, column) == value)
        if cursor:
            stmt = stmt.where(model.id > decode_cursor(cursor))  # type: ignore[attr-defined]
        rows: list[M] = list(self.session.execute(stmt.order_by(model.id).limit(limit + 1)).scalars())  # type: ignore[attr-defined]
        if len(rows) > limit:
            return rows[:limit], encode_cursor(rows[limit - 1].id)  # type: ignore[attr-defined]
        return rows, None

    def page_rows(
        self,
        model: type[M],
        *,
        filters: Mapping[str, Any] | None = None,
        cursor: str | None = None,
        limit: int = 50,
        json_text: bool = False,
    ) -> tuple[list[sa.Row[Any]], str | None]:
        """``page`` as read-only rows of every column (as ``read``'s, ``json_text`` alike), the same rows
        in the same order and the same next cursor, in one statement built once (``_page_statement``):
        for the list routes that only render (prepared on the inline connections, ``db/prepared.py``)."""
        limit = max(1, min(int(limit), MAX_PAGE))
        given = {f: v for f, v in (filters or {}).items() if v is not None}
        after = decode_cursor(cursor) if cursor else None
        stmt = _page_statement(model, self.principal.is_provider, tuple(given), after is not None, json_text)
        params = {"tenant": self.principal.tenant_id, "limit": limit + 1, **{f"f_{f}": v for f, v in given.items()}}
        if after is not None:
            params["after"] = after
        fast = self._prepared(stmt)
        rows: list[Any]
        if fast is not None:
            rows = fast.all(self._dbapi, params)
        elif self._session is None and self._connection is not None:
            rows = list(self._connection.execute(stmt, params))
        elif self._session is None and self._engine is not None:
            with self._engine.connect() as conn:
                rows = list(conn.execute(stmt, params))
        else:
            rows = list(self.session.execute(stmt, params))
        if len(rows) > limit:
            return rows[:limit], encode_cursor(rows[limit - 1].id)
        return rows, None

    def find(self, model: type[M], kind: str, **equal: Any) -> M:
        """The visible row with these column values (e.g. a node by ``name``), else ``NotFoundError`` (404)."""
        stmt = self.select(model)
        for column, value in equal.items():
            stmt = stmt.where(getattr(model, column) == value)
        row: M | None = self.session.execute(stmt.limit(1)).scalar_one_or_none()
        if row is None:
            raise errors.NotFoundError(kind=kind, name=next(iter(equal.values()), ""))
        return row

    def latest(self, model: type[M], **equal: Any) -> M | None:
        """The newest visible row (highest id) with these column values, or None."""
        stmt = self.select(model)
        for column, value in equal.items():
            stmt = stmt.where(getattr(model, column) == value)
        row: M | None = self.session.execute(stmt.order_by(model.id.desc()).limit(1)).scalar_one_or_none()  # type: ignore[attr-defined]
        return row

    def exists(self, model: type[M], **equal: Any) -> bool:
        """Whether a visible row with these column values exists (e.g. a name taken in the tenant)."""
        stmt = self.select(model)
        for column, value in equal.items():
            stmt = stmt.where(getattr(model, column) == value)
        return self.session.execute(stmt.limit(1)).first() is not None

    def add(self, obj: M) -> M:
        """Add a new row; tenant-owned rows are stamped with the principal's tenant (provider keys may
        set ``tenant_id`` themselves only on ``tenant`` tables)."""
        if obj.tenancy in ("tenant", "own") and not self.principal.is_provider:
            obj.tenant_id = self.principal.tenant_id  # type: ignore[attr-defined]
        if obj.tenancy == "own" and self.principal.is_provider:
            obj.tenant_id = None  # type: ignore[attr-defined]
        self.session.add(obj)
        self.session.flush()
        return obj

    def nodes_in_use(self, region: str) -> dict[str, int]:
        """Nodes per node type taken by present clusters in ``region``, over ALL tenants.

        Deliberately unscoped: region capacity is public, and counts reveal no tenant's objects.
        """
        stmt = (
            sa.select(models.Cluster.node_type, sa.func.sum(models.Cluster.node_count))
            .where(models.Cluster.region == region, models.Cluster.desired_state == "present")
            .group_by(models.Cluster.node_type)
        )
        return {nt: int(n or 0) for nt, n in self.session.execute(stmt)}

    def fleet_capacity(self, region: str) -> dict[str, Any]:
        """Capacity per node type from the fleet's nodes (``reconcile.allocation.fleet_capacity``)."""
        return allocation.fleet_capacity(self.session, region)

    def own_nodes_in_use(self, region: str) -> dict[str, int]:
        """Nodes per node type in this principal's own clusters in ``region`` (a tenant's usage)."""
        stmt = (
            sa.select(models.Node.node_type, sa.func.count())
            .where(models.Node.region == region, models.Node.tenant_id == self.principal.tenant_id)
            .group_by(models.Node.node_type)
        )
        return {nt: int(n) for nt, n in self.session.execute(stmt)}

    def flush(self) -> None:
        """Send pending changes (an UPDATE of a stale version raises ``StaleDataError``, answered 412)."""
        self.session.flush()

    def delete(self, obj: models.Base) -> None:
        """Delete a row this principal has read through ``get``."""
        self.session.delete(obj)
        self.session.flush()

    def commit(self) -> None:
        self.session.commit()
