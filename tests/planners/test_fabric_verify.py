"""Graph verification proves the designed fabrics and names the part of a damaged one."""

from __future__ import annotations

import collections

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from velyrix import errors
from velyrix.planners import fabric, fabric_topology, fabric_verify

FABRICS = {  # node type -> fabrics it is sold on (catalog), with node counts that stay quick to verify
    "hgx-h200-8g": ("infiniband-ndr", "infiniband-xdr", "spectrum-x"),
    "hgx-h100-8g": ("infiniband-ndr", "spectrum-x"),
    "hgx-b200-8g": ("infiniband-ndr", "infiniband-xdr", "spectrum-x"),
}


@st.composite
def fabrics(draw: st.DrawFn) -> tuple[str, int, str]:
    node_type = draw(st.sampled_from(sorted(FABRICS)))
    fab = draw(st.sampled_from(FABRICS[node_type]))
    nodes = draw(st.integers(min_value=1, max_value=600))
    return node_type, nodes, fab


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fabrics())
def test_every_planned_fabric_verifies_on_its_graph(case: tuple[str, int, str]) -> None:
    node_type, nodes, fab = case
    plan = fabric.plan_fabric(node_type, nodes, fab)
    topo = fabric_topology.build_topology(plan)
    c = plan.compute
    # Every GPU NIC has exactly one cable, to its rail's leaf in its SU (checked here directly).
    per_nic = collections.Counter((n, r) for n, r, _ in topo.nic_links)
    assert set(per_nic) == {(n, r) for n in range(nodes) for r in range(c.rails)}
    assert set(per_nic.values()) == {1}
    for n, r, leaf in topo.nic_links:
        assert topo.switches[leaf].name == plan.nic_port(n, r)[0]
    # No switch exceeds its radix.
    assert all(used <= sw.radix for sw, used in zip(topo.switches, topo.ports_used(), strict=True))
    # A partial last SU is cabled whole: reserved ports on its leaves.
    missing = c.cabled_nodes - nodes
    assert 0 <= missing < c.su_nodes
    assert sum(sw.reserved_ports for sw in topo.switches) == missing * c.rails
    assert plan.compute.cables()["node_leaf"] == c.cabled_nodes * c.rails
    # At 1:1 the max-flow bisection equals half the GPUs times the link speed.
    result = fabric_verify.verify(plan, topo)
    assert result.ok, result.failures
    assert result.nonblocking and result.rail_aligned
    assert result.bisection_gbps == (nodes // 2) * c.rails * c.link_gbps
    assert result.ecmp_paths_min >= 1 or c.leaves == 1


@settings(max_examples=12, deadline=None)
@given(st.integers(min_value=1, max_value=520), st.sampled_from(["infiniband-ndr", "spectrum-x"]))
def test_python_and_scipy_backends_agree(nodes: int, fab: str) -> None:
    plan = fabric.plan_fabric("hgx-h200-8g", nodes, fab)
    topo = fabric_topology.build_topology(plan)
    if topo.links:
        first = next(iter(topo.links))
        topo.remove_link(topo.switches[first[0]].name, topo.switches[first[1]].name)
    py = fabric_verify.verify(plan, topo, backend="python")
    sp = fabric_verify.verify(plan, topo, backend="scipy")
    assert (py.bisection_gbps, py.ecmp_paths_min, py.ecmp_paths_max, py.failures) == (
        sp.bisection_gbps,
        sp.ecmp_paths_min,
        sp.ecmp_paths_max,
        sp.failures,
    )


@pytest.mark.parametrize("nodes", [40, 300])
def test_max_flow_agrees_with_networkx(nodes: int) -> None:
    import networkx as nx

    plan = fabric.plan_fabric("hgx-h200-8g", nodes, "infiniband-ndr")
    topo = fabric_topology.build_topology(plan)
    n, edges = fabric_verify._flow_edges(topo, None)
    graph = nx.DiGraph()
    for u, v, cap in edges:
        prior = graph.get_edge_data(u, v, {"capacity": 0})["capacity"]
        graph.add_edge(u, v, capacity=prior + cap)
    assert nx.maximum_flow_value(graph, n - 2, n - 1) * topo.link_gbps == fabric_verify.verify(plan).bisection_gbps


def _seed() -> tuple[fabric.FabricPlan, fabric_topology.Topology]:
    plan = fabric.plan_fabric("hgx-h200-8g", 64, "infiniband-ndr")
    return plan, fabric_topology.build_topology(plan)


def test_removed_uplink_fails_naming_leaf_and_bisection() -> None:
    plan, topo = _seed()
    topo.remove_link("leaf-su00-r3", "spine-02")
    result = fabric_verify.verify(plan, topo)
    assert not result.ok and not result.nonblocking
    assert "leaf-su00-r3 has 31 uplinks, expected 32" in result.failures
    assert any(f.startswith("bisection: max-flow 102,000 Gb/s") for f in result.failures)
    assert any(f.startswith("rail 3:") for f in result.failures)
    with pytest.raises(errors.TopologyInvalidError, match="leaf-su00-r3"):
        result.raise_if_failed()


def test_miscabled_nic_fails_naming_node_nic_and_leaves() -> None:
    plan, topo = _seed()
    topo.recable_nic(5, 3, "leaf-su00-r2")
    result = fabric_verify.verify(plan, topo)
    assert not result.rail_aligned
    assert "node 5 NIC 3 (mlx5_3) is cabled to leaf-su00-r2, expected leaf-su00-r3" in result.failures
    assert "leaf-su00-r2 uses 65 ports, has 64" in result.failures


def test_nic_cabled_into_the_other_su_fails() -> None:
    plan, topo = _seed()
    topo.recable_nic(40, 1, "leaf-su00-r1")
    failures = fabric_verify.verify(plan, topo).failures
    assert "node 40 NIC 1 (mlx5_1) is cabled to leaf-su00-r1, expected leaf-su01-r1" in failures


def test_missing_and_doubled_nic_cables_fail() -> None:
    plan, topo = _seed()
    topo.nic_links = [link for link in topo.nic_links if link[:2] != (7, 0)]
    topo.nic_links.append((8, 4, topo.index("leaf-su00-r4")))
    failures = fabric_verify.verify(plan, topo).failures
    assert "node 7 NIC 0 (mlx5_0) has 0 cables, expected exactly 1" in failures
    assert "node 8 NIC 4 (mlx5_4) has 2 cables, expected exactly 1" in failures


def test_uneven_uplinks_fail_the_ecmp_balance() -> None:
    plan, topo = _seed()
    leaf, a, b = topo.index("leaf-su01-r6"), topo.index("spine-00"), topo.index("spine-01")
    topo.links[leaf, a] -= 1
    topo.links[leaf, b] += 1
    failures = fabric_verify.verify(plan, topo).failures
    assert any(f.startswith("leaf-su01-r6 uplinks are uneven over 8 switches") and "spine-00: 3" in f for f in failures)


def test_removed_core_uplink_fails_in_three_tiers() -> None:
    plan = fabric.plan_fabric("hgx-h200-8g", 512, "infiniband-ndr")
    topo = fabric_topology.build_topology(plan)
    topo.remove_link("spine-p01-03", "core-g03-00")
    failures = fabric_verify.verify(plan, topo).failures
    assert "spine-p01-03 has 31 uplinks, expected 32" in failures
    assert any(f.startswith("bisection: max-flow 818,800 Gb/s") for f in failures)


def test_leaf_cut_off_from_all_spines_has_no_equal_cost_path() -> None:
    plan, topo = _seed()
    for j in range(8):
        topo.remove_link("leaf-su00-r0", f"spine-{j:02d}", 4)
    failures = fabric_verify.verify(plan, topo).failures
    assert any(f.startswith("no equal-cost path between leaf-su00-r0 and") for f in failures)


def test_oversubscribed_plan_verifies_against_its_design_but_is_not_nonblocking() -> None:
    plan = fabric.plan_fabric("hgx-h200-8g", 120, "infiniband-ndr", oversubscription=2.0)
    result = fabric_verify.verify(plan)
    assert result.ok, result.failures
    assert not result.nonblocking
    assert result.bisection_gbps >= plan.bisection_gbps()


def test_unknown_switch_name_suggests_the_closest() -> None:
    _plan, topo = _seed()
    with pytest.raises(errors.UnknownNameError) as info:
        topo.remove_link("leaf-su00-r9", "spine-00")
    assert info.value.suggestion is not None
