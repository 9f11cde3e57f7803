"""Rollouts executed on the twin (accelerated clock, in-process): a good driver over 128 nodes in four tenant
clusters with different windows completes within the windows and the limits; a bad one halts at the staging
pod or the canary and rolls back, in 50 of 50 seeded runs for each effect."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import sqlalchemy as sa

from tests.rollouts.conftest import example_spec
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import noc as models_noc
from velyrix.controlplane.db.models import rollouts as models_rollouts
from velyrix.fleet.drivers.sim import defects
from velyrix.ops.rollouts import running, service, states
from velyrix.ops.rollouts.journal import utc
from velyrix.testing import rollouts as tr

NEW = "580.95.05"


def run(region: tr.Region, **changes: Any) -> str:
    spec = example_spec(**changes)
    with region.sessionmaker() as s:
        row, created = service.apply(s, region.world, spec, "test")
        s.commit()
        assert created
        rollout_id = row.id
    return running.drive(region.sessionmaker, rollout_id, region.world, region.advance, poll_s=300.0)


def steps(region: tr.Region) -> list[models_rollouts.RolloutStep]:
    with region.sessionmaker() as s:
        return list(s.scalars(sa.select(models_rollouts.RolloutStep)))


def down_intervals(all_steps: list[models_rollouts.RolloutStep]) -> dict[str, list[tuple[dt.datetime, dt.datetime]]]:
    """Node -> [(drained, returned)] from the journal: recorded drain start to finished return."""
    drains = {(s.key.split("/")[0], s.node): utc(s.started_at) for s in all_steps if s.action == "drain"}
    out: dict[str, list[tuple[dt.datetime, dt.datetime]]] = {}
    for s in all_steps:
        if s.action == "return" and s.finished_at is not None:
            start = drains[(s.key.split("/")[0], s.node)]
            out.setdefault(str(s.node), []).append((start, utc(s.finished_at)))
    return out


def most_at_once(intervals: list[tuple[dt.datetime, dt.datetime]]) -> int:
    events = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals])
    now = best = 0
    for _, d in events:
        now += d
        best = max(best, now)
    return best


def test_a_good_driver_reaches_all_128_nodes_inside_each_tenants_announced_windows(region: tr.Region) -> None:
    assert run(region) == states.COMPLETED
    assert {n.firmware["driver"] for n in region.sim.nodes.values()} == {NEW}
    assert len(region.driver.installs) == 128 == len(set(region.driver.installs))  # no node upgraded twice
    journal = steps(region)
    with region.sessionmaker() as s:
        plan = s.scalars(sa.select(models_rollouts.Rollout)).one().plan
        clusters = {c.id: c.name for c in s.scalars(sa.select(models.Cluster))}
        windows: dict[str, list[models_noc.MaintenanceWindow]] = {}
        for w in s.scalars(sa.select(models_noc.MaintenanceWindow)):
            windows.setdefault(clusters[w.cluster_id], []).append(w)
    owner = {h: name for name, hosts in region.clusters.items() for h in hosts}
    down = down_intervals(journal)
    touched_tenant_nodes = 0
    for node, spans in down.items():
        if node not in owner:
            continue
        for a, b in spans:  # drained to returned lies inside one announced window, told 5 days ahead
            inside = [
                w
                for w in windows[owner[node]]
                if utc(w.starts_at) <= a
                and b <= utc(w.ends_at)
                and utc(w.announced_at) <= utc(w.starts_at) - dt.timedelta(days=5)
            ]
            assert inside, f"{node} of {owner[node]} touched outside its windows: {a} .. {b}"
            touched_tenant_nodes += 1
    assert touched_tenant_nodes == 96
    # the four clusters' windows differ, and each cluster's waves ran in its own
    starts = {name: {utc(w.starts_at).strftime("%a %H:%M") for w in ws} for name, ws in windows.items()}
    assert len({frozenset(v) for v in starts.values()}) == 4
    # never more than max_unavailable (10% of 128 = 13) down at once; per cluster at most 10% of 24 = 3
    assert most_at_once([iv for spans in down.values() for iv in spans]) <= plan["max_unavailable_nodes"] == 13
    for hosts in region.clusters.values():
        assert most_at_once([iv for h in hosts for iv in down[h]]) <= 3
    # every cluster at its size after each wave: nothing drained when a wave finishes, and the cluster
    # promised at full size (initech) got a spare for every node it lent
    for s in journal:
        if s.action == "wave":
            t = utc(s.finished_at or s.started_at)
            assert not [n for spans in down.values() for a, b in spans for n in [a] if a < t < b]
    lends = [s for s in journal if s.action == "lend"]
    assert len(lends) == 24 and all(s.detail["spare"] for s in lends)
    assert all(not region.world.seam.holders(h) for h in region.sim.nodes)


@pytest.mark.slow
@pytest.mark.parametrize("effect", ["xid:79", "slow_gemm:0.5"])
def test_a_bad_driver_halts_at_staging_or_canary_and_rolls_back_in_50_of_50_seeded_runs(effect: str) -> None:
    halted_at: set[str] = set()
    for seed in range(50):
        region = tr.build(seed)
        try:
            region.driver.defects.ship(defects.parse("gpu_driver", NEW, effect))
            assert run(region) == states.ROLLED_BACK, seed
            bad = {n for n, _, v in region.driver.installs if v == NEW}
            production = {h for hosts in region.clusters.values() for h in hosts}
            assert not bad & production, f"seed {seed}: production nodes got the bad driver"
            assert {n.firmware["driver"] for n in region.sim.nodes.values()} == {"570.133.20"}
            assert all(not region.world.seam.holders(h) for h in region.sim.nodes)
            with region.sessionmaker() as s:
                report = service.status(s, service.get(s, "us-east-1", "driver_580"))
            halted_at.add(report["halted_at"]["stage"])
            reasons = str(report["halted_at"]["gate"]["failed_nodes"])
            assert ("XID 79" in reasons) if effect.startswith("xid") else ("gemm" in reasons), reasons
            assert len(report["rolled_back_nodes"]) == len(bad)
        finally:
            region.close()
    assert halted_at <= {"staging", "canary"}
