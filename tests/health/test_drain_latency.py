"""On the twin: an injected fatal XID drains the node within one agent poll interval plus 2 s (wall time)."""

from __future__ import annotations

import threading
import time

from velyrix.agent.checks.monitor import HealthMonitor
from velyrix.agent.collectors.sim import SimCollector
from velyrix.fleet.drivers.sim import Fault, SimClock, SimRegion
from velyrix.health.drains import InMemorySeam
from velyrix.health.ladder import Action

POLL_S = 1.0


def test_fatal_xid_drains_the_node_within_one_poll_interval_plus_2_s():
    region = SimRegion.build("us-east-1", {"hgx-h200-8g": 1}, seed=5, clock=SimClock(speed=1.0))
    node = next(iter(region.nodes.values()))
    node.load_pct = 90.0
    seam = InMemorySeam(clock=time.monotonic)
    monitor = HealthMonitor(
        node.hostname, SimCollector(node, region), seam, poll_interval_s=POLL_S, clock=region.clock.now
    )
    worker = threading.Thread(target=monitor.run, daemon=True)
    worker.start()
    try:
        time.sleep(1.5 * POLL_S)  # a few healthy polls first
        assert not seam.is_drained(node.hostname)
        injected = time.monotonic()
        region.inject(node.hostname, Fault("xid", gpu=4, xid=79))
        deadline = injected + POLL_S + 2.0
        while time.monotonic() < deadline and not seam.is_drained(node.hostname):
            time.sleep(0.01)
        drained_at = seam.first_drain_s(node.hostname)
    finally:
        monitor.stop.set()
        worker.join(5.0)
    assert drained_at is not None, "node was not drained"
    latency = drained_at - injected
    print(f"fatal XID -> drained in {latency:.3f} s (poll interval {POLL_S} s)")
    assert latency <= POLL_S + 2.0, f"drained {latency:.2f} s after the XID"
    reason = seam.holders(node.hostname)["health"]
    assert reason.startswith("velyrix:health: REBOOT") and "xid:79:gpu4" in reason
    assert [e.op for e in seam.events] == ["drain", "reboot"]
    assert monitor.last.action is Action.REBOOT
