"""Tables of the CLI's reports: printed by rich on a terminal, and by a plain renderer where rich would write no
escape codes (a pipe, a file), byte for byte as rich writes them there, without importing rich.

``Table`` holds what the report views gave ``rich.table.Table`` before (a title, columns with a justification
and a style, rows of markup strings) and becomes that rich table through ``__rich__``, so any rich console
prints it as it did. ``console()`` returns a ``PlainConsole`` where rich's own console would detect no
terminal (``plain_width``), else rich's console. A ``PlainConsole`` lays out a table or a line itself
(``cli/plain_layout.py``) when every text in it is plain enough for that (printable one-cell characters, markup
of the views' few styles), and hands anything else to rich. ``velyrix plan`` prints ~10 tables per cluster: rich
took ~2 ms CPU to lay each out and ~40 ms to import (docs/benchmarks.md, branch planstart).
"""

from __future__ import annotations

import builtins
import os
import sys
from typing import Any, TextIO

from velyrix.cli import plain_layout


class Table:
    """A report table: ``rich.table.Table``'s default box, padding and edges, with the options the views use."""

    __slots__ = ("title", "show_header", "title_justify", "title_style", "columns", "rows")

    def __init__(
        self,
        title: str | None = None,
        *,
        show_header: bool = True,
        title_justify: str = "center",
        title_style: str | None = None,
    ) -> None:
        self.title = title
        self.show_header = show_header
        self.title_justify = title_justify
        self.title_style = title_style
        self.columns: list[tuple[str, str, str | None]] = []
        """(header, justify, style) per column."""
        self.rows: list[tuple[str, ...]] = []
        """Markup strings, one per column (a short row is padded with empty cells, as rich does)."""

    def add_column(self, header: str = "", *, justify: str = "left", style: str | None = None) -> None:
        """A column (rich's ``Table.add_column`` with these options)."""
        self.columns.append((header, justify, style))

    def add_row(self, *cells: str) -> None:
        """A row of markup strings, at most one per column."""
        if len(cells) > len(self.columns):
            raise ValueError(f"a row of {len(cells)} cells in a table of {len(self.columns)} columns")
        self.rows.append(cells + ("",) * (len(self.columns) - len(cells)))

    def __rich__(self) -> Any:
        """The same table as a ``rich.table.Table``."""
        from rich.table import Table as RichTable

        table = RichTable(
            title=self.title,
            show_header=self.show_header,
            title_justify=self.title_justify,  # type: ignore[arg-type]
            title_style=self.title_style,
        )
        for header, justify, style in self.columns:
            table.add_column(header, justify=justify, style=style)  # type: ignore[arg-type]
        for row in self.rows:
            table.add_row(*row)
        return table


def plain_width(stream: TextIO) -> int | None:
    """The width rich's console would lay ``stream``'s output out at when it writes no escape codes there (rich
    15's ``Console.is_terminal`` false, a UTF-8 stream, not Windows); None in every other case, and where rich's
    answer would be an odd one (a width under 10)."""
    env = os.environ
    if sys.platform == "win32" or "FORCE_COLOR" in env or "TTY_COMPATIBLE" in env:
        return None
    if "idlelib" in sys.modules or hasattr(builtins, "get_ipython") or hasattr(stream, "rich_proxied_file"):
        return None
    isatty = getattr(stream, "isatty", None)
    try:
        if isatty is not None and isatty():
            return None
    except ValueError:  # a closed stream: rich takes it for no terminal
        pass
    if not (getattr(stream, "encoding", None) or "utf-8").lower().startswith("utf"):
        return None  # rich would draw the tables in ASCII
    columns = env.get("COLUMNS")
    width = int(columns) if columns is not None and columns.isdigit() else _terminal_width()
    return width if width >= 10 else None


def _terminal_width() -> int:
    """Columns of the first of stdin, stdout and stderr that is a terminal (rich asks them in this order), or 80."""
    for stream, default in ((sys.__stdin__, 0), (sys.__stdout__, 1), (sys.__stderr__, 2)):
        try:
            fd = stream.fileno() if stream is not None else default
        except (AttributeError, ValueError, OSError):
            fd = default
        try:
            return os.get_terminal_size(fd).columns or 80
        except (AttributeError, ValueError, OSError):
            continue
    return 80


class PlainConsole:
    """Prints ``Table``s and markup lines to stdout as rich's console does where it writes no escape codes;
    what it cannot lay out exactly goes to rich's console (created on first need)."""

    def __init__(self, width: int) -> None:
        self.width = width
        self._rich: Any = None

    def print(self, item: Table | str) -> None:
        """Write ``item`` (a table, or a line of markup), or have rich write it."""
        text = plain_layout.table(item, self.width) if isinstance(item, Table) else plain_layout.line(item, self.width)
        if text is None:
            if self._rich is None:
                from rich.console import Console

                self._rich = Console(highlight=False)
            self._rich.print(item)
        else:
            sys.stdout.write(text)
            sys.stdout.flush()  # as rich does after each print (a closed pipe fails here, as it did)


def console() -> Any:
    """A ``PlainConsole`` for stdout where rich would write no escape codes there, else a rich console (as
    ``common.console()``)."""
    width = plain_width(sys.stdout)
    if width is None:
        from velyrix.cli import common

        return common.console()
    return PlainConsole(width)
