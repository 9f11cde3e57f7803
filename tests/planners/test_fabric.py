"""The fabric planner reproduces NVIDIA's published rows and the REFERENCE §1 rules."""

from __future__ import annotations

import pytest

from velyrix import errors
from velyrix.planners import fabric


def test_seed_cluster_plans_as_nvidias_512_gpu_layout() -> None:
    plan = fabric.plan_fabric("hgx-h200-8g", 64, "infiniband-ndr")
    c = plan.to_dict()["compute"]
    assert (c["tiers"], c["scalable_units"], c["switch_model"]) == (2, 2, "qm9700")
    assert c["switches"] == {"leaf": 16, "spine": 8, "core": 0, "total": 24}
    assert c["cables"] == {"node_leaf": 512, "leaf_spine": 512, "spine_core": 0}
    assert c["link_gbps"] == 400
    assert c["bisection_gbps"] == 256 * 400
    assert c["ports"]["leaf"]["used_max"] == 64 and c["ports"]["spine"]["used_max"] == 64


def test_256_nodes_plan_as_the_2048_gpu_row() -> None:
    c = fabric.plan_fabric("hgx-h200-8g", 256, "infiniband-ndr").to_dict()["compute"]
    assert (c["tiers"], c["scalable_units"]) == (2, 8)
    assert (c["switches"]["leaf"], c["switches"]["spine"]) == (64, 32)
    assert c["cables"] == {"node_leaf": 2048, "leaf_spine": 2048, "spine_core": 0}


@pytest.mark.parametrize("nodes", [512, 1024, 4096, 8192])
def test_beyond_two_tiers_nvidias_three_tier_counts(nodes: int) -> None:
    gpus, k = nodes * 8, 64
    c = fabric.plan_fabric("hgx-h200-8g", nodes, "infiniband-ndr").to_dict()["compute"]
    assert c["tiers"] == 3
    assert c["switches"]["leaf"] == gpus // (k // 2)
    assert c["switches"]["spine"] == gpus // (k // 2)
    assert c["switches"]["core"] == gpus // k
    assert c["cables"] == {"node_leaf": gpus, "leaf_spine": gpus, "spine_core": gpus}


def test_257_nodes_is_the_first_three_tier_size() -> None:
    assert fabric.plan_fabric("hgx-h200-8g", 256, "infiniband-ndr").compute.tiers == 2
    assert fabric.plan_fabric("hgx-h200-8g", 257, "infiniband-ndr").compute.tiers == 3


def test_beyond_three_tiers_is_an_error_naming_limit_and_options() -> None:
    with pytest.raises(errors.CapacityError) as info:
        fabric.plan_fabric("hgx-h200-8g", 8193, "infiniband-ndr")
    assert "65,536" in info.value.message and "2,048" in info.value.message
    assert info.value.hint and "infiniband-xdr" in info.value.hint and "oversubscription" in info.value.hint


def test_h200_on_xdr_still_runs_400g_and_uses_144_ports() -> None:
    c = fabric.plan_fabric("hgx-h200-8g", 72, "infiniband-xdr").compute
    assert (c.link_gbps, c.radix, c.su_nodes, c.leaves, c.scalable_units) == (400, 144, 72, 8, 1)


def test_spectrum_x_sn5600_runs_128_split_400g_ports() -> None:
    c = fabric.plan_fabric("hgx-b200-8g", 64, "spectrum-x").compute
    assert (c.radix, c.link_gbps, c.su_nodes) == (128, 400, 64)
    assert c.sharp["enabled"] is False and c.isolation["mechanism"] == "vlan_vni"


def test_partial_last_su_is_cabled_whole() -> None:
    plan = fabric.plan_fabric("hgx-h200-8g", 33, "infiniband-ndr")
    c = plan.to_dict()["compute"]
    assert c["scalable_units"] == 2 and c["cabled_nodes"] == 64
    assert c["cables"]["node_leaf"] == 512 and c["cables"]["leaf_spine"] == 512


def test_nic_port_follows_the_rail_contract() -> None:
    plan = fabric.plan_fabric("hgx-h200-8g", 64, "infiniband-ndr")
    assert plan.nic_port(0, 0) == ("leaf-su00-r0", 1)
    assert plan.nic_port(37, 5) == ("leaf-su01-r5", 6)
    with pytest.raises(errors.InvalidInputError):
        plan.nic_port(64, 0)


def test_oversubscription_puts_more_nodes_under_a_leaf() -> None:
    c = fabric.plan_fabric("hgx-h200-8g", 256, "infiniband-ndr", oversubscription=2.0).compute
    assert (c.leaf_down, c.leaf_up) == (42, 22)
    assert c.su_nodes == 42 and c.scalable_units == 7


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"node_type": "hgx-h100-8g", "node_count": 8, "fabric": "infiniband-xdr"}, "invalid_input"),
        ({"node_type": "hgx-h200-8g", "node_count": 0, "fabric": "infiniband-ndr"}, "invalid_input"),
        ({"node_type": "hgx-h200-8g", "node_count": 8, "fabric": "infiniband-ndx"}, "unknown_name"),
        (
            {"node_type": "hgx-h200-8g", "node_count": 8, "fabric": "infiniband-ndr", "oversubscription": 0.5},
            "invalid_input",
        ),
    ],
)
def test_bad_inputs_are_clear_errors(kwargs: dict, code: str) -> None:
    with pytest.raises(errors.VelyrixError) as info:
        fabric.plan_fabric(**kwargs)
    assert info.value.code == code


def test_sharp_needs_one_tree_per_rail_and_pkeys_budget() -> None:
    c = fabric.plan_fabric("hgx-h200-8g", 64, "infiniband-ndr").compute
    assert c.sharp["trees_per_job"] == 8 and c.sharp["concurrent_multi_rail_jobs_max"] == 1023 // 8
    assert c.isolation["usable"] == 0x7FFE and c.isolation["per_port_max"] == 128
    off = fabric.plan_fabric("hgx-h200-8g", 64, "infiniband-ndr", sharp=False).compute.sharp
    assert off == {"enabled": False, "reason": "disabled by request"}


def test_storage_plane_follows_guidance_or_target() -> None:
    guided = fabric.plan_fabric("hgx-h200-8g", 64, "infiniband-ndr").storage_plane
    assert guided.target_read_gb_s == 80.0 and "better" in guided.target_source
    assert guided.deliverable_gb_s >= 80.0 and guided.link_gbps == 200
    big = fabric.plan_fabric("hgx-h200-8g", 64, "infiniband-ndr", storage_target_gb_s=1000).storage_plane
    assert big.target_source == "storage plan" and big.deliverable_gb_s >= 1000
    assert big.storage_ports == 40 > guided.storage_ports  # 1,000 GB/s at 200G
    capped = fabric.plan_fabric("hgx-h200-8g", 2, "infiniband-ndr", storage_target_gb_s=1000).storage_plane
    assert capped.notes and capped.deliverable_gb_s <= 2 * 2 * 200 / 8


def test_management_plane_has_oob_inband_jump_host_and_dual_homed_egress() -> None:
    plan = fabric.plan_fabric("hgx-h200-8g", 64, "infiniband-ndr")
    m = plan.management_plane.to_dict()
    assert m["out_of_band"]["switch_model"] == "sn2201"
    assert m["out_of_band"]["ports_used"] >= 64 + 24  # every BMC and every compute switch
    assert m["out_of_band"]["switches"] * 48 >= m["out_of_band"]["ports_used"]
    assert m["jump_hosts"] == 1 and m["egress"]["dual_homed"] and len(m["egress"]["uplinks_gbps"]) == 2


def test_max_endpoints_matches_k2_over_2_and_k3_over_4() -> None:
    assert fabric.max_endpoints("hgx-h200-8g", "infiniband-ndr") == (64**2 // 2, 64**3 // 4)
    assert fabric.max_endpoints("hgx-h200-8g", "infiniband-xdr") == (144**2 // 2, 144**3 // 4)


def test_storage_plane_says_when_two_tiers_are_not_enough() -> None:
    assert not fabric.plan_fabric("hgx-h200-8g", 4096, "infiniband-ndr").storage_plane.notes
    notes = fabric.plan_fabric("hgx-h200-8g", 8192, "infiniband-ndr").storage_plane.notes
    assert any("third tier" in n for n in notes)
