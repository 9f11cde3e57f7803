"""The plain text rich 15 writes for a ``cli.tables.Table`` or a markup line where it writes no escape codes,
for texts of printable one-cell characters (Latin, Greek, Cyrillic; and newlines) whose markup is one of
``STYLES``; None for anything else, which the caller hands to rich.

What rich does there, reproduced step by step (rich is pinned in pyproject.toml;
tests/cli/test_plain_tables.py compares this with rich on random tables and the plan's own):
- markup: tags ``[style]``, ``[/style]`` and ``[/]`` are dropped, ``\\[`` prints ``[``; a text that could hold
  an emoji code (``:name:``) is left to rich;
- a table (box ``HEAVY_HEAD``, or its plain-headed ``SQUARE`` without a header; padding of one space each side
  of a cell; edges drawn): each column is as wide as its widest line (plus the padding); when the columns do
  not fit, the widest shrink first, level with the next widest, then all alike, and words wrap inside the
  cells (a word longer than its cell ends in an ellipsis);
- the title above, wrapped to the table's width and padded to it with spaces;
- a line: wrapped to the console's width at spaces (a longer word is cut into pieces of that width).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from velyrix.cli.tables import Table

STYLES = frozenset({"bold", "cyan", "green", "red", "yellow"})
"""The styles the report views write in markup."""

_TAG = re.compile(r"((\\*)\[([a-z#/@][^[]*?)])")  # what rich's markup takes for a tag
_EMOJI = re.compile(r":\S*?:")  # what could be an emoji code for rich (it replaces the names it knows)
_WORD = re.compile(r"\s*\S+\s*")
_TRAILING_SPACE = re.compile(r"\s+$")
ELLIPSIS = "\u2026"

# Box characters: (top, header row, line under the header, body row, bottom), each as left, fill, divider, right.
_HEAVY_HEAD = ("┏━┳┓", "┃ ┃┃", "┡━╇┩", "│ ││", "└─┴┘")
_SQUARE = ("┌─┬┐", "│ ││", "├─┼┤", "│ ││", "└─┴┘")


_ESCAPABLE = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")  # what rich's ``markup.escape`` escapes


def escape(value: object) -> str:
    """``str(value)`` escaped for markup as ``rich.markup.escape`` does it (user values print verbatim)."""
    out = _ESCAPABLE.sub(lambda m: f"{m.group(1)}{m.group(1)}\\{m.group(2)}", str(value))
    return out + "\\" if out.endswith("\\") and not out.endswith("\\\\") else out


_ONE_CELL = ((0x20, 0x7E), (0xA0, 0xAC), (0xAE, 0x2FF), (0x370, 0x482), (0x2500, 0x25FC), (0x2800, 0x28FF))
"""Code points rich 15 takes for one cell wide without its Unicode tables (``rich/cells.py``): Latin, Greek,
Cyrillic, box drawing; for them a string's length is its width."""


def _one_cell(markup: str) -> bool:
    """Whether every character of ``markup`` but its newlines is printable and one cell wide."""
    if markup.isascii():
        return markup.replace("\n", "").isprintable()
    return all(c == "\n" or (c.isprintable() and any(lo <= ord(c) <= hi for lo, hi in _ONE_CELL)) for c in markup)


def text(markup: str) -> str | None:
    """The characters rich shows for ``markup``, or None when it is not plain enough to say here."""
    if not _one_cell(markup):
        return None
    if "[" not in markup:
        return None if _EMOJI.search(markup) else markup
    pieces: list[str] = []
    open_styles: list[str] = []
    position = 0
    for match in _TAG.finditer(markup):
        full, escapes, tag = match.groups()
        start, end = match.span()
        pieces.append(markup[position:start])
        position = end
        backslashes, escaped = divmod(len(escapes), 2)
        pieces.append("\\" * backslashes)
        if escaped:
            pieces.append(full[len(escapes) :])
            continue
        if not _tag(tag, open_styles):
            return None
    pieces.append(markup[position:])
    out = [piece.replace("\\[", "[") for piece in pieces]
    return None if any(_EMOJI.search(piece) for piece in out) else "".join(out)


def _tag(tag: str, open_styles: list[str]) -> bool:
    """Apply one tag to the open styles; False for a tag outside ``STYLES`` or one that closes nothing."""
    if tag.startswith("/"):
        name = tag[1:]
        if not name:
            if not open_styles:
                return False
            open_styles.pop()
            return True
        if name not in open_styles:
            return False
        del open_styles[len(open_styles) - 1 - open_styles[::-1].index(name)]
        return True
    if tag not in STYLES:
        return False
    open_styles.append(tag)
    return True


def line(markup: str, width: int) -> str | None:
    """A line printed at console ``width``, with its newline; None when ``text`` says so."""
    plain = text(markup)
    if plain is None:
        return None
    return "\n".join(piece[:width] for part in plain.split("\n") for piece in _pieces(part, width, fold=True)) + "\n"


def _pieces(part: str, width: int, fold: bool) -> list[str]:
    """``part`` (a line without newlines) broken into lines of ``width`` at word starts; a word longer than the
    width is cut into pieces of it (``fold``) or left whole; each line loses trailing spaces beyond the width."""
    breaks: list[int] = []
    used = 0  # characters on the current line
    for match in _WORD.finditer(part):
        start, word = match.start(), match.group()
        size = len(word.rstrip())
        if width - used >= size:
            used += len(word)
        elif size > width:
            if fold:
                chunks = [word[i : i + width] for i in range(0, len(word), width)]
                for chunk in chunks:
                    if start:
                        breaks.append(start)
                    start += len(chunk)
                used = len(chunks[-1])
            else:
                if start:
                    breaks.append(start)
                used = len(word)
        elif used and start:
            breaks.append(start)
            used = len(word)
    bounds = [0, *breaks, len(part)]
    out = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        piece = part[a:b]
        if len(piece) > width:
            trailing = _TRAILING_SPACE.search(piece)
            if trailing is not None:
                piece = piece[: len(piece) - min(len(trailing.group()), len(piece) - width)]
        out.append(piece)
    return out


def _ellipsis(piece: str, width: int) -> str:
    return piece[: width - 1] + ELLIPSIS if len(piece) > width else piece


def _cell(plain: str, width: int, justify: str) -> list[str]:
    """The lines of one cell ``width`` wide, its padding included."""
    inner = width - 2
    out = []
    for part in plain.split("\n"):
        for piece in _pieces(part, inner, fold=False):
            if justify == "right":
                piece = _ellipsis(piece.rstrip(), inner)
                piece = " " * (inner - len(piece)) + piece
            else:
                piece = _ellipsis(piece, inner).ljust(inner)
            out.append(f" {piece} ")
    return out


def _measure(plain: str, room: int) -> tuple[int, int]:
    """(least, most) characters a padded cell of ``plain`` takes, given ``room`` (rich's ``Measurement.get`` of
    the cell's ``Padding``)."""
    if room < 1:
        return 0, 0
    if room - 2 < 1:
        return _capped(room, room, room)
    lines = plain.splitlines()
    most = max(map(len, lines)) if lines else 0
    words = plain.split()
    least, most = _capped(max(map(len, words)) if words else most, most, room)
    return _capped(min(least + 2, room), min(most + 2, room), room)


def _ordered(least: int, most: int) -> tuple[int, int]:
    """A measurement made consistent: 0 <= least <= most."""
    least = min(max(0, least), most)
    return max(0, least), max(0, least, most)


def _capped(least: int, most: int, room: int) -> tuple[int, int]:
    """A measurement made consistent and capped at ``room``; (0, 0) when nothing fits."""
    least, most = _ordered(least, most)
    least, most = min(least, room), min(most, room)
    return (0, 0) if most < 1 else _ordered(least, most)


def _column(cells: list[str], room: int) -> tuple[int, int]:
    """(least, most) width of a column of padded ``cells``, given ``room``."""
    if room < 1:
        return 0, 0
    sizes = [_measure(cell, room) for cell in cells]
    least = max((s[0] for s in sizes), default=1)
    most = max((s[1] for s in sizes), default=room)
    return min(least, room), min(most, room)


def _widths(columns: list[list[str]], room: int) -> list[int]:
    """Column widths (padding included, borders not) that fit ``room``, as rich's table sets them."""
    widths = [_column(cells, room)[1] or 1 for cells in columns]
    if sum(widths) <= room:
        return widths
    excess = sum(widths) - room
    while excess > 0:  # the widest shrink, at most to the next widest
        widest = max(widths)
        second = max((w for w in widths if w != widest), default=0)
        if not widest - second:
            break
        share = [1 if w == widest else 0 for w in widths]
        widths = _reduce(excess, share, [min(excess, widest - second)] * len(widths), widths)
        excess = sum(widths) - room
    if sum(widths) > room:
        widths = _reduce(sum(widths) - room, [1] * len(widths), widths, widths)
    return [_column(cells, width)[1] or 0 for cells, width in zip(columns, widths, strict=True)]


def _reduce(total: int, shares: list[int], limits: list[int], values: list[int]) -> list[int]:
    """``values`` less ``total`` in all, split by ``shares`` (rounded, carried over), each cut at most by its
    limit (a zero limit takes no share)."""
    shares = [share if limit else 0 for share, limit in zip(shares, limits, strict=True)]
    left_shares, left = sum(shares), total
    if not left_shares:
        return values[:]
    out = []
    for share, limit, value in zip(shares, limits, values, strict=True):
        if share and left_shares > 0:
            cut = min(limit, round(share * left / left_shares))
            out.append(value - cut)
            left -= cut
            left_shares -= share
        else:
            out.append(value)
    return out


def table(tab: Table, width: int) -> str | None:
    """``tab`` printed at console ``width``, or None when the caller should have rich print it."""
    justify = [column[1] for column in tab.columns]
    if not justify or tab.title_justify != "left" or not set(justify) <= {"left", "right"}:
        return None
    title = text(tab.title) if tab.title else ""
    columns: list[list[str]] = []
    for index, (heading, _, _) in enumerate(tab.columns):
        cells = [text(cell) for cell in ([heading] if tab.show_header else []) + [row[index] for row in tab.rows]]
        if any(cell is None for cell in cells):
            return None
        columns.append([cell for cell in cells if cell is not None])
    if title is None:
        return None
    edges = len(columns) + 1  # two edges and a divider between columns
    widths = _widths(columns, width - edges)
    if min(widths) < 3:
        return None
    table_width = sum(widths) + edges
    out = _title(title, table_width) if tab.title else []
    box = _HEAVY_HEAD if tab.show_header else _SQUARE
    out.append(_rule(box[0], widths))
    for index, row in enumerate(zip(*columns, strict=True)):
        header = index == 0 and tab.show_header
        out.extend(_row(row, widths, justify, box[1] if index == 0 else box[3], header))
        if header:
            out.append(_rule(box[2], widths))
    out.append(_rule(box[4], widths))
    return "\n".join(out) + "\n"


def _title(title: str, width: int) -> list[str]:
    """The title's lines over a table ``width`` wide: wrapped, each cut or filled with spaces to the width."""
    return [piece[:width].ljust(width) for part in title.split("\n") for piece in _pieces(part, width, fold=True)]


def _rule(chars: str, widths: list[int]) -> str:
    return chars[0] + chars[2].join(chars[1] * w for w in widths) + chars[3]


def _row(cells: tuple[str, ...], widths: list[int], justify: list[str], edge: str, header: bool) -> list[str]:
    """The lines of one row between vertical bars: each cell's lines, with blank lines under the shorter ones
    (over them in the header row)."""
    lines = [_cell(cell, w, j) for cell, w, j in zip(cells, widths, justify, strict=True)]
    height = max(len(cell) for cell in lines)
    for cell, w in zip(lines, widths, strict=True):
        blank = [" " * w] * (height - len(cell))
        cell[:] = blank + cell if header else cell + blank
    return [edge[0] + edge[2].join(cell[i] for cell in lines) + edge[3] for i in range(height)]
