"""Incidents for the NOC: opened when a tenant's cluster loses capacity, deduplicated by key.

Priorities follow the GPU-cloud support tiers of REFERENCE.md section 5 (P1: response < 15 min): a cluster
that lost capacity with no spare to replace it is P1 when it lost more than ``p1_fraction`` of its nodes,
P2 otherwise.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

P1_FRACTION = 0.10
"""Velyrix design value: losing more than 10% of a cluster's nodes without replacement is a P1."""


@dataclass
class Incident:
    """One NOC incident. ``key`` deduplicates (one open incident per cluster and cause)."""

    id: str
    key: str
    priority: str
    title: str
    cluster: str | None
    nodes: list[str]
    opened_s: float
    detail: str = ""
    resolved_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class NocBook:
    """Open and resolved incidents, in memory (the control plane persists them in its own table)."""

    clock: Callable[[], float] = time.time
    incidents: list[Incident] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def open(
        self,
        key: str,
        priority: str,
        title: str,
        *,
        cluster: str | None = None,
        node: str | None = None,
        detail: str = "",
    ) -> Incident:
        """Open an incident, or add ``node`` to the open one with the same ``key`` (escalating priority)."""
        for inc in self.incidents:
            if inc.key == key and inc.resolved_s is None:
                if node and node not in inc.nodes:
                    inc.nodes.append(node)
                inc.priority = min(inc.priority, priority)  # "P1" < "P2"
                inc.title, inc.detail = title, detail or inc.detail
                return inc
        inc = Incident(
            f"INC-{next(self._ids):05d}", key, priority, title, cluster, [node] if node else [], self.clock(), detail
        )
        self.incidents.append(inc)
        return inc

    def resolve(self, key: str) -> None:
        for inc in self.incidents:
            if inc.key == key and inc.resolved_s is None:
                inc.resolved_s = self.clock()

    def open_incidents(self) -> list[Incident]:
        return [i for i in self.incidents if i.resolved_s is None]


def capacity_priority(lost: int, size: int) -> str:
    """P1 when more than ``P1_FRACTION`` of ``size`` nodes are lost, else P2."""
    return "P1" if size and lost / size > P1_FRACTION else "P2"
