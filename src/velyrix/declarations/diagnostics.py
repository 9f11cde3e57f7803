"""Collecting the problems of a configuration: every one is kept with file:line:column, what was
expected and the closest valid name, and all are raised together as one ``errors.SpecError``."""

from __future__ import annotations

from collections.abc import Sequence

from velyrix import errors
from velyrix.declarations import expressions

__all__ = ["Checker", "expressions"]


class Checker:
    """Collects diagnostics; ``filename`` is the default file they name."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.diagnostics: list[errors.Diagnostic] = []

    def error(
        self,
        line: int,
        column: int,
        message: str,
        expected: str | None = None,
        suggestion: str | None = None,
        file: str | None = None,
    ) -> None:
        """Record one problem at ``file`` (default: ``filename``), ``line``:``column``."""
        self.diagnostics.append(errors.Diagnostic(file or self.filename, line, column, message, expected, suggestion))

    def unknown(
        self,
        line: int,
        col: int,
        kind: str,
        name: str,
        valid: Sequence[str],
        where: str = "",
        file: str | None = None,
    ) -> None:
        """Record an unknown ``kind`` called ``name``, with the valid names and the closest one."""
        near = errors.closest(name, valid)
        place = f" {where}" if where else ""
        self.error(
            line,
            col,
            f"unknown {kind} '{name}'{place}",
            expected="one of " + ", ".join(valid),
            suggestion=near[0] if near else None,
            file=file,
        )

    def add(self, exc: expressions.ExpressionError, file: str | None = None) -> None:
        """Record an expression error of ``file``."""
        self.diagnostics.append(exc.diagnostic(file or self.filename))
