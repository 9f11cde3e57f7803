"""Where nodes sit in the compute fabric: scalable unit, rack, and the rail-leaf port of each NIC.

The fabric planner owns the cabling rule (planners/fabric.py): node i (0-based) sits in scalable unit
``i // su_nodes`` and its compute NIC r lands on port ``i % su_nodes + 1`` of rail-leaf r of that SU.
``fabric_plan`` asks ``velyrix.planners.fabric.plan_fabric`` for the plan of a region's nodes of one type on
the type's first fabric, and ``position`` reads leaf names and ports from it (``FabricPlan.nic_port``). Where
no plan can be made, the same rule is applied with the region's SU size and the planner's leaf names.
"""

from __future__ import annotations

import functools
from typing import Any

from velyrix import catalog, errors
from velyrix.fleet import hardware
from velyrix.planners import fabric_planes


@functools.cache
def fabric_plan(node_type: str, node_count: int) -> Any | None:
    """The fabric plan cabling ``node_count`` nodes of ``node_type`` on its first catalog fabric, or None
    when the planner cannot plan it (the fallback rule then applies)."""
    from velyrix.planners import fabric

    nt = catalog.node_type(node_type)
    if node_count < 1 or not nt.fabrics:
        return None
    try:
        return fabric.plan_fabric(node_type, node_count, nt.fabrics[0])
    except errors.VelyrixError:
        return None


def position(
    region: str, index: int, compute_nics: int, su_nodes: int = 32, plan: Any | None = None
) -> hardware.Position:
    """Physical position of the ``index``-th node (0-based) of a region's node type, from ``plan`` (a
    ``FabricPlan``) when given, else from the rule with ``su_nodes`` per SU."""
    if plan is not None:
        su_nodes = int(plan.su_nodes)
    su, slot = divmod(index, su_nodes)
    ports = []
    for r in range(compute_nics):
        if plan is not None:
            leaf, port = plan.nic_port(index, r)
        else:
            leaf, port = f"leaf-su{su:02d}-r{r}", slot + 1
        ports.append(hardware.LeafPort(rail=r, leaf=leaf, port=port))
    rack = f"su{su:02d}-r{slot // fabric_planes.NODES_PER_RACK:02d}"  # racks of the planner's layout
    return hardware.Position(region=region, su=su, rack=rack, slot=slot, leaf_ports=tuple(ports), su_nodes=su_nodes)
