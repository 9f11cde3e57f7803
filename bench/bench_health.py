"""Cost of one health verdict against the cost of reading the node it judges.

On one twin node (8 H200 GPUs, 8 IB ports, 8 NVMe drives) with 24 h of hourly samples, some XIDs and a
repair history, rounds alternate: (a) the agent's collection (``SimCollector.collect``) and (b) the
engine's verdict (``Engine.evaluate``), medians of the same run. Target: a verdict on a day of history
costs at most 10 ms, i.e. under 0.02% of the agent's 60 s poll; the ratio to the twin's collection (an
attribute copy, far cheaper than NVML) is reported for scale.
"""

from __future__ import annotations

import statistics
import time

from velyrix.agent.checks import convert
from velyrix.agent.collectors.sim import SimCollector
from velyrix.fleet.drivers.sim import Fault, SimRegion
from velyrix.health import evidence as ev
from velyrix.health.engine import Engine

ROUNDS = 30
INNER = 50


def main() -> None:
    region = SimRegion.build("us-east-1", {"hgx-h200-8g": 1}, seed=1)
    node = next(iter(region.nodes.values()))
    node.load_pct = 90.0
    collector = SimCollector(node, region)
    region.inject(node.hostname, Fault("ecc_dbe", gpu=1), precursor_s=12 * 3600.0)
    samples = []
    for h in range(25):
        region.advance(3600.0)
        samples.append(convert.counter_sample(collector.collect(), h * 3600.0))
    xids = convert.xid_events(collector.collect())
    repairs = [ev.RepairEvent(3600.0 * h, "reboot") for h in (2, 9)]
    evidence = ev.Evidence.build(node.hostname, 24 * 3600.0, xids=xids, samples=samples, repairs=repairs)
    engine = Engine()
    verdict = engine.evaluate(evidence)
    collect_s, evaluate_s = [], []
    for _ in range(ROUNDS):
        t = time.perf_counter()
        for _ in range(INNER):
            collector.collect()
        collect_s.append((time.perf_counter() - t) / INNER)
        t = time.perf_counter()
        for _ in range(INNER):
            engine.evaluate(evidence)
        evaluate_s.append((time.perf_counter() - t) / INNER)
    c, e = statistics.median(collect_s), statistics.median(evaluate_s)
    print(f"verdict: {verdict.action.name} ({len(verdict.reasons)} reasons, {len(samples)} samples, {len(xids)} XIDs)")
    print(
        f"collect median {c * 1e3:.3f} ms, evaluate median {e * 1e3:.3f} ms, ratio evaluate/collect {e / c:.1f}; "
        f"target evaluate <= 10 ms: {'met' if e <= 0.010 else 'MISSED'}; verdicts per second per core: {1 / e:,.0f}"
    )


if __name__ == "__main__":
    main()
