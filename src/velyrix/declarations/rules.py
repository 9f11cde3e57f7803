"""The value rules shared by the spec loader and the API's validation edge, so that ``velyrix plan``
refuses exactly what the API would: names, resource labels, text content and length, number range,
nesting depth. Inputs are plain values; each check returns a message (None when the value passes).
"""

from __future__ import annotations

import math
import re

NAME_PATTERN = r"^[a-z][a-z0-9-]{0,62}$"
"""Cluster (and volume) names: DNS-label-like, lower case, at most 63 characters."""
WORD_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$"
"""Catalog words (region, node type, fabric, scheduler) as the API's schema takes them."""
LABEL_PATTERN = r"^[A-Za-z_][A-Za-z0-9_-]{0,62}$"
INSTANCE_INDEX_PATTERN = r'\[([0-9]{1,6}|"[A-Za-z0-9_.-]{1,64}")\]'
"""The index a ``count`` (``[0]``) or ``for_each`` (``["key"]``) instance keeps after its label in an address."""
"""A resource's label (``resource "velyrix_cluster" "LABEL"``): a Terraform identifier."""

MAX_STRING_CHARS = 16_384
MAX_NUMBER = 2.0**53
"""Largest magnitude of a number: what a JSON number carries exactly (RFC 7493, I-JSON)."""
MAX_NESTING = 32
"""Deepest nesting of lists/maps/parentheses (JSON bodies and HCL expressions)."""

BAD_TEXT = re.compile("[\x00\ud800-\udfff]")
"""Characters no stored text may hold: NUL and lone UTF-16 surrogates (PostgreSQL refuses both)."""
_NAME = re.compile(NAME_PATTERN)
_LABEL = re.compile(LABEL_PATTERN)


def text_problem(value: str, max_chars: int = MAX_STRING_CHARS) -> str | None:
    """Why ``value`` cannot be stored as text (NUL, lone surrogate, too long), or None."""
    if len(value) > max_chars:
        return f"{len(value)} characters, more than {max_chars}"
    bad = BAD_TEXT.search(value)
    if bad:
        return f"character U+{ord(bad.group()):04X} at offset {bad.start()} is not allowed"
    return None


def name_problem(value: str) -> str | None:
    """Why ``value`` is not a valid cluster name, or None."""
    if _NAME.match(value):
        return None
    return "must be 1-63 characters of a-z, 0-9 and '-', starting with a letter"


def label_problem(value: str) -> str | None:
    """Why ``value`` is not a valid resource label, or None."""
    if _LABEL.match(value):
        return None
    return "must be 1-63 characters of letters, digits, '_' and '-', starting with a letter or '_'"


def number_problem(value: float) -> str | None:
    """Why ``value`` is not a storable number (NaN, infinite, beyond +-2**53), or None."""
    if not math.isfinite(value):
        return "is not a finite number"
    if abs(value) > MAX_NUMBER:
        return "is beyond +-2**53"
    return None


def suggest_name(value: str) -> str:
    """A valid name close to ``value`` (lower case, other characters as '-'), for "did you mean"."""
    out = re.sub(r"[^a-z0-9-]+", "-", value.lower()).strip("-")
    out = re.sub(r"-{2,}", "-", out)
    if not out or not out[0].isalpha():
        out = "c-" + out if out else "cluster"
    return out[:63].rstrip("-")
