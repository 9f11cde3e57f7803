"""Fabric planning plus full graph verification at 4,096 and 32,768 GPUs (hgx-h200-8g, infiniband-ndr,
both three tiers), alternated in one run; the figure is the median of per-round ratios large/small.
Target (issue 3): the 8x larger fabric costs at most 10x the time.

Measured twice: with the scipy backend at both sizes (the algorithm's scaling on equal footing), and
with ``backend="auto"`` (what ``velyrix fabric`` does: pure Python below 400 switches). Also: the
fabric section's cost inside ``velyrix plan`` for the seed cluster (64 nodes).
"""

from __future__ import annotations

import statistics
import time

from velyrix.planners import fabric, fabric_section, fabric_verify

SMALL_NODES, LARGE_NODES = 512, 4096  # 4,096 and 32,768 GPUs
ROUNDS = 7


def _plan_and_verify(nodes: int, backend: str) -> float:
    start = time.perf_counter()
    plan = fabric.plan_fabric("hgx-h200-8g", nodes, "infiniband-ndr")
    result = fabric_verify.verify(plan, backend=backend)
    elapsed = time.perf_counter() - start
    if not result.ok or not result.nonblocking:
        raise AssertionError(f"{nodes} nodes failed verification: {result.failures[:3]}")
    return elapsed


def _series(backend: str) -> None:
    small, large, ratios = [], [], []
    for _ in range(ROUNDS):
        s = _plan_and_verify(SMALL_NODES, backend)
        g = _plan_and_verify(LARGE_NODES, backend)
        small.append(s)
        large.append(g)
        ratios.append(g / s)
    print(
        f"[{backend}] 4,096 GPUs: median {statistics.median(small) * 1000:.1f} ms; "
        f"32,768 GPUs: median {statistics.median(large) * 1000:.1f} ms; "
        f"median ratio {statistics.median(ratios):.2f} (target <= 10)"
    )


def main() -> None:
    _plan_and_verify(SMALL_NODES, "scipy")  # import scipy and warm caches outside the timings
    _plan_and_verify(LARGE_NODES, "scipy")
    _series("scipy")
    _series("auto")
    seed = []
    for _ in range(20):
        start = time.perf_counter()
        fabric_section.fabric_section("hgx-h200-8g", 64, "infiniband-ndr")
        seed.append(time.perf_counter() - start)
    print(
        f"fabric section of velyrix plan (64 nodes, verified, pure Python): median "
        f"{statistics.median(seed) * 1000:.2f} ms"
    )


if __name__ == "__main__":
    main()
