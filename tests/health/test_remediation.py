"""The ladder as the control plane carries it out (``Remediator``): drains by source, quarantine handed to the
required replacer, RMA criteria, the release of a drain. The replacer here is a fake that honours the
``Replacer`` protocol (take the node out, put a spare in); the real one (``reconcile.cluster.heal``) runs in
tests/reconcile."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from velyrix import errors
from velyrix.fleet import states
from velyrix.health import evidence as ev
from velyrix.health.drains import InMemorySeam
from velyrix.health.engine import Engine
from velyrix.ops.remediation.remediator import Remediator, takes_out


@dataclass
class Node:
    name: str
    node_type: str = "hgx-h200-8g"
    provisioning_state: str = states.ACTIVE
    fleet_stage: str = states.PRODUCTION


@dataclass
class FakeReplacer:
    """Honours ``Replacer``: swaps the node for the first spare, or reports that none is left."""

    members: list[str]
    spares: list[str]
    calls: list[str] = field(default_factory=list)

    def __call__(self, node: Any) -> list[str]:
        self.calls.append(node.name)
        if not self.spares:
            return [f"incident for {node.name}"]
        spare = self.spares.pop(0)
        self.members[self.members.index(node.name)] = spare
        return [f"replace {node.name} with {spare} in acme"]


def _fleet(spares: int = 1) -> tuple[Remediator, FakeReplacer]:
    nodes = {f"n{i}": Node(f"n{i}") for i in range(4 + spares)}
    replacer = FakeReplacer(["n0", "n1", "n2", "n3"], [f"n{i}" for i in range(4, 4 + spares)])
    return Remediator(InMemorySeam(clock=lambda: 0.0), nodes, replacer, clock=lambda: 5.0), replacer


def _verdict(node: str, **gpu0: Any) -> Any:
    sample = ev.CounterSample(1.0, gpus=(ev.GpuReading(0, **gpu0),))
    return Engine().evaluate(ev.Evidence.build(node, 2.0, samples=[sample]))


def test_remap_failure_quarantines_hands_the_node_to_the_replacer_and_opens_rma() -> None:
    fleet, replacer = _fleet()
    done = fleet.handle(_verdict("n1", remap_failure=1))
    assert done == ["drain n1", "quarantine n1", "replace n1 with n4 in acme", "rma n1"]
    assert replacer.members == ["n0", "n4", "n2", "n3"]  # the cluster keeps its size
    assert fleet.nodes["n1"].fleet_stage == states.RMA
    assert fleet.rma[0].reasons == ("remap_failure:gpu0",)
    assert [r.to_state for r in fleet.store.for_node("n1")] == [states.QUARANTINED, states.RMA]
    assert fleet.seam.holders("n1")["health"].startswith("velyrix:health: QUARANTINE")
    assert fleet.handle(_verdict("n1", remap_failure=1)) == []  # nothing left to do
    assert replacer.calls == ["n1"]


def test_a_fatal_uncorrectable_ecc_takes_the_node_out_a_degraded_remap_resets_in_place() -> None:
    fatal, degraded = _verdict("n0", ecc_dbe_volatile=1), _verdict("n2", remap_pending=1)
    assert fatal.action.name == "RESET_GPU" and str(fatal.level) == "fatal" and takes_out(fatal)
    assert degraded.action.name == "RESET_GPU" and not takes_out(degraded)
    fleet, replacer = _fleet()
    assert fleet.handle(fatal) == ["drain n0", "quarantine n0", "replace n0 with n4 in acme"]
    assert fleet.handle(degraded) == ["drain n2"]  # the caller resets the GPU through the driver
    assert fleet.nodes["n2"].fleet_stage == states.PRODUCTION and replacer.calls == ["n0"]


def test_drain_after_job_replaces_and_is_never_released_while_quarantined() -> None:
    fleet, replacer = _fleet()
    assert fleet.handle(_verdict("n3", retired_pages=20)) == ["drain n3", "quarantine n3", "replace n3 with n4 in acme"]
    with pytest.raises(errors.DrainOwnershipError):
        fleet.seam.undrain("n3", "admin")
    assert fleet.handle(_verdict("n3")) == []  # quarantine is released by a person or the repair flow
    assert fleet.seam.is_drained("n3")


def test_a_reset_drain_is_released_by_health_when_healthy_again() -> None:
    fleet, _ = _fleet()
    assert fleet.handle(_verdict("n2", remap_pending=1)) == ["drain n2"]
    assert fleet.handle(_verdict("n2")) == ["undrain n2"]
    assert not fleet.seam.is_drained("n2")


def test_no_spare_left_is_the_replacers_answer() -> None:
    fleet, _ = _fleet(spares=0)
    assert fleet.handle(_verdict("n0", sram_uncorrectable=3))[-2:] == ["incident for n0", "rma n0"]


def test_healthy_verdict_does_nothing() -> None:
    fleet, replacer = _fleet()
    assert fleet.handle(_verdict("n0")) == [] and fleet.seam.events == [] and replacer.calls == []
