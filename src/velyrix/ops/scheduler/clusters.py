"""What a scheduler runs on: a cluster's name, its nodes and their GPUs.

Built from a ``ClusterSpec`` (node names ``<cluster>-001`` ...) or, later, from the control plane's
delivered cluster (``from_nodes``). Everything the Slurm and Kueue renderers need and nothing more.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from velyrix import catalog, errors
from velyrix.declarations import models

# Share of host RAM handed to jobs; the rest stays with the OS, the agent and page cache.
JOB_MEMORY_SHARE = 0.9


@dataclass(frozen=True)
class NodeGroup:
    """Nodes of one type: names, GPUs per node, the GPU model and the Slurm gres type (``h200``)."""

    node_type: str
    names: tuple[str, ...]
    gpus_per_node: int
    gpu_model: str
    cpus_per_node: int
    """Physical cores per node (all sockets)."""
    real_memory_mb: int = 0
    """Memory Slurm may hand out per node, in MiB (0: unconstrained)."""
    sockets: int = 1
    threads_per_core: int = 1

    @property
    def cores_per_socket(self) -> int:
        return self.cpus_per_node // self.sockets

    @property
    def slurm_cpus(self) -> int:
        """Slurm's ``CPUs``: sockets x cores per socket x threads per core."""
        return self.sockets * self.cores_per_socket * self.threads_per_core

    def gpu_cores(self, gpu: int) -> str:
        """Slurm core ids (``0-55``) of the socket GPU ``gpu`` hangs off: the GPUs split evenly over the
        sockets in index order (HGX boards: GPUs 0-3 on the first CPU's PCIe switches, 4-7 on the second)."""
        socket = gpu * self.sockets // self.gpus_per_node
        first = socket * self.cores_per_socket
        return f"{first}-{first + self.cores_per_socket - 1}"

    @property
    def gres_type(self) -> str:
        """Slurm gres type of the GPU model: first token, lower case (``H200-SXM5-141GB`` → ``h200``)."""
        return gres_type(self.gpu_model)


@dataclass(frozen=True)
class SchedulerCluster:
    """A cluster as the scheduler sees it: a name and groups of identical nodes."""

    name: str
    groups: tuple[NodeGroup, ...]
    fabric: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def node_names(self) -> list[str]:
        """Every node name, group by group, in declaration order."""
        return [n for g in self.groups for n in g.names]

    @property
    def gpus(self) -> int:
        return sum(g.gpus_per_node * len(g.names) for g in self.groups)

    def group_of(self, node: str) -> NodeGroup:
        """The group holding ``node``; UnknownNameError (with the closest name) when none does."""
        for g in self.groups:
            if node in g.names:
                return g
        raise errors.UnknownNameError("node", node, self.node_names)


def gres_type(gpu_model: str) -> str:
    """Slurm gres type for a catalog GPU model: its first token in lower case, letters and digits only."""
    token = re.split(r"[-_ ]", gpu_model.strip())[0].lower()
    return re.sub(r"[^a-z0-9]", "", token) or "gpu"


def node_names(cluster: str, count: int, start: int = 1) -> list[str]:
    """``count`` Slurm-friendly node names ``<cluster>-001`` ... (hostlist-compressible)."""
    width = max(3, len(str(start + count - 1)))
    return [f"{cluster}-{i:0{width}d}" for i in range(start, start + count)]


def from_spec(spec: models.ClusterSpec, *, names: list[str] | None = None) -> SchedulerCluster:
    """The scheduler's view of a declared cluster; node names default to ``node_names(spec.name, ...)``.

    ``names``: the delivered nodes' hostnames when known (must match ``spec.node_count``).
    """
    catalog.node_type(spec.node_type)  # an unknown node type is reported before the names
    names = names if names is not None else node_names(spec.name, spec.node_count)
    if len(names) != spec.node_count:
        raise errors.InvalidInputError(
            f"{len(names)} node names given for {spec.node_count} nodes", hint="give one name per node of the cluster"
        )
    return SchedulerCluster(name=spec.name, groups=(_group(spec.node_type, names),), fabric=spec.fabric)


def from_nodes(name: str, nodes: dict[str, str], *, fabric: str | None = None) -> SchedulerCluster:
    """The scheduler's view of delivered nodes: ``nodes`` maps hostname → catalog node type."""
    by_type: dict[str, list[str]] = {}
    for host, node_type in nodes.items():
        by_type.setdefault(node_type, []).append(host)
    groups = tuple(_group(node_type, sorted(hosts)) for node_type, hosts in by_type.items())
    return SchedulerCluster(name=name, groups=groups, fabric=fabric)


def _group(node_type: str, names: Sequence[str]) -> NodeGroup:
    """``names`` as a group of catalog node type ``node_type``: its GPUs, cores and job share of host RAM."""
    nt = catalog.node_type(node_type)
    return NodeGroup(
        node_type=node_type,
        names=tuple(names),
        gpus_per_node=nt.gpus_per_node,
        gpu_model=nt.gpu_model,
        cpus_per_node=nt.cpu_cores,
        real_memory_mb=int(nt.host_ram_gb * 1e9 / 2**20 * JOB_MEMORY_SHARE),
        sockets=nt.cpu_sockets,
        threads_per_core=nt.cpu_threads_per_core,
    )


def twin(
    name: str = "twin",
    node_count: int = 4,
    node_type: str = "hgx-h200-8g",
    *,
    cpus_per_node: int = 8,
    real_memory_mb: int = 2000,
) -> SchedulerCluster:
    """A small cluster for a Slurm twin on one host (tests, demos): few CPUs and little memory per node."""
    nt = catalog.node_type(node_type)
    group = NodeGroup(
        node_type=node_type,
        names=tuple(node_names(name, node_count)),
        gpus_per_node=nt.gpus_per_node,
        gpu_model=nt.gpu_model,
        cpus_per_node=cpus_per_node,
        real_memory_mb=real_memory_mb,
    )
    return SchedulerCluster(name=name, groups=(group,))
