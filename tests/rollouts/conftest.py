"""Rollout fixtures: the 128-node twin region of ``velyrix.testing.rollouts``, the example rollout."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

from velyrix.declarations import rollout as decl
from velyrix.testing import rollouts as tr

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "rollout-driver-580.tf"


@functools.cache
def _example() -> decl.RolloutSpec:
    return decl.loads(EXAMPLE.read_text().replace("notice_hours = 72", "notice_hours = 120"), "rollout.tf")[0]


def example_spec(**changes: object) -> decl.RolloutSpec:
    """The example rollout with a notice that covers the contracts' 5 days (120 h), and ``changes``."""
    return decl.from_dict({**_example().to_dict(), **changes})


@pytest.fixture(autouse=True)
def _own_firmware_baseline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A completed rollout moves the region's signed firmware baseline: each test signs its own."""
    monkeypatch.setenv("VELYRIX_SIGNING_KEY_DIR", str(tmp_path / "keys"))
    monkeypatch.setenv("VELYRIX_FIRMWARE_DIR", str(tmp_path / "firmware"))


@pytest.fixture
def region() -> Iterator[tr.Region]:
    r = tr.build(0)
    yield r
    r.close()
