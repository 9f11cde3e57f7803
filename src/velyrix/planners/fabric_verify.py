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
   first leaf of the next pod, so the work stays linear) — no pair may be without a path.

Max-flow runs on the switch-level graph (a NIC has one cable, so NICs fold into source/sink capacities
of their leaf). Small graphs use a pure-Python Dinic so that ``velyrix plan`` does not pay scipy's import
(~0.3 s); larger ones use ``scipy.sparse.csgraph.maximum_flow``. Tests check both agree.
"""

from __future__ import annotations

import collections
import sys
from collections.abc import Iterable
from typing import Any

from velyrix import errors
from velyrix.frozen import frozen
from velyrix.planners.fabric import FabricPlan
from velyrix.planners.fabric_topology import Topology, build_topology

SCIPY_ABOVE_SWITCHES = 400
"""Switch count above which max-flow and path counts use scipy even when it must first be imported
(importing scipy.sparse.csgraph costs ~0.3 s, more than the pure-Python Dinic below this size)."""
SCIPY_LOADED_ABOVE_SWITCHES = 32
"""Switch count above which scipy is used when it is already imported (a server, a benchmark): from
here on its max-flow is faster than the pure-Python one (bench/bench_fabric.py)."""
MAX_LISTED = 8


@frozen
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
        return {
            "ok": self.ok,
            "nonblocking": self.nonblocking,
            "rail_aligned": self.rail_aligned,
            "bisection_gbps": self.bisection_gbps,
            "expected_bisection_gbps": self.expected_bisection_gbps,
            "rails_checked": self.rails_checked,
            "ecmp_paths": {"min": self.ecmp_paths_min, "max": self.ecmp_paths_max},
            "backend": self.backend,
            "failures": list(self.failures),
        }

    def raise_if_failed(self) -> None:
        if not self.ok:
            raise errors.TopologyInvalidError(
                failures=list(self.failures), count=len(self.failures), first=self.failures[0]
            )


def verify(plan: FabricPlan, topology: Topology | None = None, *, backend: str = "auto") -> Verification:
    """Verify ``topology`` (default: the one ``plan`` designs) against ``plan``.

    ``backend``: "auto", "python" or "scipy" (max-flow and path counting). Returns a ``Verification``;
    it never raises for a broken fabric (call ``raise_if_failed``).
    """
    topo = topology if topology is not None else build_topology(plan)
    if backend == "auto":
        backend = auto_backend(len(topo.switches))
    if backend not in ("python", "scipy"):
        raise errors.InvalidInputError(f"unknown verification backend '{backend}'", hint="python, scipy or auto")
    failures: list[str] = []
    rail_ok = _check_nics(topo, failures)
    _check_ports(topo, failures)
    _check_uplinks(topo, failures)
    half = topo.nodes // 2
    problem = _FlowProblem(topo)
    flow = problem.solve(backend, None) * topo.link_gbps
    nonblocking = flow >= half * topo.rails * topo.link_gbps
    expected = plan.bisection_gbps()
    if flow < expected:
        failures.append(
            f"bisection: max-flow {flow:,} Gb/s between nodes [0,{half}) and [{half},{topo.nodes}) "
            f"is below the design {expected:,} Gb/s"
        )
    for rail in range(topo.rails) if topo.nodes > 1 else ():
        rail_flow = problem.solve(backend, rail)
        if rail_flow * plan.oversubscription < half:
            failures.append(
                f"rail {rail}: max-flow {rail_flow * topo.link_gbps:,} Gb/s is below "
                f"{int(half * topo.link_gbps / plan.oversubscription):,} Gb/s"
            )
    paths_min, paths_max = _ecmp(topo, backend, failures)
    return Verification(
        ok=not failures,
        nonblocking=nonblocking and not failures,
        rail_aligned=rail_ok,
        bisection_gbps=flow,
        expected_bisection_gbps=expected,
        rails_checked=topo.rails,
        ecmp_paths_min=paths_min,
        ecmp_paths_max=paths_max,
        backend=backend,
        failures=tuple(failures),
    )


def auto_backend(switches: int) -> str:
    """``scipy`` where it is faster than the pure-Python max-flow, counting its import when not yet loaded."""
    loaded = "scipy.sparse.csgraph" in sys.modules
    return "scipy" if switches > (SCIPY_LOADED_ABOVE_SWITCHES if loaded else SCIPY_ABOVE_SWITCHES) else "python"


def _listed(failures: list[str], items: Iterable[str]) -> None:
    items = list(items)
    failures.extend(items[:MAX_LISTED])
    if len(items) > MAX_LISTED:
        failures.append(f"... and {len(items) - MAX_LISTED} more of the same kind")


def _nic(node: int, rail: int) -> str:
    return f"node {node} NIC {rail} (mlx5_{rail})"


def _check_nics(topo: Topology, failures: list[str]) -> bool:
    rails = topo.rails
    expected = {(sw.su, sw.rail): i for i, sw in enumerate(topo.switches) if sw.role == "leaf"}
    first: dict[int, int] = {}  # node * rails + rail -> leaf of its (first) cable
    extra: collections.Counter[int] = collections.Counter()
    strays = []
    for node, rail, leaf in topo.nic_links:
        if not (0 <= node < topo.nodes and 0 <= rail < rails):
            strays.append(
                f"a cable on {topo.switches[leaf].name} claims node {node} NIC {rail}, which is not in the plan"
            )
            continue
        key = node * rails + rail
        if key in first:
            extra[key] += 1
        else:
            first[key] = leaf
    problems = []
    su_nodes = topo.su_nodes
    for key in range(topo.nodes * rails):
        node, rail = divmod(key, rails)
        got = first.get(key)
        if got is None or key in extra:
            count = 0 if got is None else 1 + extra[key]
            problems.append(f"{_nic(node, rail)} has {count} cables, expected exactly 1")
            continue
        want = expected.get((node // su_nodes, rail))
        if want is None or got != want:
            want_name = topo.switches[want].name if want is not None else f"the rail-{rail} leaf of its SU"
            problems.append(f"{_nic(node, rail)} is cabled to {topo.switches[got].name}, expected {want_name}")
    _listed(failures, problems + strays)
    return not problems and not strays


def _check_ports(topo: Topology, failures: list[str]) -> None:
    _listed(
        failures,
        (
            f"{sw.name} uses {used} ports, has {sw.radix}"
            for sw, used in zip(topo.switches, topo.ports_used(), strict=True)
            if used > sw.radix
        ),
    )


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


class _FlowProblem:
    """The bisection flow problem on the switch graph, built once and solved for all NICs and per rail.

    Vertices: switches 0..W-1, source W (NICs of the first half of the nodes), sink W+1 (the second
    half); capacities in cables (links)."""

    def __init__(self, topo: Topology) -> None:
        w = len(topo.switches)
        self.n, self.source, self.sink = w + 2, w, w + 1
        half = topo.nodes // 2
        per_rail: collections.Counter[tuple[bool, int, int]] = collections.Counter(
            (node < half, r, leaf) for node, r, leaf in topo.nic_links
        )
        self.src: dict[int | None, dict[int, int]] = collections.defaultdict(dict)
        self.dst: dict[int | None, dict[int, int]] = collections.defaultdict(dict)
        for (in_first, r, leaf), n in per_rail.items():
            side = self.src if in_first else self.dst
            side[r][leaf] = n
            side[None][leaf] = side[None].get(leaf, 0) + n
        self.links = topo.links
        self._base: list[tuple[int, int, int]] | None = None
        self._arrays: Any = None

    @property
    def base(self) -> list[tuple[int, int, int]]:
        """Switch-to-switch edges, both directions."""
        if self._base is None:
            self._base = [e for (a, b), n in self.links.items() for e in ((a, b, n), (b, a, n))]
        return self._base

    def edges(self, rail: int | None) -> list[tuple[int, int, int]]:
        """Directed edges (u, v, capacity); ``rail`` None means every NIC."""
        return (
            [(self.source, leaf, n) for leaf, n in self.src[rail].items()]
            + [(leaf, self.sink, n) for leaf, n in self.dst[rail].items()]
            + self.base
        )

    def solve(self, backend: str, rail: int | None) -> int:
        if backend == "python":
            return _dinic(self.n, self.edges(rail), self.source, self.sink)
        import numpy as np
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import maximum_flow

        if self._arrays is None:
            count = len(self.links)
            pairs = np.fromiter((x for key in self.links for x in key), dtype=np.int32, count=2 * count)
            caps = np.fromiter(self.links.values(), dtype=np.int32, count=count)
            a, b = pairs[0::2], pairs[1::2]
            self._arrays = np.column_stack(
                [np.concatenate([a, b]), np.concatenate([b, a]), np.concatenate([caps, caps])]
            )
        ends = [(self.source, leaf, n) for leaf, n in self.src[rail].items()] + [
            (leaf, self.sink, n) for leaf, n in self.dst[rail].items()
        ]
        arr = np.concatenate([self._arrays, np.array(ends, dtype=np.int32).reshape(-1, 3)])
        graph = csr_matrix((arr[:, 2], (arr[:, 0], arr[:, 1])), shape=(self.n, self.n))
        return int(maximum_flow(graph, self.source, self.sink, method="dinic").flow_value)


def _flow_edges(topo: Topology, rail: int | None) -> tuple[int, list[tuple[int, int, int]]]:
    """(vertex count, directed edges) of the bisection flow problem; source n-2, sink n-1 (for tests)."""
    problem = _FlowProblem(topo)
    return problem.n, problem.edges(rail)


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


def _augment(
    u: int, t: int, limit: int, head: list[list[int]], to: list[int], cap: list[int], level: list[int], it: list[int]
) -> int:
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


def _cross_pod_paths(
    by_pod: dict[int, list[int]], up: dict[int, dict[int, int]], name: list[str], counts: list[int], broken: list[str]
) -> None:
    """Across pods: path counts from every leaf to the first leaf of the next pod (leaf-spine-core-spine-leaf),
    appended to ``counts``; a pair without a path is appended to ``broken``."""
    pods = sorted(by_pod)
    for k, pod in enumerate(pods if len(pods) > 1 else []):
        target = by_pod[pods[(k + 1) % len(pods)]][0]
        # cores reachable from the target leaf, with path counts (leaf <- spine <- core)
        down_core: collections.Counter[int] = collections.Counter()
        for spine, n in up.get(target, {}).items():
            for core, m in up.get(spine, {}).items():
                down_core[core] += n * m
        via_spine: dict[int, int] = {}
        for leaf in by_pod[pod]:
            total = 0
            for spine, n in up.get(leaf, {}).items():
                if spine not in via_spine:
                    via_spine[spine] = sum(m * down_core.get(core, 0) for core, m in up.get(spine, {}).items())
                total += n * via_spine[spine]
            counts.append(total)
            if not total:
                broken.append(f"no equal-cost path between {name[leaf]} and {name[target]}")


def _ecmp(topo: Topology, backend: str, failures: list[str]) -> tuple[int, int]:
    """(min, max) equal-cost path counts over leaf pairs, parallel cables counted; appends a failure for
    pairs without a path. Every pair within a pod (paths leaf-spine-leaf), and across pods every leaf
    against the first leaf of the next pod (leaf-spine-core-spine-leaf), exactly and in linear time."""
    up: dict[int, dict[int, int]] = collections.defaultdict(dict)
    for (a, b), count in topo.links.items():
        up[a][b] = count
    by_pod: dict[int, list[int]] = collections.defaultdict(list)
    for i, sw in enumerate(topo.switches):
        if sw.role == "leaf":
            by_pod[sw.pod].append(i)
    counts: list[int] = []
    broken: list[str] = []
    name = [sw.name for sw in topo.switches]
    for pod_leaves in by_pod.values():
        for (a, b), n in _same_pod_paths(pod_leaves, up, backend):
            counts.append(n)
            if not n:
                broken.append(f"no equal-cost path between {name[a]} and {name[b]}")
    _cross_pod_paths(by_pod, up, name, counts, broken)
    _listed(failures, broken)
    return (min(counts), max(counts)) if counts else (0, 0)


def _same_pod_paths(
    leaves: list[int], up: dict[int, dict[int, int]], backend: str
) -> list[tuple[tuple[int, int], int]]:
    """Leaf-spine-leaf path counts for every pair of ``leaves``."""
    if len(leaves) < 2:
        return []
    if backend == "scipy":
        import numpy as np

        spines = sorted({s for leaf in leaves for s in up.get(leaf, {})})
        col = {s: j for j, s in enumerate(spines)}
        mat = np.zeros((len(leaves), max(1, len(spines))), dtype=np.int64)
        for i, leaf in enumerate(leaves):
            for s, n in up.get(leaf, {}).items():
                mat[i, col[s]] = n
        prod = mat @ mat.T
        rows, cols = np.triu_indices(len(leaves), k=1)
        return [
            ((leaves[i], leaves[j]), int(v))
            for i, j, v in zip(rows.tolist(), cols.tolist(), prod[rows, cols].tolist(), strict=True)
        ]
    out = []
    for k, a in enumerate(leaves):
        ua = up.get(a, {})
        for b in leaves[k + 1 :]:
            ub = up.get(b, {})
            out.append(((a, b), sum(n * ub.get(s, 0) for s, n in ua.items())))
    return out
