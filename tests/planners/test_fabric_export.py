"""Exports: topology JSON, Slurm topology.conf (tree) and the SVG pod picture."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from velyrix import errors
from velyrix.planners import fabric, fabric_export, fabric_topology


def test_topology_json_lists_every_switch_and_cable() -> None:
    plan = fabric.plan_fabric("hgx-h200-8g", 40, "infiniband-ndr")
    doc = json.loads(fabric_export.topology_json(plan))
    assert doc["schema"] == fabric_export.TOPOLOGY_SCHEMA
    assert len(doc["switches"]) == 16 + 8
    assert len(doc["nic_links"]) == 40 * 8
    assert {"node": "node-0037", "nic": "mlx5_5", "rail": 5, "leaf": "leaf-su01-r5", "port": 6} in doc["nic_links"]
    assert sum(link["cables"] for link in doc["links"]) == 16 * 32
    partial = [s for s in doc["switches"] if s["name"] == "leaf-su01-r0"][0]
    assert partial["reserved_ports"] == 24  # the partial SU is cabled whole


def test_topology_json_records_a_miscabled_nic_as_built() -> None:
    plan = fabric.plan_fabric("hgx-h200-8g", 64, "infiniband-ndr")
    topo = fabric_topology.build_topology(plan)
    topo.recable_nic(40, 1, "leaf-su00-r1")
    doc = json.loads(fabric_export.topology_json(plan, topo))
    link = [x for x in doc["nic_links"] if x["node"] == "node-0040" and x["rail"] == 1][0]
    assert link["leaf"] == "leaf-su00-r1" and link["port"] == 33


def test_hostlist_compresses_runs() -> None:
    assert fabric_export.hostlist(["gpu001", "gpu002", "gpu003", "gpu007", "login", "gpu008"]) == (
        "gpu[001-003],gpu007,login,gpu008"
    )


def test_slurm_topology_two_tiers_one_switch_per_su() -> None:
    plan = fabric.plan_fabric("hgx-h200-8g", 64, "infiniband-ndr")
    text = fabric_export.slurm_topology(plan, [f"gpu{i:03d}" for i in range(64)])
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert lines == [
        "SwitchName=su00 Nodes=gpu[000-031]",
        "SwitchName=su01 Nodes=gpu[032-063]",
        "SwitchName=spines Switches=su[00-01]",
    ]


def test_slurm_topology_three_tiers_has_pods_under_cores() -> None:
    plan = fabric.plan_fabric("hgx-h200-8g", 300, "infiniband-ndr")
    text = fabric_export.slurm_topology(plan, fabric_export.default_node_names(300))
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert "SwitchName=su09 Nodes=node-[0288-0299]" in lines
    assert "SwitchName=pod02 Switches=su[08-09]" in lines
    assert lines[-1] == "SwitchName=cores Switches=pod[00-02]"


def test_slurm_topology_needs_one_name_per_node() -> None:
    plan = fabric.plan_fabric("hgx-h200-8g", 4, "infiniband-ndr")
    with pytest.raises(errors.InvalidInputError, match="3 node names for a plan of 4 nodes"):
        fabric_export.slurm_topology(plan, ["a1", "a2", "a3"])


@pytest.mark.parametrize(("nodes", "fab"), [(64, "infiniband-ndr"), (1000, "infiniband-ndr"), (9, "spectrum-x")])
def test_pod_picture_is_valid_svg_with_planes_and_rails(nodes: int, fab: str) -> None:
    plan = fabric.plan_fabric("hgx-h200-8g", nodes, fab)
    svg = fabric_export.pod_svg(plan)
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")
    texts = " ".join(t.text or "" for t in root.iter() if t.tag.endswith("text"))
    assert "Storage plane" in texts and "Management plane" in texts and "rail 7" in texts
    assert f"{plan.compute.leaves} leaves" in texts and f"{plan.compute.spines} spines" in texts
    if plan.compute.tiers == 3:
        assert f"{plan.compute.cores} cores" in texts and "more SUs" in texts
