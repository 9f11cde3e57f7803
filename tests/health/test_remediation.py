"""Verdicts wired to the fleet: drains by source, quarantine replaced from spares, RMA, NOC incidents."""

from __future__ import annotations

import pytest

from velyrix import errors
from velyrix.fleet import states
from velyrix.health import evidence as ev
from velyrix.health.drains import InMemorySeam
from velyrix.health.engine import Engine
from velyrix.ops.remediation.remediator import FleetNode, Remediator


def _fleet(spares=1):
    nodes = {f"n{i}": FleetNode(f"n{i}", "hgx-h200-8g", cluster="acme" if i < 4 else None) for i in range(4 + spares)}
    return Remediator(
        InMemorySeam(clock=lambda: 0.0),
        nodes,
        spares={"hgx-h200-8g": [f"n{i}" for i in range(4, 4 + spares)]},
        clusters={"acme": ["n0", "n1", "n2", "n3"]},
        clock=lambda: 5.0,
    )


def _verdict(node, **gpu0):
    sample = ev.CounterSample(1.0, gpus=(ev.GpuReading(0, **gpu0),))
    return Engine().evaluate(ev.Evidence.build(node, 2.0, samples=[sample]))


def test_remap_failure_quarantines_replaces_from_spare_and_opens_rma():
    fleet = _fleet()
    done = fleet.handle(_verdict("n1", remap_failure=1))
    assert done == ["drain n1", "quarantine n1", "replace n1 with n4 in acme", "rma n1"]
    assert fleet.clusters["acme"] == ["n0", "n4", "n2", "n3"]  # the cluster keeps its size
    assert fleet.nodes["n1"].fleet_stage == states.RMA
    assert fleet.rma[0].reasons == ("remap_failure:gpu0",)
    assert [r.to_state for r in fleet.store.for_node("n1")] == [states.QUARANTINED, states.RMA]
    assert fleet.seam.holders("n1")["health"].startswith("velyrix:health: QUARANTINE")


def test_no_spare_left_opens_a_noc_incident_for_the_cluster():
    fleet = _fleet(spares=0)
    fleet.handle(_verdict("n0", sram_uncorrectable=3))
    fleet.handle(_verdict("n2", remapped_rows_correctable=512))
    [inc] = fleet.noc_book.open_incidents()
    assert inc.cluster == "acme" and inc.nodes == ["n0", "n2"] and inc.priority == "P1"
    assert "2 of 4" in inc.title


def test_drain_after_job_is_released_only_by_health_when_healthy_again():
    fleet = _fleet()
    assert fleet.handle(_verdict("n3", retired_pages=20)) == ["drain n3"]
    with pytest.raises(errors.DrainOwnershipError):
        fleet.seam.undrain("n3", "admin")
    assert fleet.handle(_verdict("n3")) == ["undrain n3"]
    assert not fleet.seam.is_drained("n3")


def test_healthy_verdict_does_nothing():
    fleet = _fleet()
    assert fleet.handle(_verdict("n0")) == [] and fleet.seam.events == []
