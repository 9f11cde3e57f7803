"""Small helpers shared by command modules: variable and node-count flags, JSON output, consoles."""

from __future__ import annotations

import json
import sys
from typing import Any

from velyrix import errors


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
    """Write ``data`` as indented JSON to stdout."""
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


def console(stderr: bool = False) -> Any:
    """A rich console (imported lazily)."""
    from rich.console import Console

    return Console(stderr=stderr, highlight=False)
