"""Small helpers shared by command modules: variable and node-count flags, JSON output, consoles."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

from velyrix import errors, settings

CREDENTIALS_FILE = "credentials.json"
"""Where ``velyrix login`` keeps the endpoint and key, under ``VELYRIX_HOME`` (``cli/client.py`` writes it)."""


def credentials_path() -> Path:
    """The CLI's credentials file (it may not exist)."""
    return settings.load().paths.home / CREDENTIALS_FILE


def parse_vars(pairs: list[str] | None) -> dict[str, str]:
    """``-var name=value`` flags into a dict; a flag without ``=`` is an input error."""
    out: dict[str, str] = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise errors.InvalidInputError(
                f"-var '{pair}' is not of the form name=value", hint="example: -var node_count=32"
            )
        out[name.strip()] = value
    return out


def parse_node_counts(values: list[str] | None, example: str = "hgx-h200-8g=96") -> dict[str, int] | None:
    """``--nodes NODE_TYPE=COUNT`` flags into a dict (None when absent); a malformed flag is an input error
    whose hint shows ``--nodes {example}``."""
    if not values:
        return None
    out: dict[str, int] = {}
    for item in values:
        name, sep, raw = item.partition("=")
        if not sep or not raw.strip().isdigit():
            raise errors.InvalidInputError(f"--nodes {item!r} is not NODE_TYPE=COUNT", hint=f"e.g. --nodes {example}")
        out[name.strip()] = int(raw)
    return out


def print_json(data: Any) -> None:
    """Write ``data`` as indented JSON to stdout (strict JSON: a NaN or infinity is an error, not output)."""
    require_finite(data, "the output")
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, allow_nan=False) + "\n")


def require_finite(data: Any, what: str) -> None:
    """``InvalidInputError`` (exit 2) naming the first NaN or infinite number inside ``data``."""
    todo: list[tuple[Any, str]] = [(data, "")]
    while todo:
        item, where = todo.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise errors.InvalidInputError(
                f"{what} holds a non-finite figure at {where or '(top)'}: {item}",
                hint="an input is out of the range the planners handle; check the values of that resource",
            )
        if isinstance(item, dict):
            todo.extend((v, f"{where}.{k}" if where else str(k)) for k, v in item.items())
        elif isinstance(item, (list, tuple)):
            todo.extend((v, f"{where}[{i}]") for i, v in enumerate(item))


def safe(text: Any) -> str:
    """``text`` escaped for rich markup: user values print verbatim (``[/]`` is text, not a tag)."""
    from rich.markup import escape

    return escape(str(text))


def console(stderr: bool = False) -> Any:
    """A rich console (imported lazily)."""
    from rich.console import Console

    return Console(stderr=stderr, highlight=False)


def parse_utc(text: str, flag: str) -> Any:
    """``text`` (ISO 8601, e.g. ``2026-11-01T00:00:00Z``) as an aware UTC datetime; a time without an
    offset is UTC. ``InvalidInputError`` (exit 2) naming ``flag`` otherwise."""
    import datetime as dt

    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise errors.InvalidInputError(
            f"{flag} {text!r} is not an ISO 8601 time", hint="e.g. 2026-11-01T00:00:00Z"
        ) from None
    return when.replace(tzinfo=dt.UTC) if when.tzinfo is None else when.astimezone(dt.UTC)
