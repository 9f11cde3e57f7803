"""Where nodes sit in the compute fabric: scalable unit, rack, and the rail-leaf port of each NIC.

Contract with the fabric planner (BRIEF): node i (0-based) sits in scalable unit ``i // su_nodes`` and its
compute NIC r lands on rail-leaf r of that SU. ``leaf_ports`` follows that rule and names leaves the way the
fabric planner does when ``velyrix.planners.fabric`` provides ``leaf_name`` (the seam below); otherwise
``su{SU:02d}-leaf{rail}``.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable

from velyrix.fleet import hardware

NODES_PER_RACK = 4
"""HGX/DGX H100/H200 systems per rack in the SuperPOD reference layout (~40 kW racks; RA-11333-001)."""


@functools.cache
def _leaf_namer() -> Callable[[int, int], str]:
    # Seam: the fabric planner owns leaf naming once it exists; until then use the documented default.
    try:
        fabric = importlib.import_module("velyrix.planners.fabric")
    except ImportError:
        fabric = None
    namer = getattr(fabric, "leaf_name", None) if fabric is not None else None
    if callable(namer):
        return namer  # type: ignore[no-any-return]
    return lambda su, rail: f"su{su:02d}-leaf{rail}"


def scalable_unit(index: int, su_nodes: int = 32) -> int:
    """The scalable unit of node ``index`` (0-based): ``index // su_nodes`` (REFERENCE §1)."""
    return index // su_nodes


def position(region: str, index: int, compute_nics: int, su_nodes: int = 32) -> hardware.Position:
    """Physical position of the ``index``-th node (0-based) of a region's node type.

    Each compute NIC r goes to rail-leaf r of the node's SU on downlink port ``slot + 1``.
    """
    su, slot = divmod(index, su_nodes)
    name = _leaf_namer()
    ports = tuple(hardware.LeafPort(rail=r, leaf=name(su, r), port=slot + 1) for r in range(compute_nics))
    return hardware.Position(region=region, su=su, rack=f"su{su:02d}-r{slot // NODES_PER_RACK:02d}", slot=slot,
                             leaf_ports=ports)
