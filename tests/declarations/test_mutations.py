"""Random mutations of the valid examples never make the CLI show a traceback."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ..conftest import EXAMPLES

SOURCES = [p.read_text() for p in sorted(EXAMPLES.glob("*.tf"))]
SNIPPETS = [
    '"',
    "{",
    "}",
    "=",
    "[",
    "]",
    "${",
    "var.",
    "#",
    "\n",
    "-1",
    "1e400",
    "0",
    "true",
    "null",
    "\\",
    "storage {",
    "<<EOF",
    "x",
    "0x1f",
    ",",
    ".",
    "/*",
    "%{",
]


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SOURCES))
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["delete", "insert", "replace", "duplicate"]))
        if action == "delete":
            end = min(len(text), pos + draw(st.integers(1, 12)))
            text = text[:pos] + text[end:]
        elif action == "insert":
            text = text[:pos] + draw(st.sampled_from(SNIPPETS) | st.text(max_size=4)) + text[pos:]
        elif action == "replace":
            text = text[:pos] + draw(st.sampled_from(SNIPPETS)) + text[pos + 1 :]
        else:
            end = min(len(text), pos + draw(st.integers(1, 40)))
            text = text[:end] + text[pos:end] + text[end:]
    return text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(source=mutated())
def test_mutated_examples_never_traceback(source: str, velyrix, tmp_path: Path) -> None:
    path = tmp_path / "mutant.tf"
    path.write_bytes(source.encode("utf-8", errors="replace"))
    result = velyrix("plan", str(path))
    assert "Traceback" not in result.stderr + result.stdout
    assert "internal error" not in result.stderr, result.stderr
    assert result.exit_code in (0, 2)
    if result.exit_code == 2:
        assert str(path) in result.stderr
