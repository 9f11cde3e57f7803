"""The scheduler policy rendered for Kubernetes: Kueue ResourceFlavors, ClusterQueues, LocalQueues, and
node taints for health.

Mapping (Slurm policy → Kueue, API ``kueue.x-k8s.io/v1beta1``):
- a node group (GPU model) → a ResourceFlavor labelled with the node type and GPU product;
- a team → a ClusterQueue in the cohort of its cost center, quota on ``nvidia.com/gpu`` per flavor:
  ``nominalQuota`` = the team's fair share of the flavor's GPUs (its shares over its siblings', times its
  cost center's share over the cost centers'), capped by ``gpu_limit``; ``borrowingLimit`` = what the
  ``gpu_limit`` leaves above nominal (unset without a limit); ``fairSharing.weight`` = the team's shares;
- a team → a LocalQueue of the same name in the team's namespace (named like the team);
- a drained node → a Node patch with the taint ``velyrix.io/drain=<source>:NoSchedule``.
"""

from __future__ import annotations

import math
import re
from typing import Any

from velyrix.ops.scheduler import clusters, policies

API = "kueue.x-k8s.io/v1beta1"
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


def render(
    policy: policies.Policy, cluster: clusters.SchedulerCluster, *, drained: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """Every manifest (plain dicts, in apply order). ``drained``: node → drain source (tainted nodes)."""
    docs: list[dict[str, Any]] = []
    flavors = []
    for g in cluster.groups:
        name = dns_name(
            g.gres_type if len({x.gres_type for x in cluster.groups}) == len(cluster.groups) else g.node_type
        )
        flavors.append((name, g))
        docs.append(
            {
                "apiVersion": API,
                "kind": "ResourceFlavor",
                "metadata": {"name": name},
                "spec": {"nodeLabels": {NODE_TYPE_LABEL: g.node_type, GPU_PRODUCT_LABEL: g.gpu_model}},
            }
        )
    preempting = any(q.preempt for q in policy.qos.values())
    for team in policy.teams.values():
        share = _share(policy, team)
        flavor_specs = []
        for name, g in flavors:
            gpus = g.gpus_per_node * len(g.names)
            nominal = math.floor(gpus * share)
            res: dict[str, Any] = {"name": GPU_RESOURCE}
            if team.gpu_limit is not None:
                nominal = min(nominal, team.gpu_limit)
                res["nominalQuota"] = nominal
                if team.cost_center:
                    res["borrowingLimit"] = max(0, min(team.gpu_limit, gpus) - nominal)
            else:
                res["nominalQuota"] = nominal
            flavor_specs.append({"name": name, "resources": [res]})
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
            spec["cohort"] = dns_name(team.cost_center)
        docs.append(
            {
                "apiVersion": API,
                "kind": "ClusterQueue",
                "metadata": {
                    "name": dns_name(team.name),
                    "labels": {"velyrix.io/cost-center": dns_name(team.cost_center or team.name)},
                },
                "spec": spec,
            }
        )
    for team in policy.teams.values():
        docs.append(
            {
                "apiVersion": API,
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


def to_yaml(docs: list[dict[str, Any]]) -> str:
    """Multi-document YAML (``kubectl apply -f``)."""
    import yaml

    return "".join("---\n" + yaml.safe_dump(d, sort_keys=False) for d in docs)
