"""One ``/metrics`` endpoint for every node of a simulated region (``velyrix sim exporter``).

Each node's job mapping lives in ``<job_map_root>/<hostname>/`` (the layout of ``velyrix.agent.jobs``),
so a scripted scheduler writes prolog/epilog files per node as it would on real hosts.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from velyrix.agent import service
from velyrix.agent.collectors.sim import SimCollector, catch_up

if TYPE_CHECKING:
    from velyrix.fleet.drivers.sim import SimRegion


def fleet_source(
    region: SimRegion,
    *,
    job_map_root: Path | None = None,
    hostnames: Iterable[str] | None = None,
    min_interval_s: float = 0.0,
) -> service.MetricsSource:
    """A ``MetricsSource`` over ``region``'s nodes (all, or only ``hostnames``), caught up to the region's
    clock once per collection."""
    wanted = list(hostnames) if hostnames is not None else list(region.nodes)
    nodes = [
        service.NodeSource(
            SimCollector(region.node(h), region, advance=False), job_map_root / h if job_map_root else None
        )
        for h in wanted
    ]
    return service.MetricsSource(nodes, min_interval_s=min_interval_s, before_collect=[lambda: catch_up(region)])
