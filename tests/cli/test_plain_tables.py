"""The plain renderer (``cli/plain_layout.py``) against rich itself: for random tables and lines, and for the
tables of every example's plan at widths from 40 to 200 columns, it writes rich's bytes or hands the item to
rich; ``velyrix plan`` on a pipe does not import rich."""

from __future__ import annotations

import io
import subprocess
import sys
from contextlib import redirect_stdout
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.markup import escape as rich_escape

from velyrix.cli import plain_layout, plan, tables
from velyrix.declarations import loader
from velyrix.planners import plan as planner

from ..conftest import EXAMPLES, ROOT


def _rich(item: Any, width: int) -> str:
    out = io.StringIO()
    Console(file=out, width=width, highlight=False, _environ={}).print(item)
    return out.getvalue()


WORDS = st.sampled_from(
    ["a", "GPUs", "x", "1,024", "$33,600.00", "verified:", "non-blocking", "-", "Tb/s", "(auto)", "  ", "\n"]
    + [
        "[bold]",
        "[/]",
        "[green]",
        "[/green]",
        "\\[x]",
        "[1]",
        "a:b",
        "::",
        "[red]no[/]:",
        "é",
        "\t",
        "[link=x]",
        "§1",
        "\u00a0",
        "日本",
    ]
    + ["averyveryverylongwordwithoutanyspaceinit", "tenant-007.c007"]
)
MARKUP = st.lists(WORDS, max_size=12).map(" ".join) | st.text(alphabet="ab [/]\\:\n", max_size=20)
PLAIN = st.lists(
    st.sampled_from(["a", "GPUs", "1,024", "(auto)", "wide-word-here", "  ", "a\nb", "[bold]x[/]"]),
    min_size=1,
    max_size=10,
)


@st.composite
def random_tables(draw: st.DrawFn, cells: st.SearchStrategy[str]) -> tables.Table:
    table = tables.Table(
        title=draw(st.none() | cells),
        show_header=draw(st.booleans()),
        title_justify="left",
        title_style="bold",
    )
    for _ in range(draw(st.integers(1, 7))):
        table.add_column(draw(cells), justify=draw(st.sampled_from(["left", "right"])), style="cyan")
    for _ in range(draw(st.integers(0, 5))):
        table.add_row(*draw(st.lists(cells, min_size=len(table.columns), max_size=len(table.columns))))
    return table


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table=random_tables(MARKUP), width=st.integers(10, 130))
def test_a_random_table_is_rich_s_text_or_left_to_rich(table: tables.Table, width: int) -> None:
    text = plain_layout.table(table, width)
    if text is not None:
        assert text == _rich(table, width)


@settings(max_examples=300, deadline=None)
@given(table=random_tables(PLAIN.map(" ".join)), width=st.integers(30, 130))
def test_a_plain_table_is_laid_out_here_as_rich_lays_it_out(table: tables.Table, width: int) -> None:
    text = plain_layout.table(table, width)
    assert text is not None or width - len(table.columns) - 1 < 3 * len(table.columns)
    if text is not None:
        assert text == _rich(table, width)


@settings(max_examples=400, deadline=None)
@given(markup=MARKUP, width=st.integers(10, 130))
def test_a_random_line_is_rich_s_text_or_left_to_rich(markup: str, width: int) -> None:
    text = plain_layout.line(markup, width)
    if text is not None:
        assert text == _rich(markup, width)
    if markup.isascii() and markup.isalnum():
        assert text is not None


@given(value=st.text(alphabet="ab[]/\\@#=", max_size=16))
def test_escape_is_rich_s(value: str) -> None:
    assert plain_layout.escape(value) == rich_escape(value)


class _NoRich:
    def print(self, item: Any) -> None:
        raise AssertionError(f"handed to rich: {item!r}")


@pytest.mark.parametrize("simulate", [False, True])
@pytest.mark.parametrize("example", ["acme-405b.tf", "acme-connectivity.tf", "acme-pretrain.tf", "small-h100-k8s.tf"])
def test_each_example_s_plan_is_rich_s_text_at_every_width(
    example: str, simulate: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = planner.plan_file(loader.load(EXAMPLES / example), simulate=simulate)
    plan._add_connectivity(result, EXAMPLES / example, None, None)
    for width in range(40, 201, 7):
        con = tables.PlainConsole(width)
        con._rich = _NoRich()  # every table and line of these plans is laid out here
        monkeypatch.setattr(tables, "console", lambda con=con: con)
        plain_out = io.StringIO()
        with redirect_stdout(plain_out):
            plan.render(result)
        rich_out = io.StringIO()
        rich_con = Console(file=rich_out, width=width, highlight=False, _environ={})
        monkeypatch.setattr(tables, "console", lambda rich_con=rich_con: rich_con)
        plan.render(result)
        assert plain_out.getvalue() == rich_out.getvalue(), width


def test_plan_on_a_pipe_does_not_import_rich() -> None:
    code = (
        "import sys; sys.argv = ['velyrix', 'plan', 'examples/acme-405b.tf']\n"
        "from velyrix.cli import main\n"
        "try:\n    main.run()\nexcept SystemExit:\n    pass\n"
        "print('RICH', sorted(m for m in sys.modules if m.split('.')[0] == 'rich'), file=sys.stderr)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, stdin=subprocess.DEVNULL
    )
    assert "RICH []" in proc.stderr, proc.stderr[-500:]
    assert "Monthly list price (USD)" in proc.stdout
