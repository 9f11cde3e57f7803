"""The integrity section of an acceptance report, beside (not inside) the test results: each node's
firmware evidence (versions and image digests against the signed manifest, Secure Boot state, as checked
by ``firmware.check`` at provisioning) and the isolation evidence (the cluster's VLAN, VRF and
InfiniBand partition key; every node held by this cluster of this tenant alone)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from velyrix.controlplane.db import models
from velyrix.fleet.drivers import base
from velyrix.fleet.hardware import StoredHardware


def _holds(evidence: Mapping[str, Any] | None) -> bool:
    if evidence is None:
        return False
    components = evidence["components"].values()
    return evidence["secure_boot"].get("enabled") is True and all(c["matches"] for c in components)


def section(cluster: models.Cluster, nodes: list[models.Node], network: base.NetworkAttachment) -> dict[str, Any]:
    """``{"firmware": {node: evidence}, "isolation": {...}}`` for the report of ``cluster``."""
    fw = {n.name: StoredHardware.from_dict(n.hardware).firmware_evidence for n in sorted(nodes, key=lambda n: n.name)}
    foreign = sorted(n.name for n in nodes if n.tenant_id != cluster.tenant_id or n.cluster_id != cluster.id)
    verified = all(_holds(e) for e in fw.values())
    return {
        "firmware": {"verified": verified, "nodes": fw},
        "isolation": {
            "vlan": network.vlan,
            "vrf": network.vrf,
            **({"partition_key": f"{network.pkey:#06x}"} if network.pkey is not None else {"vni": network.vni}),
            "single_tenant": not foreign,
            "nodes_of_other_holders": foreign,
        },
    }
