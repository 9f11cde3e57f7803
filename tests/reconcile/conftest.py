from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.reconcile.world import World, make_world


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    w = make_world(tmp_path)
    yield w
    w.engine.dispose()
