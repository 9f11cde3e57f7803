"""Performance models of the storage tiers, read from the catalog (``storage_tiers.toml``).

A tier's bandwidth depends on its model: ``per_capacity`` tiers (parallel file systems) grow with the
provisioned TB up to a ceiling; ``per_node`` is local NVMe on every node; ``per_volume`` is block storage;
``object`` grows with TB above a floor and each client has a ceiling; ``archive`` reads at a fixed rate
after a retrieval delay. Every shared tier is capped by its clients (nodes x per-node storage NIC
bandwidth) and planned at its low percentile (``p10_derate`` x the expected figure), never at the mean.
Pure functions; units in the names (GB/s decimal, TB decimal).
"""

from __future__ import annotations

import math
from dataclasses import asdict

from velyrix import catalog, errors
from velyrix.frozen import frozen


@frozen
class TierPerformance:
    """What one tier delivers at a given capacity to a given set of client nodes."""

    tier: str
    model: str
    capacity_tb: float
    nodes: int
    tier_read_gb_s: float
    """The tier alone at this capacity (nominal, before the client cap)."""
    tier_write_gb_s: float
    client_cap_gb_s: float
    """Aggregate client bandwidth: nodes x per-node storage NIC (or per-client ceiling); inf for local."""
    expected_read_gb_s: float
    """min(tier, clients): the mean an acceptance test should measure."""
    expected_write_gb_s: float
    p10_read_gb_s: float
    """Low-percentile read bandwidth the planner sizes with (expected x p10_derate)."""
    p10_write_gb_s: float
    p10_derate: float
    random_read_factor: float
    write_limited_by: str
    """``capacity``, ``tier_max`` or ``clients``: what sets the write bandwidth."""
    price_usd_per_month: float
    retrieval_h: tuple[float, float] | None = None
    """Archive only: (min, max) hours before data can be read."""

    def to_dict(self) -> dict[str, object]:
        out = asdict(self)
        if self.client_cap_gb_s == math.inf:
            out["client_cap_gb_s"] = None
        return out


def _check_capacity(tier: str, capacity_tb: float) -> None:
    if not math.isfinite(capacity_tb) or capacity_tb < 0:
        raise errors.InvalidInputError(
            f"capacity of tier '{tier}' must be a finite number of TB >= 0, got {capacity_tb}",
            hint="give decimal TB, e.g. 800",
        )


def tier_performance(tier_name: str, capacity_tb: float, *, nodes: int, node_type: str) -> TierPerformance:
    """Bandwidth of ``tier_name`` at ``capacity_tb`` (decimal TB) seen by ``nodes`` nodes of ``node_type``.

    For ``local_scratch`` the capacity is ignored (it comes with the nodes: nodes x local NVMe).
    Returns a ``TierPerformance`` with expected (mean) and low-percentile (p10) GB/s.
    """
    if nodes < 1:
        raise errors.InvalidInputError(f"node count must be >= 1, got {nodes}")
    tier = catalog.storage_tier(tier_name)
    node = catalog.node_type(node_type)
    _check_capacity(tier_name, capacity_tb)
    clients = nodes * node.storage_gb_s
    retrieval: tuple[float, float] | None = None
    if tier.model == "per_capacity":
        read = min(capacity_tb * tier.param("read_gb_s_per_tb"), tier.param("max_read_gb_s"))
        write = min(capacity_tb * tier.param("write_gb_s_per_tb"), tier.param("max_write_gb_s"))
        tier_max_write = capacity_tb * tier.param("write_gb_s_per_tb") >= tier.param("max_write_gb_s")
    elif tier.model == "per_node":
        capacity_tb = nodes * node.local_nvme_tb
        read, write = nodes * node.local_nvme_read_gb_s, nodes * node.local_nvme_write_gb_s
        clients, tier_max_write = math.inf, False
    elif tier.model == "per_volume":
        volumes = math.ceil(capacity_tb / tier.param("max_volume_tb")) if capacity_tb > 0 else 0
        read = volumes * tier.param("read_gb_s_per_volume")
        write = volumes * tier.param("write_gb_s_per_volume")
        tier_max_write = False
    elif tier.model == "object":
        read = max(capacity_tb * tier.param("read_gb_s_per_tb"), tier.param("min_read_gb_s"))
        write = max(capacity_tb * tier.param("write_gb_s_per_tb"), tier.param("min_write_gb_s"))
        clients = nodes * min(tier.param("per_client_gb_s"), node.storage_gb_s)
        tier_max_write = False
    elif tier.model == "archive":
        read, write = tier.param("read_gb_s"), tier.param("write_gb_s")
        retrieval = (tier.param("retrieval_min_h"), tier.param("retrieval_max_h"))
        tier_max_write = True
    else:
        raise errors.CatalogError(f"storage tier '{tier_name}' has an unknown model '{tier.model}'")
    exp_read, exp_write = min(read, clients), min(write, clients)
    if write > clients:
        limited = "clients"
    elif tier_max_write:
        limited = "tier_max"
    else:
        limited = "capacity"
    return TierPerformance(
        tier=tier_name,
        model=tier.model,
        capacity_tb=capacity_tb,
        nodes=nodes,
        tier_read_gb_s=read,
        tier_write_gb_s=write,
        client_cap_gb_s=clients,
        expected_read_gb_s=exp_read,
        expected_write_gb_s=exp_write,
        p10_read_gb_s=exp_read * tier.p10_derate,
        p10_write_gb_s=exp_write * tier.p10_derate,
        p10_derate=tier.p10_derate,
        random_read_factor=tier.params.get("random_read_factor", 1.0),
        write_limited_by=limited,
        price_usd_per_month=capacity_tb * tier.price_usd_per_tb_month,
        retrieval_h=retrieval,
    )


def min_capacity_tb(tier_name: str) -> float:
    """Smallest capacity the tier is sold in (decimal TB); 0 when the catalog sets no floor."""
    return catalog.storage_tier(tier_name).params.get("min_tb", 0.0)


def capacity_for_write_tb(
    tier_name: str, p10_write_gb_s: float, *, nodes: int, node_type: str, step_tb: float = 50.0
) -> float | None:
    """Smallest capacity (a multiple of ``step_tb``, at least the tier's floor) whose low-percentile
    write bandwidth reaches ``p10_write_gb_s``; ``None`` when no capacity can (tier or client ceiling).

    Only meaningful for ``per_capacity`` tiers, where bandwidth grows with TB.
    """
    tier = catalog.storage_tier(tier_name)
    if tier.model != "per_capacity":
        raise errors.InvalidInputError(
            f"tier '{tier_name}' does not scale bandwidth with capacity", hint="use a parallel_fs tier"
        )
    ceiling = tier_performance(
        tier_name, tier.param("max_write_gb_s") / tier.param("write_gb_s_per_tb"), nodes=nodes, node_type=node_type
    )
    if ceiling.p10_write_gb_s + 1e-9 < p10_write_gb_s:
        return None
    raw_tb = p10_write_gb_s / (tier.p10_derate * tier.param("write_gb_s_per_tb"))
    tb = max(min_capacity_tb(tier_name), math.ceil(raw_tb / step_tb - 1e-9) * step_tb)
    return float(tb)
