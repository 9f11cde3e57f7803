"""The scheduler seam a training job on the twin is placed and requeued through.

``JobScheduler`` is what the runner asks of a scheduler: the job's nodes at start, and after a drain a
replacement and when it is ready. ``TwinPool`` answers from the cluster's scheduler view as main has it
today (``velyrix.ops.scheduler.clusters.SchedulerCluster``: the delivered cluster's allocated nodes, from
``ops.scheduler.delivered.from_delivered``, or a declared cluster's ``from_spec``) plus the region's spare
pool. A delivered Slurm plugs in here: ``start`` becomes ``sbatch --nodes N``, ``replace`` becomes
``scontrol update NodeName=X State=DRAIN Reason=...`` then ``scontrol requeue JOBID`` (Slurm picks the
replacement), ``returned`` becomes ``State=RESUME``; the runner does not change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from velyrix import errors
from velyrix.ops.scheduler.clusters import SchedulerCluster


@dataclass(frozen=True)
class Replacement:
    """A drained node's replacement (twin hostname) and when it can take the job's rank (simulated s)."""

    host: str
    ready_s: float


class JobScheduler(Protocol):
    """Places one training job (see the module docstring for the Slurm mapping)."""

    name: str

    def start(self, nodes: int) -> list[str]:
        """The twin hostnames of the job's ``nodes`` nodes."""
        ...

    def replace(self, host: str, at_s: float, out_until_s: float) -> Replacement:
        """Drain ``host`` at ``at_s`` until ``out_until_s``; the node that takes its place."""
        ...

    def returned(self, at_s: float) -> list[str]:
        """Nodes whose repair finished by ``at_s`` (back in the pool)."""
        ...

    def retire(self, host: str | None, out_until_s: float) -> str | None:
        """Take a free node (``host``, or any when None: another cluster's replacement) out of the pool
        until ``out_until_s``; the node taken, or None when the pool is empty."""
        ...

    def in_pool(self) -> list[str]:
        """Free nodes (spares) in service."""
        ...

    def label(self, host: str) -> str:
        """The scheduler's name of twin node ``host`` (for the timeline)."""
        ...


@dataclass
class TwinPool:
    """The cluster's nodes mapped onto twin nodes in order, and the region's spares behind them."""

    cluster: SchedulerCluster
    twin_hosts: Sequence[str]
    name: str = "twin"
    labels: dict[str, str] = field(default_factory=dict)
    free: list[str] = field(default_factory=list)
    out: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = self.cluster.node_names
        if len(self.twin_hosts) < len(names):
            raise errors.InvalidInputError(
                f"the twin has {len(self.twin_hosts)} nodes for the {len(names)} of cluster '{self.cluster.name}'"
            )
        self.labels = dict(zip(self.twin_hosts, names, strict=False))
        for h in self.twin_hosts[len(names) :]:
            self.labels[h] = f"spare {h}"
        self.free = list(self.twin_hosts)

    def start(self, nodes: int) -> list[str]:
        if nodes > len(self.cluster.node_names):
            raise errors.InvalidInputError(
                f"the job needs {nodes} nodes; cluster '{self.cluster.name}' has {len(self.cluster.node_names)}",
                hint="lower tp x pp x dp, or grow the cluster",
            )
        taken, self.free = self.free[:nodes], self.free[nodes:]
        return taken

    def replace(self, host: str, at_s: float, out_until_s: float) -> Replacement:
        self.out[host] = out_until_s
        if self.free:
            return Replacement(self.free.pop(0), at_s)
        back, when = min(self.out.items(), key=lambda kv: kv[1])
        del self.out[back]
        return Replacement(back, max(at_s, when))

    def returned(self, at_s: float) -> list[str]:
        back = sorted(h for h, until in self.out.items() if until <= at_s)
        for h in back:
            del self.out[h]
            self.free.append(h)
        return back

    def retire(self, host: str | None, out_until_s: float) -> str | None:
        if host is None:
            host = self.free[0] if self.free else None
        if host is None or host not in self.free:
            return None
        self.free.remove(host)
        self.out[host] = out_until_s
        return host

    def in_pool(self) -> list[str]:
        return list(self.free)

    def label(self, host: str) -> str:
        return self.labels.get(host, host)
