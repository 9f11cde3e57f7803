"""Answers that send JSON columns on as stored: a row read with ``Scope.read(..., json_text=True)``
holds the text its JSON columns were written as (``json.dumps`` through SQLAlchemy's JSON type), and the
answer splices that text into the body instead of decoding it and encoding it again (the two cost a
one-row ``GET /v1/clusters/{id}`` more than its read: bench/bench_identity.py). The stored text was
validated on its way in (``specs``, ``status``); what is checked here is its shape: an object or a list
as the response model says, no ``NaN``/``Infinity`` (which ``json.dumps`` writes and JSON has not).
Anything else (a driver that hands over decoded values, PostgreSQL's ``psycopg``) returns ``None``, and
the caller answers through the model as before."""

from __future__ import annotations

import json
from typing import Any

import pydantic_core

OPENS: dict[type, str] = {dict: "{", list: "["}
"""The first character of the stored text of a column of each shape."""


def stored(value: Any, shape: type) -> str | None:
    """``value`` (a JSON column as read) when it is stored text of ``shape`` (dict or list), else None."""
    if not isinstance(value, str) or not value.startswith(OPENS[shape]):
        return None
    if "NaN" in value or "Infinity" in value:
        return None
    return value


def scalar(value: Any) -> str:
    """``value`` (str, int, datetime, None) as JSON, as pydantic serializes it in a model."""
    return pydantic_core.to_json(value).decode()


def members(values: dict[str, Any]) -> str:
    """``values`` (names to str, int, datetime, None) as the members of a JSON object, without its
    braces, as pydantic serializes them: one call for several scalars."""
    return pydantic_core.to_json(values).decode()[1:-1]


def decoded(value: Any) -> Any:
    """A JSON column's value decoded when it came as text (the fallback path)."""
    return json.loads(value) if isinstance(value, str) else value


class Bodies:
    """Answers built from rows, kept by row id with the row they were built from: a later read of the
    same row with every column equal gets the same bytes back without building them again (a changed
    column, a version moved on, builds anew). Bounded: at most ``max_entries`` rows, none over
    ``max_bytes`` bytes; dropped whole when full."""

    def __init__(self, max_entries: int = 256, max_bytes: int = 64 * 1024) -> None:
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self._kept: dict[Any, tuple[Any, bytes]] = {}

    def get(self, row: Any) -> bytes | None:
        """The bytes built from a row equal to ``row`` (its ``id`` and every column), or None."""
        kept = self._kept.get(row.id)
        if kept is None or kept[0] != row:
            return None
        return kept[1]

    def put(self, row: Any, body: bytes) -> None:
        """Keep ``body``, built from ``row`` (a tuple of its columns, ``id`` among them)."""
        if len(body) > self.max_bytes:
            return
        if len(self._kept) >= self.max_entries:
            self._kept = {}
        self._kept[row.id] = (tuple(row), body)
