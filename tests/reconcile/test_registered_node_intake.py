"""Nodes an operator registers through ``POST /v1/nodes`` start ``enrolled`` in stage ``burn-in`` and the
fleet intake inspects and burns them in like the nodes the driver enrolls (on the twin, SQLite)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from velyrix.controlplane.auth import principals
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile.runtime import FleetRuntime
from velyrix.ops.service import create_app


def test_registered_node_is_inspected_and_burned_in_by_intake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    app = create_app(f"sqlite:///{tmp_path / 'velyrix.db'}")
    runtime = FleetRuntime.twin(
        app.state.sessionmaker, "us-east-1", node_counts={"hgx-h200-8g": 4}, seed=5, delays=False
    )
    runtime.attach(app)
    with app.state.sessionmaker() as s:
        op = principals.issue_key(s, tenant_id=None, name="noc", role="operator")[1]
        s.commit()
    api = TestClient(app)
    hostname = "use1-h200-su00-n02"
    resp = api.post(
        "/v1/nodes",
        headers={"Authorization": f"Bearer {op}"},
        json={"name": hostname, "region": "us-east-1", "node_type": "hgx-h200-8g"},
    )
    assert resp.status_code == 201, resp.text
    assert (resp.json()["provisioning_state"], resp.json()["fleet_stage"]) == ("enrolled", "burn-in")
    assert runtime.enroll() == 3  # the driver's other nodes; the registered one is known already
    with app.state.sessionmaker() as s:
        node = s.query(models.Node).filter_by(name=hostname).one()
        assert (node.provisioning_state, node.fleet_stage) == ("available", "production")
        assert node.hardware["serial"] and len(node.hardware["gpus"]) == 8
        stages = [
            t.to_state
            for t in s.query(models.NodeTransition).filter_by(node_id=node.id).order_by(models.NodeTransition.at)
        ]
        assert stages == ["inspecting", "available", "production"]
    app.state.engine.dispose()
