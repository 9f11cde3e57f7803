"""The compute fabric of a ``FabricPlan`` as an explicit cable list (a multigraph), for verification and
exports. Switches are indexed 0..W-1 (leaves, then spines, then cores); node NICs are (node, rail) pairs.

The topology is mutable on purpose: tests and as-built comparisons damage or edit it (``remove_link``,
``recable_nic``) and run ``fabric_verify.verify`` on the result.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from velyrix import errors
from velyrix.planners.fabric import FabricPlan


@dataclass
class Switch:
    """One switch vertex: role is leaf, spine or core; su/rail for leaves, pod for leaves and spines,
    group for spines (their core group) and cores."""

    name: str
    role: str
    radix: int
    pod: int = -1
    su: int = -1
    rail: int = -1
    group: int = -1
    reserved_ports: int = 0
    """Leaf ports cabled for nodes that are not there (the partial last SU is cabled whole)."""


@dataclass
class Topology:
    """Cables of the compute plane. ``nic_links``: one (node, rail, leaf index) per node cable;
    ``links``: (lower-tier switch, upper-tier switch) -> cable count."""

    nodes: int
    rails: int
    su_nodes: int
    link_gbps: int
    tiers: int
    leaf_up: int
    spine_up: int
    switches: list[Switch] = field(default_factory=list)
    nic_links: list[tuple[int, int, int]] = field(default_factory=list)
    links: dict[tuple[int, int], int] = field(default_factory=dict)
    _index: dict[str, int] = field(default_factory=dict, repr=False)

    def add_switch(self, sw: Switch) -> int:
        self._index[sw.name] = len(self.switches)
        self.switches.append(sw)
        return len(self.switches) - 1

    def index(self, name: str) -> int:
        """Switch index by name; unknown names raise ``UnknownNameError`` with the closest name."""
        if name not in self._index:
            raise errors.UnknownNameError("switch", name, self._index)
        return self._index[name]

    def remove_link(self, a: str, b: str, count: int = 1) -> None:
        """Remove ``count`` cables between switches ``a`` and ``b`` (either order)."""
        ia, ib = self.index(a), self.index(b)
        key = (ia, ib) if (ia, ib) in self.links else (ib, ia)
        if self.links.get(key, 0) < count:
            raise errors.InvalidInputError(f"no {count} cable(s) between {a} and {b}")
        self.links[key] -= count
        if not self.links[key]:
            del self.links[key]

    def recable_nic(self, node: int, rail: int, leaf: str) -> None:
        """Move the cable of NIC ``rail`` of ``node`` to ``leaf`` (a mis-cabling, or a repair)."""
        target = self.index(leaf)
        for i, (n, r, _) in enumerate(self.nic_links):
            if (n, r) == (node, rail):
                self.nic_links[i] = (n, r, target)
                return
        raise errors.InvalidInputError(f"node {node} NIC {rail} has no cable")

    def ports_used(self) -> list[int]:
        """Ports in use per switch (node cables, reserved ports, switch-switch cables)."""
        used = [sw.reserved_ports for sw in self.switches]
        for _, _, leaf in self.nic_links:
            used[leaf] += 1
        for (a, b), count in self.links.items():
            used[a] += count
            used[b] += count
        return used


def build_topology(plan: FabricPlan) -> Topology:
    """Cable the compute plane of ``plan`` exactly as designed (rail map, pods, core groups)."""
    c = plan.compute
    topo = Topology(
        nodes=plan.nodes,
        rails=c.rails,
        su_nodes=c.su_nodes,
        link_gbps=c.link_gbps,
        tiers=c.tiers,
        leaf_up=c.leaf_up,
        spine_up=c.spine_up,
    )
    leaf_of: dict[tuple[int, int], int] = {}
    for pod in c.pods:
        for su in range(pod.first_su, pod.first_su + pod.sus):
            present = min(c.su_nodes, max(0, plan.nodes - su * c.su_nodes))
            for rail in range(c.rails):
                leaf_of[su, rail] = topo.add_switch(
                    Switch(
                        plan.leaf_name(su, rail),
                        "leaf",
                        c.radix,
                        pod=pod.index,
                        su=su,
                        rail=rail,
                        reserved_ports=c.su_nodes - present,
                    )
                )
    spines_of: dict[int, list[int]] = {}
    for pod in c.pods:
        spines_of[pod.index] = [
            topo.add_switch(Switch(plan.spine_name(pod.index, j), "spine", c.radix, pod=pod.index, group=j))
            for j in range(pod.spines)
        ]
    cores_of = [
        [topo.add_switch(Switch(plan.core_name(g, i), "core", c.radix, group=g)) for i in range(c.cores_per_group)]
        for g in range(c.core_groups)
    ]
    # Leaves were added SU by SU, rail by rail: the leaf of (su, rail) has index su * rails + rail.
    assert all(leaf_of[su, r] == su * c.rails + r for su, r in leaf_of)
    d, rails = c.su_nodes, c.rails
    topo.nic_links = [(n, r, (n // d) * rails + r) for n in range(plan.nodes) for r in range(rails)]
    for pod in c.pods:
        first, last = pod.first_su * rails, (pod.first_su + pod.sus) * rails
        topo.links.update(
            {(leaf, spine): pod.links_per_leaf_spine for leaf in range(first, last) for spine in spines_of[pod.index]}
        )
        if c.tiers == 3:
            topo.links.update(
                {
                    (spine, core): c.links_per_spine_core
                    for j, spine in enumerate(spines_of[pod.index])
                    for core in cores_of[j]
                }
            )
    return topo
