"""A node report that drains and replaces a node keeps every event it recorded: the ``HealthDrain`` added
before ``reconcile.cluster.heal`` runs in the same transaction reaches the tenant's events beside the
``NodeHealed`` added after it (heal re-reads the cluster under its lock)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.reconcile.test_node_reports_e2e import Up
from tests.reconcile.test_running_cloud_e2e import POLL_S, healed, inject, ready_cluster, until


@pytest.fixture
def cloud(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Up]:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    plane = Up(f"sqlite:///{tmp_path / 'velyrix.db'}", twin_nodes=9, agent_interval_s=POLL_S)  # 1 spare
    yield plane
    plane.stop()


def test_the_health_drain_event_survives_the_replacement_in_the_same_report(cloud: Up) -> None:
    cid, members = ready_cluster(cloud)
    victim = members[2]["name"]
    inject(cloud, victim, kind="xid", xid=79, gpu=3)
    until("the node replaced", lambda: healed(cloud, cid, victim))
    events = cloud.http.get(f"/v1/clusters/{cid}", headers=cloud.tenant).json()["status"]["events"]
    reasons = [e["reason"] for e in events if victim in e["message"]]
    assert "NodeHealed" in reasons and "HealthDrain" in reasons, reasons
    (drain,) = [e for e in events if e["reason"] == "HealthDrain" and victim in e["message"]]
    assert drain["type"] == "Warning" and "xid" in drain["message"].lower(), drain
