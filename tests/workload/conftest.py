"""The acme-405b declaration and its cluster, shared by the workload tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
ACME = ROOT / "examples" / "acme-405b.tf"


@pytest.fixture(scope="session")
def acme() -> tuple[Any, Any]:
    """(ClusterSpec, SchedulerCluster) of examples/acme-405b.tf."""
    from velyrix.declarations import loader
    from velyrix.ops.scheduler import clusters

    spec = loader.load(ACME).clusters[0]
    return spec, clusters.from_spec(spec)
