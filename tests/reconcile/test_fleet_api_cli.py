"""The fleet's API routes and CLI commands end to end: fault injection, the signed acceptance report,
destroy, and ``velyrix apply/status/report/verify/destroy`` against a real HTTP server on loopback."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi.testclient import TestClient

from velyrix.controlplane.api import create_app
from velyrix.controlplane.auth import principals
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import phases, signing
from velyrix.controlplane.reconcile.runtime import FleetRuntime
from velyrix.testing.postgres import free_port

TF = """provider "velyrix" { region = "us-east-1" }

resource "velyrix_cluster" "training" {
  name       = "small"
  node_type  = "hgx-h200-8g"
  node_count = var.nodes
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
  storage {
    parallel_fs_tb = 100
  }
}

variable "nodes" { default = 16 }
"""


class Plane:
    def __init__(self, tmp: Path) -> None:
        self.app = create_app(f"sqlite:///{tmp / 'velyrix.db'}")
        self.runtime = FleetRuntime.twin(
            self.app.state.sessionmaker,
            "us-east-1",
            node_counts={"hgx-h200-8g": 64},
            seed=2,
            delays=False,
            settings=phases.ReconcileSettings(poll_s=0.01, idle_s=0.05),
        )
        self.runtime.attach(self.app)
        self.runtime.enroll()
        with self.app.state.sessionmaker() as s:
            t = models.Tenant(name="acme", display_name="ACME")
            s.add(t)
            s.flush()
            self.tenant_key = principals.issue_key(s, tenant_id=t.id, name="t", role="owner")[1]
            self.operator_key = principals.issue_key(s, tenant_id=None, name="noc", role="operator")[1]
            s.commit()

    def headers(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def plane(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Plane:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    return Plane(tmp_path)


def test_fault_injection_report_and_destroy_over_the_api(plane: Plane) -> None:
    api = TestClient(plane.app)
    op, tenant = plane.headers(plane.operator_key), plane.headers(plane.tenant_key)
    r = api.post("/v1/sim/faults", headers=op, json={"node": "use1-h200-su00-n03", "kind": "xid", "xid": 79, "gpu": 2})
    assert r.status_code == 202 and r.json()["fault"]["xid"] == 79
    assert (
        api.post(
            "/v1/sim/faults", headers=tenant, json={"node": "use1-h200-su00-n03", "kind": "xid", "xid": 79}
        ).status_code
        == 403
    )
    bad = api.post("/v1/sim/faults", headers=op, json={"node": "use1-h200-su00-n03", "kind": "ecc_dbee"})
    assert bad.status_code == 422 and "ecc_dbe" in bad.json()["hint"]
    assert api.post("/v1/sim/faults", headers=op, json={"node": "nope", "kind": "thermal"}).status_code == 422
    body = {
        "name": "train",
        "region": "us-east-1",
        "node_type": "hgx-h200-8g",
        "node_count": 32,
        "fabric": "infiniband-ndr",
        "scheduler": "slurm",
        "storage": {"parallel_fs_tb": 100},
    }
    cid = api.post("/v1/clusters", headers=tenant, json=body).json()["id"]
    assert api.get(f"/v1/clusters/{cid}/acceptance", headers=tenant).status_code == 404
    plane.runtime.reconciler.settle(30)
    signed = api.get(f"/v1/clusters/{cid}/acceptance", headers=tenant).json()
    assert signed["report"]["passed"]
    assert signed["report"]["replacements"][0]["failed"] == "use1-h200-su00-n03"
    key = api.get("/v1/acceptance/keys/us-east-1", headers=tenant).json()
    assert key["public_key"] == signed["signature"]["public_key"]
    assert signing.verify(signed, key["public_key"]).valid
    assert api.post(f"/v1/clusters/{cid}/destroy", headers=tenant, json={}).status_code == 202
    plane.runtime.reconciler.settle(30)
    assert api.get(f"/v1/clusters/{cid}", headers=tenant).json()["status"]["phase"] == "Deleted"


@pytest.fixture
def served(plane: Plane, monkeypatch: pytest.MonkeyPatch) -> Iterator[Plane]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(plane.app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    plane.runtime.start()
    monkeypatch.setenv("VELYRIX_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("VELYRIX_API_KEY", plane.tenant_key)
    yield plane
    plane.runtime.stop()
    server.should_exit = True
    thread.join(5)


def test_cli_apply_status_report_verify_destroy(served: Plane, velyrix: Any, tmp_path: Path) -> None:
    tf = tmp_path / "small.tf"
    tf.write_text(TF)
    res = velyrix("apply", str(tf), "-auto-approve")
    assert res.exit_code == 0, res.stdout + res.stderr
    assert "+ velyrix_cluster.training will be created" in res.stdout and "Apply complete" in res.stdout
    again = velyrix("apply", str(tf), "-auto-approve")
    assert again.exit_code == 0 and "is up to date" in again.stdout
    scaled = velyrix("apply", str(tf), "-auto-approve", "-var", "nodes=24")
    assert scaled.exit_code == 0 and "node_count: 16 -> 24" in scaled.stdout, scaled.stdout
    status = velyrix("status", "small")
    assert "Ready" in status.stdout and "24 active" in status.stdout
    report = velyrix("report", "acceptance", "small", "--json")
    signed = json.loads(report.stdout)
    assert len(signed["report"]["nodes"]) == 24
    path = tmp_path / "report.json"
    path.write_text(report.stdout)
    assert velyrix("verify", "acceptance", str(path)).exit_code == 0
    signed["report"]["passed"] = not signed["report"]["passed"]
    path.write_text(json.dumps(signed))
    forged = velyrix("verify", "acceptance", str(path))
    assert forged.exit_code == 1 and "INVALID" in forged.stdout
    path.write_text("{}")
    assert velyrix("verify", "acceptance", str(path)).exit_code == 2
    too_big = velyrix("apply", str(tf), "-auto-approve", "-var", "nodes=63")
    # refused when declared (the fleet has 64 nodes, 4 of them spares): nothing half-applied
    assert too_big.exit_code == 2 and "nodes available" in too_big.stderr and "held back as spares" in too_big.stderr
    gone = velyrix("destroy", str(tf), "-auto-approve")
    assert gone.exit_code == 0 and "destroyed" in gone.stdout
    back = velyrix("apply", str(tf), "-auto-approve")  # the name is free again after the teardown
    assert back.exit_code == 0 and "will be created" in back.stdout, back.stdout + back.stderr


def test_apply_without_confirmation_changes_nothing(
    served: Plane, velyrix: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tf = tmp_path / "small.tf"
    tf.write_text(TF)
    monkeypatch.setattr("typer.prompt", lambda *a, **k: "no")
    res = velyrix("apply", str(tf))
    assert res.exit_code == 1 and "Apply cancelled" in res.stdout
    with served.app.state.sessionmaker() as s:
        assert s.query(models.Cluster).count() == 0


def test_cli_sim_inject_with_a_tenant_key_says_a_provider_key_is_needed(
    served: Plane, velyrix: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused = velyrix("sim", "inject", "use1-h200-su00-n03", "--xid", "79")  # the tenant's key (fixture)
    assert refused.exit_code == 2 and "lacks the scope 'fleet:operate'" in refused.stderr
    assert "velyrix admin create-provider-key" in refused.stderr and "Traceback" not in refused.stderr
    monkeypatch.setenv("VELYRIX_API_KEY", served.operator_key)
    done = velyrix("sim", "inject", "use1-h200-su00-n03", "--xid", "79")
    assert done.exit_code == 0 and "fault injected at" in done.stdout and "use1-h200-su00-n03" in done.stdout
