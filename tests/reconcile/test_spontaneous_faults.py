"""``velyrix up --spontaneous-faults`` fast-forwarded (``--agent-step``): the twin's own failures at the
catalog's cause mix, each seen by its node's agent and judged by the control plane; precursors are acted on
before the fault; ``velyrix report proactive`` says how many (``velyrix.ops.proactive``). The 30-day,
256-node run is ``bench/bench_proactive.py`` (docs/benchmarks.md); this is the same path, small."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.reconcile.test_node_reports_e2e import CLUSTER, Up
from velyrix.fleet.drivers.sim import Fault
from velyrix.fleet.drivers.sim.region import SimEvent
from velyrix.ops import proactive, twin_agents

H = 3600.0


def test_the_share_counts_precursors_caught_before_their_fault_and_every_fault_detected() -> None:
    ecc, xid = Fault("ecc_dbe", gpu=1), Fault("xid", xid=79, gpu=0)
    events = [
        SimEvent(10 * H, "caught", "precursor", ecc, "gpu_hbm3_memory", due_s=16 * H),
        SimEvent(10 * H, "late", "precursor", ecc, "gpu_hbm3_memory", due_s=16 * H),
        SimEvent(16 * H, "late", "fault", ecc, "gpu_hbm3_memory"),
        SimEvent(20 * H, "direct", "fault", xid, "faulty_gpu"),
        SimEvent(20 * H, "missed", "fault", xid, "faulty_gpu"),
        SimEvent(20 * H, "already-out", "fault", xid, "faulty_gpu"),
        SimEvent(30 * H, "pending", "precursor", ecc, "gpu_hbm3_memory", due_s=36 * H),
        SimEvent(5 * H, "caught", "fault", Fault("xid", xid=13), None),  # injected by hand: not a failure
    ]
    prod = [(0.0, "production")]
    nodes = {
        "caught": proactive.NodeHistory(prod + [(13 * H, "quarantined")], [13 * H]),
        "late": proactive.NodeHistory(prod + [(16.5 * H, "quarantined")], [16.5 * H]),
        "direct": proactive.NodeHistory(list(prod), [20.5 * H]),
        "missed": proactive.NodeHistory(list(prod), [19 * H]),  # an action before the fault is no detection
        "already-out": proactive.NodeHistory(prod + [(2 * H, "quarantined")], [2 * H]),
        "pending": proactive.NodeHistory(list(prod), []),
    }
    out = proactive._outcomes(proactive.failures(events), nodes, 32 * H)
    assert (out["failures"], out["detected"], out["precursor_failures"], out["caught_before_fault"]) == (4, 3, 2, 1)
    assert out["proactive_share"] == 0.5 and out["caught_share_of_all_failures"] == 0.25
    assert out["detection_s"] == {"median": 0.5 * H, "max": 0.5 * H}  # 'late' and 'direct' both after 30 min
    assert [m["hostname"] for m in out["missed"]] == ["missed"]
    assert out["not_counted"] == {"began_out_of_service": 1, "due_after_now": 1}


def test_up_with_spontaneous_faults_acts_on_precursors_before_the_fault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, velyrix: Any
) -> None:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    up = Up(f"sqlite:///{tmp_path / 'velyrix.db'}", twin_nodes=24)
    try:
        cid = up.http.post("/v1/clusters", headers=up.tenant, json={**CLUSTER, "node_count": 16}).json()["id"]
        up.wait_phase(cid, "Ready")
        sim = up.runtime.sim
        assert sim is not None
        sim.enable_spontaneous(True, rate_per_1000_node_days=120.0)  # ~8 failures in 3 days on 24 nodes
        until_s = sim.clock.now() + 3 * 86400.0
        agents = twin_agents.TwinAgents(
            up.app.state.sessionmaker, sim, up.url, interval_s=0.05, step_s=H, until_s=until_s
        )
        agents.start()  # what `velyrix up --agent-step 3600 --until-days N` runs
        try:
            deadline = time.monotonic() + 240
            while sim.clock.now() < until_s - 1e-6:
                assert time.monotonic() < deadline, f"the twin reached only {sim.clock.now() / H:.0f} h"
                time.sleep(0.2)
            time.sleep(1.0)  # the last poll round is judged
        finally:
            agents.stop()
        monkeypatch.setenv("VELYRIX_ENDPOINT", up.url)
        monkeypatch.setenv("VELYRIX_API_KEY", up.operator_key)
        shown = velyrix("report", "proactive", "--json")
        assert shown.exit_code == 0, shown.stderr
        report = json.loads(shown.stdout)
        fired = [e for e in sim.events if e.cause is not None]
        assert fired and report["failures"] >= 3, report
        assert report["detected"] == report["failures"] and report["missed"] == []  # every fault detected
        assert report["precursor_failures"] >= 1
        assert report["caught_before_fault"] >= 0.75 * report["precursor_failures"], report
        skipped = sum(a.skipped for a in agents.agents.values())
        assert skipped > 0  # quiet polls were not sent (heartbeat), yet nothing was missed
        text = velyrix("report", "proactive")
        assert text.exit_code == 0 and "proactive share" in text.stdout
    finally:
        up.stop()


def test_fast_forward_options_are_checked(velyrix: Any) -> None:
    bad = velyrix("up", "--agent-step", "0")
    assert bad.exit_code == 2 and "--agent-step must be > 0" in bad.stderr
    alone = velyrix("up", "--until-days", "30")
    assert alone.exit_code == 2 and "--until-days needs --agent-step" in alone.stderr
