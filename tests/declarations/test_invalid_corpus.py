"""Every file of the invalid corpus is refused with exit 2, a file:line diagnostic and no traceback."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

CORPUS = sorted((Path(__file__).parent / "invalid").glob("*.tf"))
HEADER = re.compile(r"# expect: line=(\d+) message=(.*)$")


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 40


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_invalid_file_exits_2_with_position(path: Path, velyrix) -> None:
    match = HEADER.match(path.read_text().splitlines()[0])
    assert match, f"{path.name} lacks its '# expect:' header"
    line, needle = int(match.group(1)), json.loads(match.group(2))
    result = velyrix("plan", str(path))
    assert result.exit_code == 2, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert needle in result.stderr
    if line:
        # the header comment shifts every line of the case by one
        assert f"{path}:{line + 1}:" in result.stderr, result.stderr
    else:
        assert re.search(re.escape(str(path)) + r":\d+:\d+:", result.stderr), result.stderr
