"""Node reports through the API open and close a node's degraded interval (``node_degradations``), on
SQLite and PostgreSQL: a pending row remap (level degraded, a GPU reset is due) keeps the node in service,
degraded, until a clean report."""

from __future__ import annotations

from typing import Any

from tests.controlplane.conftest import World, auth


def _report(hostname: str, pending_gpu: int | None) -> dict[str, Any]:
    gpus = [{"index": i, "uuid": f"GPU-{i}", "remap_pending": int(i == pending_gpu)} for i in range(8)]
    sample = {"hostname": hostname, "gpus": gpus}
    return {"hostname": hostname, "collected_at_s": 1000.0, "up": True, "problems": [], "sample": sample}


def test_a_pending_remap_runs_the_node_degraded_until_a_clean_report(client: Any, world: World) -> None:
    from velyrix.controlplane.db import models

    cluster_id = world.cluster(world.a)
    node_id = world.node(world.a, cluster_id)
    with world.session() as s:  # delivered: in service
        row = s.get(models.Node, node_id)
        row.provisioning_state, row.fleet_stage = "active", "production"
        s.commit()
    cred = client.post(f"/v1/nodes/{node_id}/credentials", headers=auth(world.provider["operator"])).json()
    url, token = f"/v1/nodes/{cred['hostname']}/reports", auth(cred["node_token"])
    first = client.post(url, json=_report(cred["hostname"], 2), headers=token)
    assert first.status_code == 200, first.text
    assert first.json()["health_action"] == "RESET_GPU"
    last = client.get(f"/v1/nodes/{node_id}/report", headers=auth(world.provider["operator"])).json()
    assert last["health_level"] == 2  # degraded

    def intervals() -> list[tuple[str | None, bool]]:
        with world.session() as s:
            rows = s.query(models.NodeDegradation).filter_by(node_id=node_id).all()
            return [(r.cluster_id, r.ended_at is not None) for r in rows]

    assert intervals() == [(cluster_id, False)]
    client.post(url, json=_report(cred["hostname"], 2), headers=token)
    assert intervals() == [(cluster_id, False)]  # still the one interval
    clean = client.post(url, json=_report(cred["hostname"], None), headers=token)
    assert clean.status_code == 200 and clean.json()["health_action"] == "IGNORE"
    assert intervals() == [(cluster_id, True)]
