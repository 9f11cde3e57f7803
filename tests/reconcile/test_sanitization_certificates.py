"""Sanitization certificates end to end on the twin: after ``destroy`` the tenant downloads one signed NIST SP
800-88 certificate per released node and deleted volume (``velyrix report sanitization``) and verifies
each offline (``velyrix verify sanitization``); an altered certificate or another tenant is refused."""

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

from tests.reconcile.test_fleet_api_cli import Plane
from velyrix.controlplane.auth import principals
from velyrix.controlplane.db import models
from velyrix.testing.postgres import free_port

BODY = {
    "name": "wiped",
    "region": "us-east-1",
    "node_type": "hgx-h200-8g",
    "node_count": 4,
    "fabric": "infiniband-ndr",
    "scheduler": "slurm",
    "storage": {"parallel_fs_tb": 100, "object_tb": 50},
}


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Plane, str]]:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    plane = Plane(tmp_path)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(plane.app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    monkeypatch.setenv("VELYRIX_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("VELYRIX_API_KEY", plane.tenant_key)
    yield plane, f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(5)


def test_after_destroy_the_tenant_downloads_and_verifies_one_certificate_per_node_and_volume(
    served: tuple[Plane, str], velyrix: Any, tmp_path: Path
) -> None:
    plane, _ = served
    api = TestClient(plane.app)
    tenant = plane.headers(plane.tenant_key)
    cid = api.post("/v1/clusters", headers=tenant, json=BODY).json()["id"]
    plane.runtime.reconciler.settle(30)
    with plane.app.state.sessionmaker() as s:
        nodes = sorted(n.name for n in s.query(models.Node).filter_by(cluster_id=cid))
        volumes = sorted(v.name for v in s.query(models.Volume).filter_by(cluster_id=cid))
    assert len(nodes) == 4 and len(volumes) == 2
    assert api.get(f"/v1/clusters/{cid}/sanitization-certificates", headers=tenant).json()["items"] == []
    assert api.post(f"/v1/clusters/{cid}/destroy", headers=tenant, json={"delete_volumes": True}).status_code == 202
    plane.runtime.reconciler.settle(30)

    out = tmp_path / "certs"
    listed = velyrix("report", "sanitization", "wiped", "--out", str(out))
    assert listed.exit_code == 0, listed.stdout + listed.stderr
    files = sorted(p.name for p in out.iterdir())
    assert files == sorted([f"node-{n}.json" for n in nodes] + [f"volume-{v}.json" for v in volumes])
    key = api.get("/v1/acceptance/keys/us-east-1", headers=tenant).json()["public_key"]
    for path in out.iterdir():
        ok = velyrix("verify", "sanitization", str(path), "--public-key", key)
        assert ok.exit_code == 0 and "valid" in ok.stdout and "purged" in ok.stdout, ok.stdout + ok.stderr
    pinned = velyrix("verify", "sanitization", str(out / f"node-{nodes[0]}.json"))  # the region key, pinned now
    assert pinned.exit_code == 0 and "pinned now" in pinned.stdout and "not pinned" not in pinned.stdout, pinned.stdout
    node_cert = json.loads((out / f"node-{nodes[0]}.json").read_text())["report"]
    assert node_cert["standard"] == "NIST SP 800-88 Rev. 2" and node_cert["sanitization"]["method"] == "purge"
    assert node_cert["verification"]["passed"] and node_cert["performed_by"].startswith("reconciler/teardown")
    nvme = [m for m in node_cert["media"] if m["type"] == "NVMe SSD"]
    assert nvme and all(m["serial"] and "--ses=2" in m["command"] for m in nvme)
    assert len([m for m in node_cert["media"] if m["type"].startswith("GPU memory")]) == 8

    forged = json.loads((out / f"node-{nodes[0]}.json").read_text())
    forged["report"]["verification"]["passed"] = False
    (tmp_path / "forged.json").write_text(json.dumps(forged))
    bad = velyrix("verify", "sanitization", str(tmp_path / "forged.json"), "--public-key", key)
    assert bad.exit_code == 1 and "INVALID" in bad.stdout

    with plane.app.state.sessionmaker() as s:
        other = models.Tenant(name="other")
        s.add(other)
        s.flush()
        other_key = principals.issue_key(s, tenant_id=other.id, name="o", role="owner")[1]
        s.commit()
    assert api.get(f"/v1/clusters/{cid}/sanitization-certificates", headers=plane.headers(other_key)).status_code == 404
