"""``velyrix fabric`` and the fabric_plan section of ``velyrix plan``."""

from __future__ import annotations

import json
from pathlib import Path

from ..conftest import EXAMPLES


def test_fabric_json_for_the_seed_cluster(velyrix) -> None:
    result = velyrix("fabric", "--node-type", "hgx-h200-8g", "--nodes", "64", "--fabric", "infiniband-ndr", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    c = data["compute"]
    assert c["switches"]["leaf"] == 16 and c["switches"]["spine"] == 8
    assert c["verification"]["nonblocking"] and c["verification"]["rail_aligned"]
    assert data["storage_plane"]["switches"] >= 1 and data["management_plane"]["switches"] >= 1


def test_fabric_gpus_and_files(velyrix, tmp_path: Path) -> None:
    pic, topo, conf = tmp_path / "pod.svg", tmp_path / "topo.json", tmp_path / "topology.conf"
    result = velyrix(
        "fabric",
        "--node-type",
        "hgx-b200-8g",
        "--gpus",
        "576",
        "--fabric",
        "infiniband-xdr",
        "--picture",
        str(pic),
        "--topology-out",
        str(topo),
        "--slurm-topology",
        str(conf),
    )
    assert result.exit_code == 0, result.stderr
    assert "verified" in result.stdout and "Storage plane" in result.stdout
    assert pic.read_text().startswith("<svg")
    assert len(json.loads(topo.read_text())["nic_links"]) == 576
    assert "SwitchName=su00 Nodes=node-[0000-0071]" in conf.read_text()


def test_fabric_bad_inputs_exit_2_with_a_hint(velyrix) -> None:
    result = velyrix("fabric", "--node-type", "hgx-h200-8g", "--gpus", "100", "--fabric", "infiniband-ndr")
    assert result.exit_code == 2 and "--gpus 104" in result.stderr
    result = velyrix("fabric", "--node-type", "hgx-h200-8g", "--nodes", "9000", "--fabric", "infiniband-ndr")
    assert result.exit_code == 2 and "65,536" in result.stderr and "infiniband-xdr" in result.stderr
    result = velyrix("fabric", "--node-type", "hgx-h200-8g", "--nodes", "8", "--fabric", "infiniband-nd")
    assert result.exit_code == 2 and "did you mean 'infiniband-ndr'" in result.stderr
    result = velyrix(
        "fabric", "--node-type", "hgx-h200-8g", "--nodes", "8", "--gpus", "64", "--fabric", "infiniband-ndr"
    )
    assert result.exit_code == 2 and "exactly one of --nodes or --gpus" in result.stderr


def test_plan_has_a_verified_fabric_section(velyrix) -> None:
    result = velyrix("plan", str(EXAMPLES / "acme-pretrain.tf"), "--json")
    res = json.loads(result.stdout)["resources"][0]
    assert res["fabric"] == "infiniband-ndr"
    fab = res["fabric_plan"]["compute"]
    assert (fab["tiers"], fab["switches"]["leaf"], fab["switches"]["spine"]) == (2, 16, 8)
    assert fab["cables"]["node_leaf"] == 512 and fab["cables"]["leaf_spine"] == 512
    assert fab["verification"]["ok"] and fab["bisection_gbps"] == 102400
    human = velyrix("plan", str(EXAMPLES / "acme-pretrain.tf"))
    assert "Network: infiniband-ndr" in human.stdout and "verified" in human.stdout
