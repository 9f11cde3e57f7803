"""Monthly list price of a cluster, line by line.

GPU-hours are billed at 730 hours per month (``units.HOURS_PER_MONTH``); each storage tier at its list
price per decimal TB-month; local scratch is included with the node.
"""

from __future__ import annotations

from dataclasses import asdict

from velyrix import catalog, units
from velyrix.declarations import models
from velyrix.frozen import frozen


@frozen
class CostLine:
    """One line of a price: ``quantity`` x ``unit_price_usd`` = ``monthly_usd``."""

    item: str
    quantity: float
    unit: str
    unit_price_usd: float
    monthly_usd: float

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def line(item: str, quantity: float, unit: str, unit_price_usd: float) -> CostLine:
    """A cost line whose total is computed, rounded to cents."""
    return CostLine(item, quantity, unit, unit_price_usd, round(quantity * unit_price_usd, 2))


def compute_lines(node_type: str, node_count: int) -> list[CostLine]:
    """GPU-hour line of ``node_count`` nodes of ``node_type`` for one month."""
    nt = catalog.node_type(node_type)
    gpus = node_count * nt.gpus_per_node
    return [
        line(
            f"GPU-hours, {node_type} ({gpus} GPUs x {units.HOURS_PER_MONTH:g} h)",
            gpus * units.HOURS_PER_MONTH,
            "GPU-hour",
            catalog.gpu_hour_price_usd(node_type),
        )
    ]


def storage_lines(storage: dict[str, float], node_type: str, node_count: int) -> list[CostLine]:
    """One line per storage tier with capacity (TB per HCL key), plus included local scratch."""
    out: list[CostLine] = []
    for key, tb in storage.items():
        if tb <= 0:
            continue
        tier = catalog.storage_tier_by_hcl_key(key)
        out.append(line(tier.description, tb, "TB-month", tier.price_usd_per_tb_month))
    nt = catalog.node_type(node_type)
    scratch = catalog.storage_tier("local_scratch")
    out.append(
        line(
            f"{scratch.description} (included)",
            round(node_count * nt.local_nvme_tb, 2),
            "TB-month",
            scratch.price_usd_per_tb_month,
        )
    )
    return out


def cluster_lines(spec: models.ClusterSpec) -> list[CostLine]:
    """Every cost line of a declared cluster."""
    return compute_lines(spec.node_type, spec.node_count) + storage_lines(
        spec.storage.by_key(), spec.node_type, spec.node_count
    )


def total(lines: list[CostLine]) -> float:
    return round(sum(c.monthly_usd for c in lines), 2)
