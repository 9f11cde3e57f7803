"""The SLA month report after a rollout excludes exactly the maintenance windows the rollout announced (told
at least the contract's notice ahead), no more and no less; and a plan whose notice is shorter than a
tenant's contract notice is blocked, since its windows would count."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa

from tests.rollouts.conftest import example_spec
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import noc as models_noc
from velyrix.ops.rollouts import running, service, states
from velyrix.ops.rollouts.journal import utc
from velyrix.ops.sla import reports
from velyrix.testing import rollouts as tr


def test_the_month_report_excludes_exactly_the_windows_the_rollout_announced() -> None:
    region = tr.build(2, history=True)
    try:
        with region.sessionmaker() as s:
            row, _ = service.apply(s, region.world, example_spec(), "test")
            s.commit()
            rollout_id = row.id
        final = running.drive(region.sessionmaker, rollout_id, region.world, region.advance, poll_s=300.0)
        assert final == states.COMPLETED
        month_start, month_end = dt.datetime(2026, 12, 1, tzinfo=dt.UTC), dt.datetime(2027, 1, 1, tzinfo=dt.UTC)
        with region.sessionmaker() as s:
            tenants = {t.name: t.id for t in s.scalars(sa.select(models.Tenant))}
            windows = list(s.scalars(sa.select(models_noc.MaintenanceWindow)))
            assert windows and all("driver_580" in w.label for w in windows)
            for name, tenant_id in tenants.items():
                report = reports.build(s, tenant_id, "2026-12")
                (cluster,) = report["clusters"]
                mine = [w for w in windows if w.tenant_id == tenant_id]
                minutes = sum(  # each window's minutes inside December
                    max(
                        0.0, (min(utc(w.ends_at), month_end) - max(utc(w.starts_at), month_start)).total_seconds() // 60
                    )
                    for w in mine
                )
                assert cluster["excluded_minutes"] == minutes > 0, name
                assert all(w["excluded"] for w in cluster["maintenance_windows"])
                assert len(cluster["maintenance_windows"]) == sum(1 for w in mine if utc(w.starts_at) < month_end)
                assert cluster["counted_minutes"] == 31 * 24 * 60 - minutes
    finally:
        region.close()


def test_a_notice_shorter_than_a_tenants_contract_blocks_the_plan(region: tr.Region) -> None:
    spec = example_spec(notice_hours=72)  # the contracts ask 5 days
    with region.sessionmaker() as s:
        planned = service.plan(s, region.world, spec)
        codes = {(b["code"], b["cluster"]) for b in planned["blocks"]}
        assert {c for code, c in codes if code == "notice_shorter_than_contract"} == set(region.clusters)
        with pytest.raises(service.RolloutBlockedError):
            service.apply(s, region.world, spec, "test")
        assert s.scalars(sa.select(models_noc.MaintenanceWindow)).first() is None
