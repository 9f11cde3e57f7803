"""Fabric configuration as delivered artifacts: a Ready cluster's InfiniBand partition (partitions.conf, UFM
calls) and Ethernet VLAN/VRF (NVUE, SONiC) come from its nodes' inventories, the twin's network driver runs
exactly that configuration, the API and ``velyrix network config`` show it, and destroy takes it off."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tests.reconcile.test_fleet_api_cli import Plane
from velyrix import errors
from velyrix.planners import fabric_config as fc


def _body(name: str, fabric_name: str, nodes: int = 4) -> dict[str, Any]:
    return {
        "name": name,
        "region": "us-east-1",
        "node_type": "hgx-h200-8g",
        "node_count": nodes,
        "fabric": fabric_name,
        "scheduler": "slurm",
        "storage": {"parallel_fs_tb": 100},
    }


@pytest.fixture
def plane(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Plane:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    return Plane(tmp_path)


def test_an_infiniband_cluster_gets_its_partition_and_storage_vlan_applied(plane: Plane) -> None:
    api, tenant = TestClient(plane.app), plane.headers(plane.tenant_key)
    cid = api.post("/v1/clusters", headers=tenant, json=_body("ib4", "infiniband-ndr")).json()["id"]
    plane.runtime.reconciler.settle(30)
    r = api.get(f"/v1/clusters/{cid}/fabric", headers=tenant)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["applied"] == {"digest": body["digest"], "matches": True}
    nodes = [n["name"] for n in api.get(f"/v1/clusters/{cid}/acceptance", headers=tenant).json()["report"]["nodes"]]
    guids = {fc.eui64_guid(p.mac) for n in nodes for p in plane.runtime.sim.node(n).ib_ports}
    conf = body["infiniband"]["partitions_conf"]
    pkey = plane.runtime.sim.node(nodes[0]).networks["pkey"]
    assert f"vx_ib4={pkey:#06x}, ipoib, defmember=full : " in conf
    assert set(re.findall(r"0x[0-9a-f]{16}", conf)) == guids and len(guids) == 32
    ufm = body["infiniband"]["ufm"][1]["body"]
    assert {"0x" + g for g in ufm["guids"]} == guids and ufm["pkey"] == f"{pkey:#06x}"
    storage = body["ethernet"]["storage"]
    vlan = plane.runtime.sim.node(nodes[0]).networks["vlan"]
    ports = sum(len(yaml.safe_load(t)[0]["set"]["interface"]) - 1 for t in storage["nvue"].values())
    assert ports == 4 * 2  # two storage NICs per H200 node (catalog), each in the VLAN
    assert all(
        cfg["VLAN"] == {f"Vlan{vlan}": {"vlanid": str(vlan), "description": "velyrix ib4"}}
        for cfg in storage["sonic"].values()
    )
    events = [
        e
        for e in api.get(f"/v1/clusters/{cid}", headers=tenant).json()["status"]["events"]
        if e["reason"] == "FabricConfigured"
    ]
    assert events and body["digest"][:12] in events[-1]["message"]
    # destroy takes the configuration off the fabric
    api.delete(f"/v1/clusters/{cid}", headers=tenant)
    plane.runtime.reconciler.settle(30)
    network = plane.runtime.driver.network
    assert network.applied(cid) is None and network.history[-1]["action"] == "remove"
    assert api.get(f"/v1/clusters/{cid}/fabric", headers=tenant).status_code == 404


def test_a_spectrum_x_cluster_gets_vni_mappings_on_its_rail_leaves(plane: Plane) -> None:
    api, tenant = TestClient(plane.app), plane.headers(plane.tenant_key)
    cid = api.post("/v1/clusters", headers=tenant, json=_body("eth2", "spectrum-x", 2)).json()["id"]
    plane.runtime.reconciler.settle(30)
    body = api.get(f"/v1/clusters/{cid}/fabric", headers=tenant).json()
    assert body["infiniband"] is None and body["applied"]["matches"] is True
    compute = body["ethernet"]["compute"]["nvue"]
    assert len(compute) == 8  # one rail leaf per compute NIC
    vni = body["summary"]["vni"]
    for text in compute.values():
        cfg = yaml.safe_load(text)[0]["set"]
        assert cfg["bridge"]["domain"]["br_default"]["vlan"][str(body["summary"]["vlan"])] == {"vni": {str(vni): {}}}
        assert len(cfg["interface"]) == 2 + 1  # the two nodes' ports on this rail, and the SVI


def test_velyrix_network_config_prints_the_artifacts(
    plane: Plane, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    api, tenant = TestClient(plane.app), plane.headers(plane.tenant_key)
    api.post("/v1/clusters", headers=tenant, json=_body("cli4", "infiniband-ndr", 1))
    plane.runtime.reconciler.settle(30)
    from velyrix.cli import client as client_mod
    from velyrix.cli.main import app

    class _Client:
        def get(self, path: str, **params: Any) -> Any:
            r = api.get(path, headers=tenant, params=params)
            r.raise_for_status()
            return r.json()

        def find_cluster(self, name: str) -> Any:
            return next((c for c in self.get("/v1/clusters")["items"] if c["name"] == name), None)

    monkeypatch.setattr(client_mod.Client, "from_login", classmethod(lambda cls: _Client()))
    runner = CliRunner()
    out = runner.invoke(app, ["network", "config", "cli4", "--format", "partitions"])
    assert out.exit_code == 0, out.output
    assert re.search(r"^vx_cli4=0x[0-9a-f]{4}, ipoib, defmember=full : ", out.output, re.M)
    summary = runner.invoke(app, ["network", "config", "cli4"])
    assert "configuration:" in summary.output and "(applied)" in summary.output
    files = runner.invoke(app, ["network", "config", "cli4", "--format", "sonic", "--out", str(tmp_path / "cfg")])
    assert files.exit_code == 0 and sorted(p.name for p in (tmp_path / "cfg").iterdir()) == [
        "stor-su00-leaf0.json",
        "stor-su00-leaf1.json",
    ]
    bad = runner.invoke(app, ["network", "config", "cli4", "--format", "nvue", "--plane", "compute"])
    # the error `velyrix` prints with exit code 2 (cli.main.run), naming the planes there are
    assert isinstance(bad.exception, errors.UnknownNameError) and bad.exception.user_error
    assert bad.exception.message == "unknown Ethernet plane of this cluster 'compute'"
    assert bad.exception.hint is not None and "storage" in bad.exception.hint
