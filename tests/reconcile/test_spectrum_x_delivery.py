"""A Spectrum-X (Ethernet) cluster is isolated by a VLAN and a VXLAN VNI and validated with a RoCE port test;
it gets no InfiniBand partition key and no ``ib_ports`` test, in the plan, on the nodes, in the conditions
and in the signed acceptance report. An InfiniBand cluster still gets its partition key from the plan's range.
Through the API on SQLite and the twin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from tests.reconcile.test_fleet_api_cli import Plane
from velyrix.controlplane.db import models
from velyrix.planners import fabric


def _body(name: str, fabric_name: str) -> dict[str, Any]:
    return {
        "name": name,
        "region": "us-east-1",
        "node_type": "hgx-h200-8g",
        "node_count": 4,
        "fabric": fabric_name,
        "scheduler": "slurm",
        "storage": {"parallel_fs_tb": 100},
    }


def test_an_ethernet_cluster_gets_a_vni_and_a_roce_port_test_and_no_pkey(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    plane = Plane(tmp_path)
    api, tenant = TestClient(plane.app), plane.headers(plane.tenant_key)
    eth = api.post("/v1/clusters", headers=tenant, json=_body("eth", "spectrum-x"))
    ib = api.post("/v1/clusters", headers=tenant, json=_body("ib", "infiniband-ndr"))
    assert eth.status_code == ib.status_code == 201, eth.text + ib.text
    plan = eth.json()["plan"]
    assert "roce_ports" in plan["acceptance"] and "ib_ports" not in plan["acceptance"]
    assert "ib_ports" in ib.json()["plan"]["acceptance"] and "roce_ports" not in ib.json()["plan"]["acceptance"]
    assert plan["fabric_plan"]["compute"]["isolation"]["mechanism"] == "vlan_vni"
    plane.runtime.reconciler.settle(30)

    cluster = api.get(f"/v1/clusters/{eth.json()['id']}", headers=tenant).json()
    assert cluster["status"]["phase"] == "Ready", cluster["status"]["conditions"]
    networked = next(c for c in cluster["status"]["conditions"] if c["type"] == "Networked")
    assert "VNI" in networked["message"] and "partition key" not in networked["message"]
    report = api.get(f"/v1/clusters/{eth.json()['id']}/acceptance", headers=tenant).json()["report"]
    isolation = report["integrity"]["isolation"]
    assert isolation["vni"] >= 1 and "partition_key" not in isolation
    tests = {t["test"] for n in report["nodes"] for t in n["tests"]}
    assert "roce_ports" in tests and "ib_ports" not in tests
    for name in (n["name"] for n in report["nodes"]):
        nets = plane.runtime.sim.node(name).networks
        assert nets["vni"] == isolation["vni"] and "pkey" not in nets
    with plane.app.state.sessionmaker() as s:
        held = {(r.cluster_id, r.kind): r.value for r in s.scalars(sa.select(models.NetworkAllocation)).all()}
    assert (eth.json()["id"], "pkey") not in held and (eth.json()["id"], "vni") in held
    # the InfiniBand cluster's partition key is the first of the plan's range (REFERENCE §1: 0x0001-0x7ffe)
    assert held[(ib.json()["id"], "pkey")] == fabric.PKEY_FIRST == 0x0001
    ib_report = api.get(f"/v1/clusters/{ib.json()['id']}/acceptance", headers=tenant).json()["report"]
    assert ib_report["integrity"]["isolation"]["partition_key"] == "0x0001"
    assert "vni" not in ib_report["integrity"]["isolation"]
