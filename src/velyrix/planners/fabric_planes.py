"""Storage and management planes of a cluster's network (pure; used by ``planners.fabric``).

Storage plane (REFERENCE §1): a separate fabric so checkpoint writes never meet the all-reduce. Node
leaves run 4:3 (down:up) at the nodes, storage-facing ports 1:1. It is sized for a read bandwidth target:
the storage plan's when given, else SuperPOD's "better" guidance (40 GB/s read per 32-node SU, 8 GB/s
for a single node).

Management plane: out-of-band 1G (SN2201) for BMCs, switch management ports and PDUs; in-band 100G
Ethernet (SN4600C) for provisioning and the control plane; a jump host; dual-homed 100G egress.
"""

from __future__ import annotations

import math
from typing import Any

from velyrix import catalog, units
from velyrix.catalog import records
from velyrix.frozen import frozen

BETTER_READ_GB_S_PER_SU = 40.0  # REFERENCE §1 (H100 RA Table 6): 32-node SU read, "better"
BETTER_READ_GB_S_SINGLE_NODE = 8.0  # REFERENCE §1: single node read, "better"
GUIDANCE_SU_NODES = 32  # REFERENCE §1: the guidance is per 32-node SU
STORAGE_NODE_RATIO = (4, 3)  # REFERENCE §1: storage links ~4:3 oversubscribed at the nodes

OOB_SWITCH = "sn2201"
INBAND_SWITCH = "sn4600c"
INBAND_LEAF_DOWN = 48  # design choice: 48 of 64 x 100G down, 16 up (3:1) for provisioning/control traffic
NODES_PER_RACK = 4  # NVIDIA DGX SuperPOD H100 RA: 4 DGX systems per compute rack (~40 kW)
PDUS_PER_RACK = 2  # A and B power feeds
SWITCHES_PER_NETWORK_RACK = 16  # assumption: 1-2U switches, 16 per network rack with cable management
CONTROL_HOSTS = 3  # Velyrix control plane / scheduler controllers (quorum of 3)
SUBNET_MANAGER_HOSTS = 2  # InfiniBand subnet manager + SHARP aggregation manager, active/standby
EGRESS_SWITCHES = 2  # dual-homed: two border switches, each to a different upstream
EGRESS_UPLINK_GBPS = 100


@frozen
class StoragePlane:
    """A separate storage fabric: node leaves (4:3), storage leaves (1:1) and spines."""

    switch_model: str
    link_gbps: int
    radix: int
    node_links: int
    node_leaves: int
    node_leaf_down: int
    node_leaf_up: int
    storage_ports: int
    storage_leaves: int
    spines: int
    target_read_gb_s: float
    target_source: str
    node_bandwidth_gb_s: float
    deliverable_gb_s: float
    notes: tuple[str, ...] = ()

    @property
    def switches_total(self) -> int:
        return self.node_leaves + self.storage_leaves + self.spines

    @property
    def oversubscription(self) -> float:
        return self.node_leaf_down / self.node_leaf_up if self.spines else 1.0

    def to_dict(self) -> dict[str, Any]:
        up = self.node_leaves * self.node_leaf_up + self.storage_leaves * (self.radix // 2) if self.spines else 0
        return {
            "switch_model": self.switch_model,
            "link_gbps": self.link_gbps,
            "radix": self.radix,
            "switches": self.switches_total,
            "switches_by_role": {
                "node_leaf": self.node_leaves,
                "storage_leaf": self.storage_leaves,
                "spine": self.spines,
            },
            "node_links": self.node_links,
            "storage_ports": self.storage_ports,
            "cables": {"node_leaf": self.node_links, "storage_leaf": self.storage_ports, "leaf_spine": up},
            "oversubscription": round(self.oversubscription, 3),
            "node_leaf_ports": {"down": self.node_leaf_down, "up": self.node_leaf_up},
            "target_read_gb_s": self.target_read_gb_s,
            "target_source": self.target_source,
            "node_bandwidth_gb_s": self.node_bandwidth_gb_s,
            "deliverable_gb_s": self.deliverable_gb_s,
            "notes": list(self.notes),
        }


@frozen
class ManagementPlane:
    """Out-of-band 1G, in-band 100G, jump host and egress."""

    oob_switch_model: str
    oob_switches: int
    oob_ports: int
    inband_switch_model: str
    inband_leaves: int
    inband_spines: int
    inband_ports: int
    egress_switches: int
    egress_uplinks_gbps: tuple[int, ...]
    jump_hosts: int
    racks: int
    pdus: int

    @property
    def switches_total(self) -> int:
        return self.oob_switches + self.inband_leaves + self.inband_spines + self.egress_switches

    def to_dict(self) -> dict[str, Any]:
        return {
            "switches": self.switches_total,
            "out_of_band": {
                "switch_model": self.oob_switch_model,
                "switches": self.oob_switches,
                "ports_used": self.oob_ports,
                "link_gbps": 1,
                "serves": ["node BMCs", "switch management ports", "PDUs", "jump host"],
            },
            "in_band": {
                "switch_model": self.inband_switch_model,
                "leaves": self.inband_leaves,
                "spines": self.inband_spines,
                "ports_used": self.inband_ports,
                "link_gbps": 100,
            },
            "jump_hosts": self.jump_hosts,
            "egress": {
                "switch_model": self.inband_switch_model,
                "switches": self.egress_switches,
                "uplinks_gbps": list(self.egress_uplinks_gbps),
                "dual_homed": True,
            },
            "racks": self.racks,
            "pdus": self.pdus,
        }


def storage_guidance_gb_s(nodes: int) -> float:
    """REFERENCE §1 "better" read target in GB/s for ``nodes`` nodes (linear per 32-node SU)."""
    return max(BETTER_READ_GB_S_SINGLE_NODE, BETTER_READ_GB_S_PER_SU * nodes / GUIDANCE_SU_NODES)


def plan_storage_plane(
    nt: records.NodeType, nodes: int, fab: records.Fabric, target_gb_s: float | None
) -> StoragePlane:
    """Size the storage fabric for ``nodes`` of ``nt`` and an aggregate read target in GB/s."""
    sw = catalog.switch(fab.storage_switch)
    link = min(nt.storage_nic_gbps, sw.port_gbps)
    radix = sw.radix_at(link)
    source = "storage plan"
    if target_gb_s is None:
        target_gb_s, source = storage_guidance_gb_s(nodes), "REFERENCE §1 SuperPOD 'better' read guidance"
    node_links = nodes * nt.storage_nics
    node_bw = units.gbps_to_gb_s(node_links * link)
    notes = []
    if target_gb_s > node_bw:
        notes.append(f"target {target_gb_s:,.0f} GB/s exceeds the nodes' storage NICs ({node_bw:,.0f} GB/s)")
    storage_ports = math.ceil(units.gb_s_to_gbps(min(target_gb_s, node_bw)) / link)
    if node_links + storage_ports <= radix:
        return StoragePlane(
            sw.name,
            link,
            radix,
            node_links,
            1,
            node_links,
            0,
            storage_ports,
            0,
            0,
            target_gb_s,
            source,
            node_bw,
            units.gbps_to_gb_s(min(node_links, storage_ports) * link),
            tuple(notes),
        )
    m = radix // sum(STORAGE_NODE_RATIO)
    down, up = STORAGE_NODE_RATIO[0] * m, STORAGE_NODE_RATIO[1] * m
    node_leaves = math.ceil(node_links / down)
    storage_leaves = math.ceil(storage_ports / (radix // 2))
    spines = math.ceil((node_leaves * up + storage_leaves * (radix // 2)) / radix)
    if spines > up:
        notes.append(
            f"{spines} storage spines exceed the {up} uplinks of a node leaf: the storage plane "
            "needs a third tier at this size (switch counts here are the two-tier lower bound)"
        )
    uplink_bw = units.gbps_to_gb_s(min(node_links, node_leaves * up) * link)
    deliverable = min(node_bw, uplink_bw, units.gbps_to_gb_s(storage_ports * link))
    return StoragePlane(
        sw.name,
        link,
        radix,
        node_links,
        node_leaves,
        down,
        up,
        storage_ports,
        storage_leaves,
        spines,
        target_gb_s,
        source,
        node_bw,
        deliverable,
        tuple(notes),
    )


def plan_management_plane(nt: records.NodeType, nodes: int, *, switches: int, infiniband: bool) -> ManagementPlane:
    """Management plane for ``nodes`` servers and ``switches`` compute + storage switches."""
    oob, inband = catalog.switch(OOB_SWITCH), catalog.switch(INBAND_SWITCH)
    hosts = CONTROL_HOSTS + (SUBNET_MANAGER_HOSTS if infiniband else 0) + 1  # + jump host
    inband_ports = nodes + hosts + EGRESS_SWITCHES * 2  # egress switches attach with 2 links each
    inband_leaves = math.ceil(inband_ports / INBAND_LEAF_DOWN)
    inband_spines = 2 if inband_leaves > 1 else 0
    racks = math.ceil(nodes / NODES_PER_RACK) + math.ceil(
        (switches + inband_leaves + inband_spines + EGRESS_SWITCHES) / SWITCHES_PER_NETWORK_RACK
    )
    pdus = PDUS_PER_RACK * racks
    # OOB ports: BMCs of nodes and hosts, management ports of every switch (OOB ones excepted), PDUs.
    base = nodes + hosts + switches + inband_leaves + inband_spines + EGRESS_SWITCHES + pdus
    oob_switches = math.ceil(base / oob.ports)
    return ManagementPlane(
        oob.name,
        oob_switches,
        base,
        inband.name,
        inband_leaves,
        inband_spines,
        inband_ports,
        EGRESS_SWITCHES,
        (EGRESS_UPLINK_GBPS,) * EGRESS_SWITCHES,
        1,
        racks,
        pdus,
    )
