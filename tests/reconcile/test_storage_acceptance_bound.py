"""Acceptance cannot pass a storage figure the planned storage network cannot carry: the twin's measured
parallel-FS throughput and the figure it is judged against are both bounded by the plan's storage-plane
capacity (``fabric_plan.storage_plane.deliverable_gb_s``). Through the API on SQLite and the twin."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.reconcile.test_fleet_api_cli import Plane


def test_a_large_parallel_fs_is_measured_and_judged_within_the_storage_plane(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    plane = Plane(tmp_path)
    api, tenant = TestClient(plane.app), plane.headers(plane.tenant_key)
    body = {
        "name": "big-fs",
        "region": "us-east-1",
        "node_type": "hgx-h200-8g",
        "node_count": 8,
        "fabric": "infiniband-ndr",
        "scheduler": "slurm",
        "storage": {"parallel_fs_tb": 800},
    }
    created = api.post("/v1/clusters", headers=tenant, json=body)
    assert created.status_code == 201, created.text
    cid = created.json()["id"]
    capacity = created.json()["plan"]["fabric_plan"]["storage_plane"]["deliverable_gb_s"]
    plane.runtime.reconciler.settle(30)
    assert api.get(f"/v1/clusters/{cid}", headers=tenant).json()["status"]["phase"] == "Ready"
    report = api.get(f"/v1/clusters/{cid}/acceptance", headers=tenant).json()["report"]
    storage = {r["subject"]: r for r in report["cluster_tests"] if r["test"] == "storage"}
    assert set(storage) == {"parallel_fs/write", "parallel_fs/read"}
    for result in storage.values():
        assert result["measured"] <= capacity, (result, capacity)
        assert result["expected"] <= capacity, (result, capacity)
        assert result["passed"]
