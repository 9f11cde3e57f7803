"""The control plane's declarative ``Base``, its column types and its ids.

Every tenant-owned table has a ``tenant_id``; routes never query the tables directly but through
``velyrix.controlplane.scoping`` which adds the tenant filter. Tables that are updated concurrently
(clusters, nodes, volumes, tenants) carry a ``version`` column used for optimistic locking
(SQLAlchemy ``version_id_col``): an UPDATE whose version no longer matches fails, and the API answers
412. Ids are ``<prefix>_<12 hex ms timestamp><12 hex random>``, so sorting by id follows creation order
(cursor pagination relies on it).
"""

from __future__ import annotations

import datetime as dt
import secrets
import time
from typing import Any, ClassVar

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase


def new_id(prefix: str) -> str:
    """A new, time-ordered id such as ``clu_018f3a2b4c5d9f8e7d6c5b4a``."""
    return f"{prefix}_{int(time.time() * 1000):012x}{secrets.token_hex(6)}"


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class UTCDateTime(sa.types.TypeDecorator[dt.datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite stores naive text)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: sa.Dialect) -> dt.datetime | None:
        if value is not None and value.tzinfo is not None:
            value = value.astimezone(dt.UTC)
            if dialect.name == "sqlite":
                value = value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: dt.datetime | None, dialect: sa.Dialect) -> dt.datetime | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return value


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        dt.datetime: UTCDateTime,
        dict[str, Any]: sa.JSON,
        list[Any]: sa.JSON,
    }

    id_prefix: ClassVar[str] = "obj"
    tenancy: ClassVar[str] = "tenant"
    """How ``scoping`` filters the table: ``tenant`` (tenant keys see their rows, provider keys all),
    ``own`` (every key sees only its own tenancy, provider keys the provider's rows), ``self`` (the
    tenants table: a tenant key sees its own row), ``global`` (no tenant column)."""


def assign_id(target: Base, args: Any, kwargs: dict[str, Any]) -> None:
    """The ``init`` hook of every model: a new row gets a fresh ``new_id`` unless one is given. Registered in
    ``models/__init__`` once the first tables are mapped (SQLAlchemy refuses an ``init`` listener that runs
    before its class is instrumented)."""
    if "id" not in kwargs:
        target.id = new_id(type(target).id_prefix)  # type: ignore[attr-defined]
