"""The scheduler policy rendered for Kubernetes: Kueue ResourceFlavors, ClusterQueues, LocalQueues, and
node taints for health.

Mapping (Slurm policy → Kueue, API ``kueue.x-k8s.io/v1beta2``, the version Kueue stores since 0.15;
``api="v1beta1"`` renders the deprecated one, where the cohort field is ``cohort`` not ``cohortName``):
- a node group (GPU model) → a ResourceFlavor selecting the node type and GPU Feature Discovery's
  ``nvidia.com/gpu.product`` value for the model (catalog gpus.toml ``gfd_product``, e.g. ``NVIDIA-H200``);
- a team → a ClusterQueue in the cohort of its cost center, quota on ``nvidia.com/gpu`` per flavor:
  ``nominalQuota`` = the team's fair share of the flavor's GPUs (its shares over its siblings', times its
  cost center's share over the cost centers'), apportioned by largest remainder so that the quotas add up
  to every GPU of the flavor; a team's ``gpu_limit`` caps its quota and the rest goes to the other teams
  by share (GPUs stay out of every queue only when every team is at its limit). Unused quota is lent
  within the cohort (no ``lendingLimit``); ``borrowingLimit`` = what the ``gpu_limit`` leaves above
  nominal (unset without a limit: borrow what the cohort lends); ``fairSharing.weight`` = the shares;
- a team → a LocalQueue of the same name in the team's namespace (named like the team);
- a drained node → a Node patch with the taint ``velyrix.io/drain=<source>:NoSchedule``.
"""

from __future__ import annotations

import math
import re
from typing import Any

from velyrix import catalog, errors
from velyrix.ops.scheduler import clusters, policies

API_GROUP = "kueue.x-k8s.io"
API_VERSIONS = ("v1beta2", "v1beta1")
GPU_RESOURCE = "nvidia.com/gpu"
DRAIN_TAINT = "velyrix.io/drain"
NODE_TYPE_LABEL = "velyrix.io/node-type"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"


def dns_name(name: str) -> str:
    """A DNS-1123 subdomain from any name (lower case; other characters become '-')."""
    out = re.sub(r"[^a-z0-9.-]+", "-", name.lower()).strip("-.")
    return out[:253] or "x"


def _share(policy: policies.Policy, team: policies.Team) -> float:
    """The team's share of the whole cluster: shares over siblings at each level of the tree."""
    siblings = [t for t in policy.teams.values() if t.cost_center == team.cost_center]
    share = team.shares / max(1, sum(t.shares for t in siblings))
    if team.cost_center:
        top = list(policy.cost_centers.values()) + [t for t in policy.teams.values() if not t.cost_center]
        cc = policy.cost_centers[team.cost_center]
        share *= cc.shares / max(1, sum(x.shares for x in top))
    return share


def apportion(total: int, weights: list[float], caps: list[int | None]) -> list[int]:
    """Split ``total`` whole GPUs in proportion to ``weights`` (largest remainder), none above its cap;
    what a cap leaves goes to the uncapped by weight. The parts add up to ``total`` unless all are capped."""
    out = [0] * len(weights)
    open_ = [i for i, w in enumerate(weights) if w > 0]
    left = total
    while left > 0 and open_:
        weight = sum(weights[i] for i in open_)
        exact = {i: left * weights[i] / weight for i in open_}
        part = {i: math.floor(exact[i]) for i in open_}
        rest = left - sum(part.values())
        for i in sorted(open_, key=lambda i: (-(exact[i] - part[i]), i))[:rest]:
            part[i] += 1
        capped = [i for i in open_ if caps[i] is not None and out[i] + part[i] > caps[i]]  # type: ignore[operator]
        if not capped:
            for i in open_:
                out[i] += part[i]
            return out
        for i in capped:
            left -= caps[i] - out[i]  # type: ignore[operator]
            out[i] = caps[i]  # type: ignore[assignment]
        open_ = [i for i in open_ if i not in capped]
    return out


def _gfd_product(gpu_model: str) -> str:
    return catalog.gpu_model(gpu_model).gfd_product or gpu_model


def render(
    policy: policies.Policy,
    cluster: clusters.SchedulerCluster,
    *,
    drained: dict[str, str] | None = None,
    api: str = "v1beta2",
) -> list[dict[str, Any]]:
    """Every manifest (plain dicts, in apply order). ``drained``: node → drain source (tainted nodes);
    ``api``: ``v1beta2`` (default) or the deprecated ``v1beta1``."""
    if api not in API_VERSIONS:
        raise errors.UnknownNameError("Kueue API version", api, API_VERSIONS)
    api_version = f"{API_GROUP}/{api}"
    docs: list[dict[str, Any]] = []
    flavors = []
    for g in cluster.groups:
        name = dns_name(
            g.gres_type if len({x.gres_type for x in cluster.groups}) == len(cluster.groups) else g.node_type
        )
        flavors.append((name, g))
        docs.append(
            {
                "apiVersion": api_version,
                "kind": "ResourceFlavor",
                "metadata": {"name": name},
                "spec": {"nodeLabels": {NODE_TYPE_LABEL: g.node_type, GPU_PRODUCT_LABEL: _gfd_product(g.gpu_model)}},
            }
        )
    preempting = any(q.preempt for q in policy.qos.values())
    teams = list(policy.teams.values())
    shares = [_share(policy, t) for t in teams]
    quota = {
        name: apportion(g.gpus_per_node * len(g.names), shares, [t.gpu_limit for t in teams]) for name, g in flavors
    }
    for k, team in enumerate(teams):
        flavor_specs = []
        for name, g in flavors:
            gpus = g.gpus_per_node * len(g.names)
            res: dict[str, Any] = {"name": GPU_RESOURCE, "nominalQuota": quota[name][k]}
            if team.gpu_limit is not None and team.cost_center:
                res["borrowingLimit"] = max(0, min(team.gpu_limit, gpus) - quota[name][k])
            flavor_specs.append({"name": name, "resources": [res]})
        docs.append(_cluster_queue(api, api_version, team, flavor_specs, preempting))
    for team in policy.teams.values():
        docs.append(
            {
                "apiVersion": api_version,
                "kind": "LocalQueue",
                "metadata": {"name": dns_name(team.name), "namespace": dns_name(team.name)},
                "spec": {"clusterQueue": dns_name(team.name)},
            }
        )
    for node, source in sorted((drained or {}).items()):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": node},
                "spec": {"taints": [{"key": DRAIN_TAINT, "value": dns_name(source), "effect": "NoSchedule"}]},
            }
        )
    return docs


def _cluster_queue(
    api: str, api_version: str, team: policies.Team, flavor_specs: list[dict[str, Any]], preempting: bool
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": dns_name(team.name)}},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": [{"coveredResources": [GPU_RESOURCE], "flavors": flavor_specs}],
        "fairSharing": {"weight": team.shares},
        "preemption": {
            "reclaimWithinCohort": "Any" if team.cost_center else "Never",
            "withinClusterQueue": "LowerPriority" if preempting else "Never",
        },
    }
    if team.cost_center:
        spec["cohortName" if api == "v1beta2" else "cohort"] = dns_name(team.cost_center)
    return {
        "apiVersion": api_version,
        "kind": "ClusterQueue",
        "metadata": {
            "name": dns_name(team.name),
            "labels": {"velyrix.io/cost-center": dns_name(team.cost_center or team.name)},
        },
        "spec": spec,
    }


def to_yaml(docs: list[dict[str, Any]]) -> str:
    """Multi-document YAML (``kubectl apply -f``)."""
    import yaml

    return "".join("---\n" + yaml.safe_dump(d, sort_keys=False) for d in docs)
