"""Prove a compute fabric on its graph, not on its formulas (REFERENCE §1 "Verifying non-blocking").

Checks, each failure naming the part:
1. rail alignment: every NIC of every node has exactly one cable, to rail-leaf ``r`` of its SU;
2. port budgets: no switch uses more ports than its radix;
3. uplinks: every leaf (and spine, in 3 tiers) has its designed uplinks, spread evenly over its
   spines (cores), which is what lets ECMP hashing balance;
4. bisection by max-flow/min-cut between the first and second half of the nodes, equal to half the
   GPUs times the link speed at 1:1 (the design value, divided by oversubscription, otherwise);
5. the same max-flow for every rail on its own;
6. equal-cost path counts between leaves (every pair in a pod; across pods, every leaf against the
   first leaf of the next pod) — no pair may be without a path.

Max-flow runs on the switch-level graph (a NIC has one cable, so NICs fold into source/sink capacities
of their leaf). Small graphs use a pure-Python Dinic so that ``velyrix plan`` does not pay scipy's import
(~0.3 s); larger ones use ``scipy.sparse.csgraph.maximum_flow``. Tests check both agree.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from velyrix import errors
from velyrix.planners.fabric import FabricPlan
from velyrix.planners.fabric_topology import Topology, build_topology

SCIPY_ABOVE_SWITCHES = 400
"""Switch count above which max-flow and path counts use scipy (below, pure Python is faster overall)."""
MAX_LISTED = 8


@dataclass(frozen=True)
class Verification:
    """Result of ``verify``. Bandwidths in Gb/s."""

    ok: bool
    nonblocking: bool
    rail_aligned: bool
    bisection_gbps: int
    expected_bisection_gbps: int
    rails_checked: int
    ecmp_paths_min: int
    ecmp_paths_max: int
    backend: str
    failures: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "nonblocking": self.nonblocking, "rail_aligned": self.rail_aligned,
                "bisection_gbps": self.bisection_gbps, "expected_bisection_gbps": self.expected_bisection_gbps,
                "rails_checked": self.rails_checked,
                "ecmp_paths": {"min": self.ecmp_paths_min, "max": self.ecmp_paths_max},
                "backend": self.backend, "failures": list(self.failures)}

    def raise_if_failed(self) -> None:
        if not self.ok:
            raise errors.TopologyInvalidError(failures=list(self.failures), count=len(self.failures),
                                              first=self.failures[0])


def verify(plan: FabricPlan, topology: Topology | None = None, *, backend: str = "auto") -> Verification:
    """Verify ``topology`` (default: the one ``plan`` designs) against ``plan``.

    ``backend``: "auto", "python" or "scipy" (max-flow and path counting). Returns a ``Verification``;
    it never raises for a broken fabric (call ``raise_if_failed``).
    """
    topo = topology if topology is not None else build_topology(plan)
    if backend == "auto":
        backend = "scipy" if len(topo.switches) > SCIPY_ABOVE_SWITCHES else "python"
    if backend not in ("python", "scipy"):
        raise errors.InvalidInputError(f"unknown verification backend '{backend}'", hint="python, scipy or auto")
    failures: list[str] = []
    rail_ok = _check_nics(topo, failures)
    _check_ports(topo, failures)
    _check_uplinks(topo, failures)
    half = topo.nodes // 2
    flow = _max_flow(topo, backend, rail=None) * topo.link_gbps
    nonblocking = flow >= half * topo.rails * topo.link_gbps
    expected = plan.bisection_gbps()
    if flow < expected:
        failures.append(f"bisection: max-flow {flow:,} Gb/s between nodes [0,{half}) and [{half},{topo.nodes}) "
                        f"is below the design {expected:,} Gb/s")
    for rail in range(topo.rails) if topo.nodes > 1 else ():
        rail_flow = _max_flow(topo, backend, rail=rail)
        if rail_flow * plan.oversubscription < half:
            failures.append(f"rail {rail}: max-flow {rail_flow * topo.link_gbps:,} Gb/s is below "
                            f"{int(half * topo.link_gbps / plan.oversubscription):,} Gb/s")
    paths_min, paths_max = _ecmp(topo, backend, failures)
    return Verification(ok=not failures, nonblocking=nonblocking and not failures, rail_aligned=rail_ok,
                        bisection_gbps=flow, expected_bisection_gbps=expected, rails_checked=topo.rails,
                        ecmp_paths_min=paths_min, ecmp_paths_max=paths_max, backend=backend,
                        failures=tuple(failures))


def _listed(failures: list[str], items: Iterable[str]) -> None:
    items = list(items)
    failures.extend(items[:MAX_LISTED])
    if len(items) > MAX_LISTED:
        failures.append(f"... and {len(items) - MAX_LISTED} more of the same kind")


def _nic(node: int, rail: int) -> str:
    return f"node {node} NIC {rail} (mlx5_{rail})"


def _check_nics(topo: Topology, failures: list[str]) -> bool:
    cables: dict[tuple[int, int], list[int]] = collections.defaultdict(list)
    for node, rail, leaf in topo.nic_links:
        cables[node, rail].append(leaf)
    problems = []
    for node in range(topo.nodes):
        su = node // topo.su_nodes
        for rail in range(topo.rails):
            ends = cables.get((node, rail), [])
            if len(ends) != 1:
                problems.append(f"{_nic(node, rail)} has {len(ends)} cables, expected exactly 1")
                continue
            sw = topo.switches[ends[0]]
            if sw.role != "leaf" or sw.su != su or sw.rail != rail:
                want = next((s.name for s in topo.switches if s.role == "leaf" and s.su == su and s.rail == rail),
                            f"the rail-{rail} leaf of SU {su}")
                problems.append(f"{_nic(node, rail)} is cabled to {sw.name}, expected {want}")
    strays = [f"a cable on {topo.switches[leaf].name} claims node {n} NIC {r}, which is not in the plan"
              for n, r, leaf in topo.nic_links if not (0 <= n < topo.nodes and 0 <= r < topo.rails)]
    _listed(failures, problems + strays)
    return not problems and not strays


def _check_ports(topo: Topology, failures: list[str]) -> None:
    _listed(failures, (f"{sw.name} uses {used} ports, has {sw.radix}"
                       for sw, used in zip(topo.switches, topo.ports_used(), strict=True) if used > sw.radix))


def _check_uplinks(topo: Topology, failures: list[str]) -> None:
    up: dict[int, dict[int, int]] = collections.defaultdict(dict)
    for (a, b), count in topo.links.items():
        up[a][b] = count
    expect_peers: dict[int, int] = {}
    for sw in topo.switches:
        if sw.role == "spine":
            expect_peers[sw.pod] = expect_peers.get(sw.pod, 0) + 1
    cores_per_group: dict[int, int] = collections.Counter(sw.group for sw in topo.switches if sw.role == "core")
    problems = []
    for i, sw in enumerate(topo.switches):
        if sw.role == "leaf":
            want_total, want_peers = topo.leaf_up, expect_peers.get(sw.pod, 0)
        elif sw.role == "spine" and topo.tiers == 3:
            want_total, want_peers = topo.spine_up, cores_per_group.get(sw.group, 0)
        else:
            continue
        peers = up.get(i, {})
        total = sum(peers.values())
        if total != want_total:
            problems.append(f"{sw.name} has {total} uplinks, expected {want_total}")
        elif len(peers) != want_peers or len(set(peers.values())) > 1:
            spread = ", ".join(f"{topo.switches[p].name}: {n}" for p, n in sorted(peers.items()))
            problems.append(f"{sw.name} uplinks are uneven over {want_peers} switches ({spread})")
    _listed(failures, problems)


def _flow_edges(topo: Topology, rail: int | None) -> tuple[int, list[tuple[int, int, int]]]:
    """Directed edges (u, v, capacity in links) of the bisection flow problem; source W, sink W+1."""
    w = len(topo.switches)
    half = topo.nodes // 2
    src: collections.Counter[int] = collections.Counter()
    dst: collections.Counter[int] = collections.Counter()
    for node, r, leaf in topo.nic_links:
        if rail is None or r == rail:
            (src if node < half else dst)[leaf] += 1
    edges = [(w, leaf, n) for leaf, n in src.items()] + [(leaf, w + 1, n) for leaf, n in dst.items()]
    for (a, b), count in topo.links.items():
        edges.append((a, b, count))
        edges.append((b, a, count))
    return w + 2, edges


def _max_flow(topo: Topology, backend: str, rail: int | None) -> int:
    n, edges = _flow_edges(topo, rail)
    if backend == "scipy":
        import numpy as np
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import maximum_flow

        u, v, cap = (np.array(col, dtype=np.int32) for col in zip(*edges, strict=True))
        graph = csr_matrix((cap, (u, v)), shape=(n, n))
        return int(maximum_flow(graph, n - 2, n - 1, method="dinic").flow_value)
    return _dinic(n, edges, n - 2, n - 1)


def _dinic(n: int, edges: list[tuple[int, int, int]], s: int, t: int) -> int:
    """Dinic's max-flow in pure Python (integer capacities)."""
    head: list[list[int]] = [[] for _ in range(n)]
    to: list[int] = []
    cap: list[int] = []
    for u, v, c in edges:
        head[u].append(len(to))
        to.append(v)
        cap.append(c)
        head[v].append(len(to))
        to.append(u)
        cap.append(0)
    total = 0
    while True:
        level = [-1] * n
        level[s] = 0
        queue = collections.deque([s])
        while queue:
            u = queue.popleft()
            for e in head[u]:
                if cap[e] and level[to[e]] < 0:
                    level[to[e]] = level[u] + 1
                    queue.append(to[e])
        if level[t] < 0:
            return total
        it = [0] * n
        while True:
            pushed = _augment(s, t, 1 << 60, head, to, cap, level, it)
            if not pushed:
                break
            total += pushed


def _augment(u: int, t: int, limit: int, head: list[list[int]], to: list[int], cap: list[int],
             level: list[int], it: list[int]) -> int:
    """One augmenting path of Dinic's blocking flow (depth <= the graph's few tiers)."""
    if u == t:
        return limit
    edges_u = head[u]
    while it[u] < len(edges_u):
        e = edges_u[it[u]]
        v = to[e]
        if cap[e] and level[v] == level[u] + 1:
            pushed = _augment(v, t, min(limit, cap[e]), head, to, cap, level, it)
            if pushed:
                cap[e] -= pushed
                cap[e ^ 1] += pushed
                return pushed
        it[u] += 1
    return 0


def _ecmp(topo: Topology, backend: str, failures: list[str]) -> tuple[int, int]:
    """(min, max) equal-cost path counts over leaf pairs; appends a failure for pairs without a path."""
    up: dict[int, dict[int, int]] = collections.defaultdict(dict)
    for (a, b), count in topo.links.items():
        up[a][b] = count
    leaves = [i for i, sw in enumerate(topo.switches) if sw.role == "leaf"]
    by_pod: dict[int, list[int]] = collections.defaultdict(list)
    for i in leaves:
        by_pod[topo.switches[i].pod].append(i)
    counts: list[int] = []
    broken: list[str] = []
    pairs: list[tuple[int, int]] = []
    for pod_leaves in by_pod.values():
        pairs.extend((a, b) for k, a in enumerate(pod_leaves) for b in pod_leaves[k + 1:])
    # Across pods, every leaf against the first leaf of the next pod (a ring): linear in the leaves.
    pods = sorted(by_pod)
    for k, pod in enumerate(pods[:-1] + pods[-1:] if len(pods) > 1 else []):
        target = by_pod[pods[(k + 1) % len(pods)]][0]
        pairs.extend((a, target) for a in by_pod[pod])
    if backend == "scipy" and pairs:
        counts = _pair_paths_scipy(topo, up, pairs)
    else:
        reach = {i: _up_paths(up, i, topo.tiers) for i in leaves}
        for a, b in pairs:
            ra, rb = reach[a], reach[b]
            same = topo.switches[a].pod == topo.switches[b].pod
            key = 1 if same else 2
            counts.append(sum(n * rb[key].get(x, 0) for x, n in ra[key].items()))
    for (a, b), n in zip(pairs, counts, strict=True):
        if n == 0:
            broken.append(f"no equal-cost path between {topo.switches[a].name} and {topo.switches[b].name}")
    _listed(failures, broken)
    return (min(counts), max(counts)) if counts else (0, 0)


def _up_paths(up: dict[int, dict[int, int]], leaf: int, tiers: int) -> dict[int, dict[int, int]]:
    """Path counts from ``leaf`` up: {1: {spine: n}, 2: {core: n}}."""
    spines = dict(up.get(leaf, {}))
    cores: dict[int, int] = collections.Counter()
    if tiers == 3:
        for s, n in spines.items():
            for c, m in up.get(s, {}).items():
                cores[c] += n * m
    return {1: spines, 2: dict(cores)}


def _pair_paths_scipy(topo: Topology, up: dict[int, dict[int, int]], pairs: list[tuple[int, int]]) -> list[int]:
    import numpy as np
    from scipy.sparse import csr_matrix

    w = len(topo.switches)
    rows, cols, vals = [], [], []
    for a, peers in up.items():
        for b, n in peers.items():
            rows.append(a)
            cols.append(b)
            vals.append(n)
    adj = csr_matrix((np.array(vals, dtype=np.int64), (rows, cols)), shape=(w, w))
    hop1 = adj  # leaf -> spine path counts
    hop2 = (adj @ adj).tocsr() if topo.tiers == 3 else csr_matrix((w, w), dtype=np.int64)  # leaf -> core
    a_idx = np.array([a for a, _ in pairs])
    b_idx = np.array([b for _, b in pairs])
    pods = np.array([sw.pod for sw in topo.switches])
    same = pods[a_idx] == pods[b_idx]
    out = np.zeros(len(pairs), dtype=np.int64)
    for mask, hop in ((same, hop1), (~same, hop2)):
        if mask.any():
            out[mask] = np.asarray(hop[a_idx[mask]].multiply(hop[b_idx[mask]]).sum(axis=1)).ravel()
    return [int(x) for x in out]
