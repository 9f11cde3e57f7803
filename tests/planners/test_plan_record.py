"""The stored plan parsed once into typed promises: what acceptance holds a cluster to."""

from __future__ import annotations

from tests.conftest import EXAMPLES
from velyrix.declarations import loader
from velyrix.planners import plan as planner
from velyrix.planners.plan_record import ClusterPlan


def test_an_example_plan_gives_its_fabric_and_storage_promises_and_round_trips() -> None:
    spec = loader.load(EXAMPLES / "acme-405b.tf").clusters[0]
    document = planner.plan_cluster(spec)
    plan = ClusterPlan.from_dict(document)
    assert plan.fabric is not None and plan.storage is not None
    assert plan.fabric.link_gbps == float(document["fabric_plan"]["compute"]["link_gbps"]) > 0
    assert plan.fabric.gpus == spec.node_count * 8
    assert plan.storage.expected_write_gb_s == document["storage_plan"]["expected_write_gb_s"]
    assert plan.to_dict() == document


def test_a_plan_without_sections_promises_nothing() -> None:
    plan = ClusterPlan.from_dict({})
    assert (plan.fabric, plan.storage, plan.to_dict()) == (None, None, {})
    assert ClusterPlan.from_dict(None).fabric is None
