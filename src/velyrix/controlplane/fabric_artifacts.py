"""A cluster's fabric configuration as delivered artifacts: rendered from what the control plane holds (the
cluster's VLAN, VRF and partition key or VNI in ``network_allocations``, its nodes' inventories) by
``velyrix.planners.fabric_config``, applied through the fleet's network driver when the cluster's networks
are attached, removed when they are released, and served at ``GET /v1/clusters/{id}/fabric``.

Ports: on an InfiniBand fabric every compute NIC is an end port of the partition, its GUID the EUI-64 of the
port's MAC (``fabric_config.eui64_guid``); on Spectrum-X every compute NIC is a switch port of its rail leaf
(the node's position: ``hardware.Position.leaf_ports``). Storage NIC ``k`` of the node in slot ``s`` of SU
``u`` is cabled to port ``s + 1`` of storage leaf ``stor-su<u>-leaf<k>`` (the twin's cabling rule, the
same fill order as the rails in ``velyrix.fleet.topology``).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import catalog, errors
from velyrix.controlplane import status
from velyrix.controlplane.db import models
from velyrix.fleet import hardware, states
from velyrix.planners import fabric_config as fc

ACTOR = "reconciler/fabric"


def members(session: orm.Session, cluster: models.Cluster) -> list[models.Node]:
    """The cluster's nodes that carry its networks (being provisioned or delivered), by name."""
    return list(
        session.scalars(
            sa.select(models.Node)
            .where(
                models.Node.cluster_id == cluster.id,
                models.Node.provisioning_state.in_([states.PROVISIONING, states.ACTIVE]),
            )
            .order_by(models.Node.name)
        )
    )


def _ports(node: models.Node, ethernet_compute: bool) -> tuple[list[fc.IbPort], list[fc.EthPort]]:
    inv = hardware.StoredHardware.from_dict(node.hardware).inventory
    if inv is None:
        raise errors.ConflictError(f"node {node.name} has no inventory: its ports are not known")
    pos = inv.position
    leaf = {lp.rail: lp for lp in pos.leaf_ports} if pos else {}
    ib: list[fc.IbPort] = []
    eth: list[fc.EthPort] = []
    storage = [n for n in inv.nics if n.role == "storage"]
    for nic in inv.nics:
        if nic.role == "compute" and not ethernet_compute:
            ib.append(fc.IbPort(node.name, nic.device, fc.eui64_guid(nic.mac)))
        elif nic.role == "compute" and nic.rail in leaf:
            lp = leaf[nic.rail]
            eth.append(fc.EthPort(node.name, nic.device, nic.mac, lp.leaf, lp.port, "compute"))
    for k, nic in enumerate(storage):
        if pos is not None:
            eth.append(
                fc.EthPort(node.name, nic.device, nic.mac, f"stor-su{pos.su:02d}-leaf{k}", pos.slot + 1, "storage")
            )
    return ib, eth


def tenant_fabric(session: orm.Session, cluster: models.Cluster) -> fc.TenantFabric:
    """What the cluster's configuration is made of; ``NotFoundError`` before its networks are allocated."""
    rows = {
        r.kind: r.value
        for r in session.scalars(
            sa.select(models.NetworkAllocation).where(models.NetworkAllocation.cluster_id == cluster.id)
        )
    }
    if "vlan" not in rows:
        raise errors.NotFoundError(
            f"cluster '{cluster.name}' has no networks yet (phase {cluster.phase})",
            hint="the fabric configuration exists from the Networking phase on",
        )
    name = (cluster.spec or {}).get("fabric")
    ethernet = bool(name) and catalog.fabric(name).protocol == "ethernet"
    ib: list[fc.IbPort] = []
    eth: list[fc.EthPort] = []
    for node in members(session, cluster):
        i, e = _ports(node, ethernet)
        ib += i
        eth += e
    return fc.TenantFabric(
        cluster=cluster.name,
        vlan=rows["vlan"],
        vrf=f"vrf-{cluster.tenant_id}-{cluster.name}",
        pkey=rows.get("pkey"),
        vni=rows.get("vni"),
        ib_ports=tuple(ib),
        eth_ports=tuple(eth),
    )


def render(session: orm.Session, cluster: models.Cluster) -> dict[str, Any]:
    """The cluster's artifacts (``fabric_config.render``)."""
    return fc.render(tenant_fabric(session, cluster))


def render_for(scope: Any, cluster: models.Cluster) -> dict[str, Any]:
    """``render`` for the API: ``cluster`` was read through the tenant-scoped ``scope`` (``scoping.Scope``)."""
    return render(scope.session, cluster)


def deliver(session: orm.Session, cluster: models.Cluster, driver: Any) -> dict[str, Any] | None:
    """Apply the cluster's configuration through ``driver``'s network driver (None: the fleet has none, and
    the artifacts are only served); records an event on the cluster. Returns the network driver's record."""
    network = getattr(driver, "network", None)
    if network is None:
        return None
    try:
        config = render(session, cluster)
    except errors.VelyrixError as exc:  # e.g. a node without inventory: the networks stand, say what is missing
        status.add_event(cluster, "FabricConfigNotRendered", exc.message, "Warning")
        return None
    rec: dict[str, Any] = network.apply(cluster.id, config, request_id=f"{cluster.id}/fabric/{config['digest'][:16]}")
    s = config["summary"]
    isolation = f"partition {s['pkey']}" if s["pkey"] else f"VNI {s['vni']}"
    status.add_event(
        cluster,
        "FabricConfigured",
        f"{isolation}, VLAN {s['vlan']}: {s['ib_ports']} InfiniBand ports, Ethernet ports {s['ethernet_ports']} "
        f"(configuration {config['digest'][:12]})",
        "Normal",
    )
    return rec


def withdraw(cluster: models.Cluster, driver: Any) -> dict[str, Any] | None:
    """Take the cluster's configuration off the gear (when its networks are released)."""
    network = getattr(driver, "network", None)
    if network is None:
        return None
    rec: dict[str, Any] = network.remove(cluster.id, request_id=f"{cluster.id}/fabric/remove")
    return rec
