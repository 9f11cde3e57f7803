"""``backend="auto"`` picks scipy wherever it is faster: above 400 switches when scipy must be imported
first, above 32 once it is loaded (bench/bench_fabric.py measures the crossover)."""

from __future__ import annotations

import sys

import pytest

from velyrix.planners import fabric_verify


def test_small_fabrics_stay_pure_python_and_large_ones_use_scipy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "scipy.sparse.csgraph", raising=False)
    assert [fabric_verify.auto_backend(n) for n in (24, 320, 401)] == ["python", "python", "scipy"]
    import scipy.sparse.csgraph  # noqa: F401  (what a server or a benchmark has already loaded)

    assert [fabric_verify.auto_backend(n) for n in (24, 48, 320)] == ["python", "scipy", "scipy"]
