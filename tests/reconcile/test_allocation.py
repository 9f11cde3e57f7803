"""Topology-aware allocation (pure ``choose``): whole scalable units first, the rest packed tightly."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from velyrix.controlplane.reconcile.allocation import Candidate, choose
from velyrix.fleet import topology
from velyrix.fleet.drivers.sim import SimRegion


def fleet(sus: int, su_nodes: int = 32, taken: frozenset[tuple[int, int]] = frozenset()) -> list[Candidate]:
    return [
        Candidate(f"n{su:02d}-{slot:02d}", su, slot, su_nodes)
        for su in range(sus)
        for slot in range(su_nodes)
        if (su, slot) not in taken
    ]


def sus_of(names: list[str]) -> set[str]:
    return {n.split("-")[0] for n in names}


@given(sus=st.integers(1, 12), data=st.data())
@settings(max_examples=150, deadline=None)
def test_choose_returns_exactly_count_distinct_free_nodes(sus: int, data: st.DataObject) -> None:
    taken = frozenset(data.draw(st.sets(st.tuples(st.integers(0, sus - 1), st.integers(0, 31)), max_size=sus * 16)))
    free = fleet(sus, taken=taken)
    count = data.draw(st.integers(0, len(free)))
    chosen = choose(free, count)
    assert len(chosen) == count == len(set(chosen)) and set(chosen) <= {c.name for c in free}


@given(sus=st.integers(1, 12), count=st.integers(1, 384))
@settings(max_examples=150, deadline=None)
def test_on_an_empty_fleet_a_cluster_spans_the_fewest_scalable_units(sus: int, count: int) -> None:
    free = fleet(sus)
    if count > len(free):
        return
    assert len(sus_of(choose(free, count))) == math.ceil(count / 32)


def test_whole_free_units_come_before_partial_ones() -> None:
    taken = frozenset((0, s) for s in range(10))  # SU 0 is partly used by another tenant
    chosen = choose(fleet(3, taken=taken), 32)
    assert sus_of(chosen) == {"n01"}  # one whole SU: no leaf shared with the other tenant


def test_the_remainder_goes_where_it_fits_tightest() -> None:
    taken = frozenset({(0, s) for s in range(20)} | {(1, s) for s in range(4)})  # 12 free in SU0, 28 in SU1
    chosen = choose(fleet(3, taken=taken), 32 + 10)
    assert sus_of(chosen) == {"n02", "n00"}  # SU2 whole, the 10 into SU0's 12 free, SU1 stays big


def test_replacement_prefers_the_failed_nodes_unit() -> None:
    taken = frozenset((su, s) for su in range(3) for s in range(30))
    assert sus_of(choose(fleet(3, taken=taken), 1, near_su=1)) == {"n01"}


def test_twin_cabling_follows_the_fabric_plan() -> None:
    sim = SimRegion.build("us-east-1", {"hgx-h200-8g": 96}, seed=0)
    plan = topology.fabric_plan("hgx-h200-8g", 96)
    assert plan is not None
    for i, node in enumerate(sim.nodes.values()):
        assert node.position is not None
        assert [(lp.leaf, lp.port) for lp in node.position.leaf_ports] == [plan.nic_port(i, r) for r in range(8)]
