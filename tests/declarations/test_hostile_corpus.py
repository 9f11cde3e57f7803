"""``velyrix plan`` on hostile HCL (tests/declarations/hostile/): markup, NUL and surrogate escapes, names
and labels the API would refuse, non-finite and huge numbers, nesting 3,000 deep. Each file exits 0 or 2,
never 1 and never with a traceback; exit 2 names file:line; values are quoted verbatim; a plan that
passes holds no NaN/Infinity, in text or in ``--json``.

Header of each file: ``# expect: exit=N line=L message="..."`` (L counts lines below the header; 0:
any line; the message is looked for verbatim in stderr).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

CORPUS = sorted((Path(__file__).parent / "hostile").glob("*.tf"))
HEADER = re.compile(r"# expect: exit=([02]) line=(\d+) message=(.*)$")


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 60


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_hostile_file_exits_0_or_2_with_a_position_and_verbatim_values(path: Path, velyrix) -> None:
    match = HEADER.match(path.read_text(encoding="utf-8").splitlines()[0])
    assert match, f"{path.name} lacks its '# expect:' header"
    exit_code, line, needle = int(match.group(1)), int(match.group(2)), json.loads(match.group(3))
    result = velyrix("plan", str(path))
    out = result.stdout + result.stderr
    assert "Traceback" not in out and "internal error" not in out, out[-2000:]
    assert result.exit_code == exit_code, out[-2000:]
    if exit_code == 2:
        assert needle in result.stderr, result.stderr
        where = f"{path}:{line + 1}:" if line else None
        assert (where in result.stderr) if where else re.search(re.escape(str(path)) + r":\d+:\d+:", result.stderr)
        return
    assert not re.search(r"\b(inf|nan|Infinity|NaN)\b", result.stdout), result.stdout
    as_json = velyrix("plan", str(path), "--json")
    assert as_json.exit_code == 0, as_json.stderr
    json.loads(as_json.stdout, parse_constant=lambda c: pytest.fail(f"{c} in plan --json"))
