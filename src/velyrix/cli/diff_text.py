"""Values and change lines of ``velyrix apply``'s diff in HCL's notation: ``true``, ``800``, ``"acme"``,
``{ parallel_fs_tb = 800 }`` (never Python's ``True``, ``800.0`` or ``{'parallel_fs_tb': 800.0}``)."""

from __future__ import annotations

import json
from typing import Any


def is_default(value: Any) -> bool:
    """True for values a diff leaves out of a block: unset (``None``), zero quantities (0 TB) and tests left
    on (``True``). ``False`` is a choice (a test turned off), never a default."""
    if value is None or value is True:
        return True
    return type(value) in (int, float) and value == 0


def norm(value: Any) -> Any:
    """``value`` with the default entries of its blocks removed, for comparing a declaration to a live spec."""
    if isinstance(value, dict):
        return {k: norm(v) for k, v in value.items() if not is_default(v)}
    return value


def hcl(value: Any) -> str:
    """``value`` as HCL writes it: ``null``, ``true``/``false``, integral floats without ``.0``, strings
    quoted, objects as ``{ key = value, ... }``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        inner = ", ".join(f"{k} = {hcl(v)}" for k, v in value.items())
        return f"{{ {inner} }}" if inner else "{}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(hcl(v) for v in value) + "]"
    return json.dumps(str(value))


def block_changes(old: Any, new: Any) -> list[tuple[str, Any, Any]]:
    """``(key, old, new)`` for each entry of a block that differs once defaults are left out; a missing
    acceptance test reads as ``true`` (on), a missing quantity as 0."""
    old_n, new_n = norm(old or {}), norm(new or {})
    out = []
    for key in dict.fromkeys([*(old or {}), *(new or {})]):
        if old_n.get(key) != new_n.get(key):
            out.append((key, _shown(old, key), _shown(new, key)))
    return out


def _shown(block: Any, key: str) -> Any:
    return (block or {}).get(key)
