"""The operator's fleet grid and capacity rows. Pure: it shapes node rows the routes read through the
provider's scope.

Inputs: node rows (``id``, ``name``, ``region``, ``node_type``, ``tenant_id``, ``provisioning_state``,
``fleet_stage``, ``hardware``: its ``position`` holds ``su``, ``rack`` and ``slot``,
``velyrix.fleet.hardware.Position``), tenant names by id and the nodes' last health levels by node id
(0 ok .. 3 fatal, ``velyrix.health.ladder.Level``). A node's *status* (its cell's colour and letter) is its
fleet stage when that takes it out of sale (burn-in, quarantined, RMA, retired), else its provisioning
state (``velyrix.fleet.states``). Nothing per GPU: one cell per node."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from velyrix.fleet import states

STATUS_LETTERS: dict[str, str] = {
    states.AVAILABLE: "A",
    states.ALLOCATED: "L",
    states.PROVISIONING: "P",
    states.ACTIVE: "U",
    states.DEPROVISIONING: "D",
    states.SANITIZING: "S",
    states.FAILED: "F",
    states.ENROLLED: "E",
    states.INSPECTING: "I",
    states.BURN_IN: "B",
    states.QUARANTINED: "Q",
    states.RMA: "R",
    states.RETIRED: "X",
}
"""The letter each status shows in its cell (the colour repeats it; docs/console.md has the legend)."""
OUT_OF_SALE = (states.BURN_IN, states.QUARANTINED, states.RMA, states.RETIRED)
FILTERS = ("region", "state", "node_type", "tenant")
"""The grid's GET query parameters; ``state`` matches a status, a provisioning state or a fleet stage."""


def status(provisioning_state: str, fleet_stage: str) -> str:
    """The status a cell shows: the fleet stage when it is out of sale, else the provisioning state."""
    return fleet_stage if fleet_stage in OUT_OF_SALE else provisioning_state


@dataclass(frozen=True)
class Cell:
    """One node: name, status (CSS class ``s-<status>``), its letter, and the hover text."""

    name: str
    status: str
    letter: str
    title: str


@dataclass
class Rack:
    name: str
    cells: list[Cell] = field(default_factory=list)


@dataclass
class Unit:
    """A scalable unit of a region (``su`` None: the node has no position yet) and its racks."""

    region: str
    su: int | None
    racks: dict[str, Rack] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return sum(len(r.cells) for r in self.racks.values())


def _position(hardware: Mapping[str, Any] | None) -> tuple[int | None, str, int]:
    pos = (hardware or {}).get("position") or {}
    su = pos.get("su")
    return (None if su is None else int(su)), str(pos.get("rack") or "no rack"), int(pos.get("slot") or 0)


def matches(node: Any, tenant_name: str, wanted: Mapping[str, str]) -> bool:
    """Whether ``node`` passes the filters ``wanted`` (empty values pass everything)."""
    if wanted.get("region") and node.region != wanted["region"]:
        return False
    if wanted.get("node_type") and node.node_type != wanted["node_type"]:
        return False
    if wanted.get("tenant") and tenant_name != wanted["tenant"]:
        return False
    state = wanted.get("state")
    shown = status(node.provisioning_state, node.fleet_stage)
    return not state or state in (shown, node.provisioning_state, node.fleet_stage)


def layout(
    nodes: Sequence[Any], tenants: Mapping[str, str], health: Mapping[str, int | None], wanted: Mapping[str, str]
) -> list[Unit]:
    """The nodes passing ``wanted`` by region, scalable unit (unknown last) and rack (in the order of their
    first slot), slot order inside."""
    keyed = []
    for node in nodes:
        tenant = tenants.get(node.tenant_id or "", "")
        if matches(node, tenant, wanted):
            su, rack, slot = _position(node.hardware)
            keyed.append(((node.region, su is None, su or 0, slot, rack, node.name), su, rack, tenant, node))
    units: dict[tuple[str, int | None], Unit] = {}
    for _key, su, rack, tenant, node in sorted(keyed, key=lambda k: k[0]):
        shown = status(node.provisioning_state, node.fleet_stage)
        level = health.get(node.id)
        title = f"{node.name}: {node.provisioning_state} / {node.fleet_stage}, {node.node_type}"
        title += f", tenant {tenant}" if tenant else ", no tenant"
        title += "" if level is None else f", health level {level}"
        unit = units.setdefault((node.region, su), Unit(node.region, su))
        unit.racks.setdefault(rack, Rack(rack)).cells.append(
            Cell(node.name, shown, STATUS_LETTERS.get(shown, "?"), title)
        )
    return list(units.values())


def capacity(regions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows of the capacity page from the API's regions (``api.routes.regions.out``): per region and node
    type, total, allocated (in a cluster), free to sell (after spares and promises), quarantined, in RMA
    and spares held back; only node types the region has nodes of."""
    rows = []
    for region in regions:
        for cap in region["capacity"]:
            if not cap["total_nodes"]:
                continue
            by_state = cap["nodes_by_state"]
            rows.append(
                {
                    "region": region["name"],
                    "node_type": cap["node_type"],
                    "total": cap["total_nodes"],
                    "allocated": cap["in_use_nodes"],
                    "free": cap["available_nodes"],
                    "quarantined": by_state.get(states.QUARANTINED, 0),
                    "rma": by_state.get(states.RMA, 0),
                    "spares": cap["spare_nodes"],
                }
            )
    return rows
