"""Compute-fabric planner: a rail-optimized, folded-Clos fat tree with 2 or 3 tiers (REFERENCE §1).

Pure: node type + node count + fabric (+ oversubscription, SHARP) → ``FabricPlan`` with the compute,
storage and management planes. The layout rules, all derived from NVIDIA's SuperPOD reference rows:

* Every switch runs at the GPU link speed ``min(NIC, fabric link)``; its radix ``k`` is the port count at
  that speed (``Switch.radix_at``: the SN5600 splits to 128 x 400G; the Q3400 has no 2 x 400G breakout in
  our sources, so a 400G NIC takes one of its 144 ports).
* A leaf has ``d`` ports down and ``u`` up with ``d / u`` = oversubscription (32/32 at 1:1 on 64 ports).
  A scalable unit (SU) is ``d`` nodes and one leaf per rail: NIC ``r`` of node ``i`` lands on port
  ``i % d + 1`` of rail-leaf ``r`` of SU ``i // d``. The last SU is cabled whole even when partial.
* 2 tiers: every leaf spreads its ``u`` uplinks evenly over ``S`` spines, ``S`` the smallest divisor of
  ``u`` with ``S * k >= leaves * u``. Fits while ``leaves <= k`` (k^2/2 endpoints at 1:1).
* 3 tiers: pods of ``k/2`` leaves, each pod with its own spines (same divisor rule, ``k/2`` ports down,
  a partial last pod gets a whole pod's spines and core uplinks, so it grows without recabling the core);
  spine ``j`` of every pod spreads ``k/2`` uplinks over core group ``j`` of ``c`` cores, ``c`` the smallest
  divisor of ``k/2`` with ``c >= pods/2``. Fits while ``pods <= k`` (k^3/4 endpoints at 1:1). With full
  pods this is NVIDIA's leaves = spines = G/(k/2), cores = G/k.
"""

from __future__ import annotations

import math
from dataclasses import field
from typing import Any

from velyrix import catalog, errors
from velyrix.frozen import frozen
from velyrix.planners import fabric_planes

PKEY_FIRST = 0x0001  # REFERENCE §1: 15-bit partition keys, 0x0001-0x7ffe usable
PKEY_LAST = 0x7FFE
PKEY_DEFAULT = 0x7FFF  # REFERENCE §1: the default partition
PKEYS_PER_PORT_MAX = 128  # REFERENCE §1: a ConnectX port holds at most 128 PKeys
VNI_FIRST = 10_000  # Ethernet fabrics isolate tenants by VXLAN VNI (24 bits, RFC 7348 §5); lower ones: provider
VNI_LAST = 0xFFFFFF


@frozen
class Pod:
    """A group of leaves sharing spines (the whole fabric is one pod in 2 tiers)."""

    index: int
    first_su: int
    sus: int
    leaves: int
    spines: int
    links_per_leaf_spine: int


@frozen
class ComputePlane:
    """The GPU fabric: tiers, switch counts, cabling multiplicities and derived bills of material."""

    tiers: int
    switch_model: str
    radix: int
    link_gbps: int
    rails: int
    su_nodes: int
    scalable_units: int
    cabled_nodes: int
    leaf_down: int
    leaf_up: int
    pods: tuple[Pod, ...]
    core_groups: int = 0
    cores_per_group: int = 0
    links_per_spine_core: int = 0
    sharp: dict[str, Any] = field(default_factory=dict)
    isolation: dict[str, Any] = field(default_factory=dict)

    @property
    def leaves(self) -> int:
        return self.scalable_units * self.rails

    @property
    def spines(self) -> int:
        return sum(p.spines for p in self.pods)

    @property
    def cores(self) -> int:
        return self.core_groups * self.cores_per_group

    @property
    def spine_up(self) -> int:
        """Uplinks per spine (k/2 in 3 tiers, none in 2)."""
        return self.radix // 2 if self.tiers == 3 else 0

    def cables(self) -> dict[str, int]:
        """Cables per tier: node-leaf (whole SUs), leaf-spine and spine-core."""
        return {
            "node_leaf": self.cabled_nodes * self.rails,
            "leaf_spine": self.leaves * self.leaf_up,
            "spine_core": self.spines * self.spine_up,
        }

    def ports(self) -> dict[str, dict[str, int]]:
        """Ports per tier: per-switch radix, used (max over switches), free in total."""
        leaf_used = self.leaf_down + self.leaf_up
        spine_used = [p.leaves * p.links_per_leaf_spine + self.spine_up for p in self.pods for _ in range(p.spines)]
        core_used = [self._core_ports_used(g) for g in range(self.core_groups) for _ in range(self.cores_per_group)]
        out = {
            "leaf": {
                "per_switch": self.radix,
                "used_max": leaf_used,
                "free_total": self.leaves * (self.radix - leaf_used),
            },
            "spine": {
                "per_switch": self.radix,
                "used_max": max(spine_used, default=0),
                "free_total": sum(self.radix - u for u in spine_used),
            },
        }
        if self.tiers == 3:
            out["core"] = {
                "per_switch": self.radix,
                "used_max": max(core_used, default=0),
                "free_total": sum(self.radix - u for u in core_used),
            }
        return out

    def _core_ports_used(self, group: int) -> int:
        return sum(1 for p in self.pods if p.spines > group) * self.links_per_spine_core

    def transceivers(self) -> dict[str, int]:
        """Optics: one per NIC on the nodes; switch side one per cage used (twin-port cages)."""
        sw = catalog.switch(self.switch_model)
        per_cage = max(1, self.radix // sw.cages) if sw.cages else 1
        switch_side = self.leaves * math.ceil((self.leaf_down + self.leaf_up) / per_cage)
        for p in self.pods:
            switch_side += p.spines * math.ceil((p.leaves * p.links_per_leaf_spine + self.spine_up) / per_cage)
        for g in range(self.core_groups):
            switch_side += self.cores_per_group * math.ceil(self._core_ports_used(g) / per_cage)
        return {"node_side": self.cabled_nodes * self.rails, "switch_side": switch_side}

    def pod_of_su(self, su: int) -> Pod:
        for p in self.pods:
            if p.first_su <= su < p.first_su + p.sus:
                return p
        raise errors.InvalidInputError(f"scalable unit {su} is outside the fabric (0-{self.scalable_units - 1})")


@frozen
class FabricPlan:
    """The three planes of one cluster's network. ``to_dict()`` is the JSON shape of docs/plan-schema.md."""

    node_type: str
    fabric: str
    nodes: int
    gpus: int
    oversubscription: float
    compute: ComputePlane
    storage_plane: fabric_planes.StoragePlane
    management_plane: fabric_planes.ManagementPlane

    @property
    def su_nodes(self) -> int:
        return self.compute.su_nodes

    def bisection_gbps(self) -> int:
        """Design bisection: the smaller half of the nodes' NICs at link speed, divided by oversubscription."""
        half = self.nodes // 2
        return int(half * self.compute.rails * self.compute.link_gbps / self.oversubscription)

    # --- names and the rail map (the contract other helpers use) ---
    def leaf_name(self, su: int, rail: int) -> str:
        return f"leaf-su{su:02d}-r{rail}"

    def spine_name(self, pod: int, j: int) -> str:
        return f"spine-{j:02d}" if self.compute.tiers == 2 else f"spine-p{pod:02d}-{j:02d}"

    def core_name(self, group: int, c: int) -> str:
        return f"core-g{group:02d}-{c:02d}"

    def nic_port(self, node_index: int, rail: int) -> tuple[str, int]:
        """Where NIC ``rail`` of node ``node_index`` (0-based) lands: (leaf name, 1-based leaf port)."""
        if not 0 <= node_index < self.nodes or not 0 <= rail < self.compute.rails:
            raise errors.InvalidInputError(
                f"node {node_index} NIC {rail} is outside the plan ({self.nodes} nodes x {self.compute.rails} NICs)"
            )
        su, slot = divmod(node_index, self.compute.su_nodes)
        return self.leaf_name(su, rail), slot + 1

    def to_dict(self) -> dict[str, Any]:
        c = self.compute
        compute: dict[str, Any] = {
            "tiers": c.tiers,
            "scalable_units": c.scalable_units,
            "su_nodes": c.su_nodes,
            "cabled_nodes": c.cabled_nodes,
            "switch_model": c.switch_model,
            "radix": c.radix,
            "link_gbps": c.link_gbps,
            "rails": c.rails,
            "oversubscription": self.oversubscription,
            "leaf_ports": {"down": c.leaf_down, "up": c.leaf_up},
            "switches": {"leaf": c.leaves, "spine": c.spines, "core": c.cores, "total": c.leaves + c.spines + c.cores},
            "cables": c.cables(),
            "transceivers": c.transceivers(),
            "ports": c.ports(),
            "bisection_gbps": self.bisection_gbps(),
            "rail_map": {
                "rule": "NIC r of node i -> port (i % su_nodes) + 1 of leaf-su{i // su_nodes}-r{r}",
                "scalable_units": [
                    {"su": s, "first_node": s * c.su_nodes, "leaves": [self.leaf_name(s, r) for r in range(c.rails)]}
                    for s in range(c.scalable_units)
                ],
            },
            "layout": {
                "pods": [
                    {
                        "pod": p.index,
                        "first_su": p.first_su,
                        "sus": p.sus,
                        "leaves": p.leaves,
                        "spines": p.spines,
                        "links_per_leaf_spine": p.links_per_leaf_spine,
                    }
                    for p in c.pods
                ],
                "core_groups": c.core_groups,
                "cores_per_group": c.cores_per_group,
                "links_per_spine_core": c.links_per_spine_core,
            },
            "sharp": c.sharp,
            "isolation": c.isolation,
        }
        return {
            "node_type": self.node_type,
            "fabric": self.fabric,
            "nodes": self.nodes,
            "gpus": self.gpus,
            "compute": compute,
            "storage_plane": self.storage_plane.to_dict(),
            "management_plane": self.management_plane.to_dict(),
        }


def _smallest_divisor_at_least(n: int, at_least: int) -> int | None:
    for d in range(max(1, at_least), n + 1):
        if n % d == 0:
            return d
    return None


def leaf_ports(radix: int, oversubscription: float) -> tuple[int, int]:
    """(down, up) ports per leaf for a down:up ratio of ``oversubscription`` (32/32 on 64 ports at 1:1)."""
    if oversubscription <= 1.0:
        return radix // 2, radix // 2
    down = int(radix * oversubscription / (1.0 + oversubscription))
    return down, radix - down


def _pods(sus: int, sus_per_pod: int, rails: int, up: int, spine_down: int) -> tuple[Pod, ...] | None:
    """Pods of ``sus_per_pod`` SUs. A partial last pod gets the spines of a whole pod: its spine j must
    reach core group j like every other pod's, or the cores of the groups it lacks carry more than
    their share (the bisection max-flow of 9 SUs on 64 ports finds exactly that)."""
    pods = []
    for index, first in enumerate(range(0, sus, sus_per_pod)):
        n_sus = min(sus_per_pod, sus - first)
        leaves = n_sus * rails
        spines = _smallest_divisor_at_least(up, math.ceil(sus_per_pod * rails * up / spine_down))
        if spines is None:
            return None
        pods.append(Pod(index, first, n_sus, leaves, spines, up // spines))
    return tuple(pods)


def max_endpoints(node_type: str, fabric: str, oversubscription: float = 1.0) -> tuple[int, int]:
    """(2-tier, 3-tier) maximum NIC endpoints for this node type on this fabric, with whole SUs."""
    radix, _link, rails = _radix_link_rails(node_type, fabric)
    down, _up = leaf_ports(radix, oversubscription)
    sus_2 = radix // rails
    sus_per_pod = max(1, (radix // 2) // rails)
    return sus_2 * down * rails, radix * sus_per_pod * down * rails


def _radix_link_rails(node_type: str, fabric: str) -> tuple[int, int, int]:
    nt, fab = catalog.node_type(node_type), catalog.fabric(fabric)
    link = min(nt.compute_nic_gbps, fab.link_gbps)
    return catalog.switch(fab.switch).radix_at(link), link, nt.compute_nics


def plan_compute(
    node_type: str, node_count: int, fabric: str, *, oversubscription: float = 1.0, sharp: bool = True
) -> ComputePlane:
    """The compute plane alone (see the module docstring for the rules). Raises ``CapacityError`` beyond
    what the fabric builds at this oversubscription, naming the limit and the options."""
    fab = catalog.fabric(fabric)
    sw = catalog.switch(fab.switch)
    radix, link, rails = _radix_link_rails(node_type, fabric)
    down, up = leaf_ports(radix, oversubscription)
    sus = math.ceil(node_count / down)
    leaves = sus * rails
    tiers = 2
    pods = _pods(sus, sus, rails, up, radix) if leaves <= radix else None
    core_groups = cores_per_group = links_per_spine_core = 0
    if pods is None:
        tiers = 3
        sus_per_pod = max(1, (radix // 2) // rails)
        pods = _pods(sus, sus_per_pod, rails, up, radix // 2)
        n_pods = len(pods) if pods else 0
        cpg = _smallest_divisor_at_least(radix // 2, math.ceil(n_pods / 2)) if pods else None
        if pods is None or cpg is None:
            raise _too_big(node_type, node_count, fabric, oversubscription)
        core_groups, cores_per_group = pods[0].spines, cpg
        links_per_spine_core = (radix // 2) // cpg
    sharp_on = bool(sharp and fab.sharp and sw.sharp)
    sharp_info: dict[str, Any] = {"enabled": sharp_on}
    if sharp_on:
        trees_max = sw.sharp_trees_max
        sharp_info.update(
            {
                "trees_per_subnet_max": trees_max,
                "trees_per_job": rails,
                "concurrent_multi_rail_jobs_max": trees_max // rails,
                "tree_levels": tiers,
                "tree_root_tier": "spine" if tiers == 2 else "core",
                "aggregation_manager": {"hosts": 2, "placement": "with the subnet managers (active/standby)"},
                "reservations": "one SHARP reservation per tenant partition key",
            }
        )
    else:
        sharp_info["reason"] = "disabled by request" if not sharp else f"{fabric} has no in-network reduction"
    if fab.protocol == "infiniband":
        usable = PKEY_LAST - PKEY_FIRST + 1
        isolation: dict[str, Any] = {
            "mechanism": "pkey",
            "range": f"0x{PKEY_FIRST:04x}-0x{PKEY_LAST:04x}",
            "usable": usable,
            "default": f"0x{PKEY_DEFAULT:04x}",
            "per_port_max": PKEYS_PER_PORT_MAX,
            "per_port_planned": 2,
            "tenants_max": min(usable, node_count),
        }
    else:
        isolation = {
            "mechanism": "vlan_vni",
            "vni_range": f"{VNI_FIRST}-{VNI_LAST}",
            "per_port_planned": 1,
            "tenants_max": node_count,
        }
    return ComputePlane(
        tiers=tiers,
        switch_model=sw.name,
        radix=radix,
        link_gbps=link,
        rails=rails,
        su_nodes=down,
        scalable_units=sus,
        cabled_nodes=sus * down,
        leaf_down=down,
        leaf_up=up,
        pods=pods,
        core_groups=core_groups,
        cores_per_group=cores_per_group,
        links_per_spine_core=links_per_spine_core,
        sharp=sharp_info,
        isolation=isolation,
    )


def _too_big(node_type: str, node_count: int, fabric: str, oversubscription: float) -> errors.CapacityError:
    nt = catalog.node_type(node_type)
    two, three = max_endpoints(node_type, fabric, oversubscription)
    radix, link, _ = _radix_link_rails(node_type, fabric)
    options = []
    for other in nt.fabrics:
        if other != fabric:
            cap = max_endpoints(node_type, other, oversubscription)[1]
            if cap >= node_count * nt.compute_nics:
                options.append(f"fabric '{other}' (up to {cap:,} GPUs)")
    for ratio in (2.0, 3.0):
        if ratio > oversubscription and max_endpoints(node_type, fabric, ratio)[1] >= node_count * nt.compute_nics:
            options.append(f"--oversubscription {ratio:g} (up to {max_endpoints(node_type, fabric, ratio)[1]:,} GPUs)")
            break
    options.append("several smaller clusters")
    return errors.CapacityError(
        f"{node_count:,} x {node_type} ({node_count * nt.compute_nics:,} GPUs) exceed what {fabric} builds at "
        f"{oversubscription:g}:1: {radix}-port switches at {link}G hold {two:,} GPUs in 2 tiers and {three:,} in 3",
        hint="options: " + "; ".join(options),
        limit_gpus=three,
        fabric=fabric,
    )


def plan_fabric(
    node_type: str,
    node_count: int,
    fabric: str,
    *,
    oversubscription: float = 1.0,
    sharp: bool = True,
    storage_target_gb_s: float | None = None,
) -> FabricPlan:
    """Plan the three network planes of ``node_count`` nodes of ``node_type`` on ``fabric``.

    ``oversubscription`` is the leaves' down:up ratio (1.0 = non-blocking); ``storage_target_gb_s`` the
    aggregate storage read bandwidth in GB/s to size the storage plane for (REFERENCE §1 "better" guidance
    when None). Raises ``UnknownNameError``, ``InvalidInputError`` or ``CapacityError``.
    """
    nt = catalog.node_type(node_type)
    catalog.fabric(fabric)
    if fabric not in nt.fabrics:
        raise errors.InvalidInputError(
            f"node type {node_type} is not sold on fabric '{fabric}'",
            hint=f"valid for {node_type}: {', '.join(nt.fabrics)}",
        )
    if isinstance(node_count, bool) or not isinstance(node_count, int) or node_count < 1:
        raise errors.InvalidInputError(f"node count must be a whole number >= 1, got {node_count!r}")
    if not 1.0 <= oversubscription <= 8.0:
        raise errors.InvalidInputError(
            f"oversubscription must be between 1 and 8 (down:up), got {oversubscription}",
            hint="1.0 is non-blocking; 2.0 means twice as many ports down as up",
        )
    if storage_target_gb_s is not None and storage_target_gb_s <= 0:
        raise errors.InvalidInputError(f"storage target must be > 0 GB/s, got {storage_target_gb_s}")
    compute = plan_compute(node_type, node_count, fabric, oversubscription=oversubscription, sharp=sharp)
    switch_count = compute.leaves + compute.spines + compute.cores
    storage = fabric_planes.plan_storage_plane(nt, node_count, catalog.fabric(fabric), storage_target_gb_s)
    management = fabric_planes.plan_management_plane(
        nt,
        node_count,
        switches=switch_count + storage.switches_total,
        infiniband=catalog.fabric(fabric).protocol == "infiniband",
    )
    return FabricPlan(
        node_type=node_type,
        fabric=fabric,
        nodes=node_count,
        gpus=node_count * nt.gpus_per_node,
        oversubscription=oversubscription,
        compute=compute,
        storage_plane=storage,
        management_plane=management,
    )
