"""VALIDATING: per-node acceptance (replacing nodes that fail), then the cluster tests against the fabric and
storage plans, then delivery: the signed report, nodes active, phase Ready or Degraded."""

from __future__ import annotations

import dataclasses
from typing import Any

from velyrix import catalog
from velyrix.controlplane import status
from velyrix.controlplane.db import models
from velyrix.controlplane.evidence import integrity
from velyrix.controlplane.reconcile import networks, phases, scheduler, signing, volumes
from velyrix.controlplane.reconcile import report as report_mod
from velyrix.controlplane.reconcile.steps import ACTOR, Step, delivered_counts, fail, per_node, set_phase
from velyrix.controlplane.reconcile.store import move
from velyrix.declarations import models as declared_models
from velyrix.fleet import acceptance, states
from velyrix.fleet.drivers import base
from velyrix.planners.plan_record import ClusterPlan


def validating(st: Step) -> None:
    enabled = st.cluster.spec.get("acceptance") or {}
    fabric = st.cluster.spec.get("fabric")
    protocol = catalog.fabric(fabric).protocol if fabric else None
    node_tests = tuple(
        t for t in acceptance.NODE_TESTS if enabled.get(t, True) and declared_models.applies(t, protocol)
    )

    def check(node: models.Node, op: base.Operation) -> str | None:
        results = acceptance.judge_node(node.node_type, op.result, node_tests)
        summary = tuple(report_mod.summarize_node(results))
        st.entries[node.name] = dataclasses.replace(st.entries[node.name], results=summary)
        if acceptance.passed(results):
            return None
        return "acceptance failed: " + "; ".join(acceptance.failures(results))[:1500]

    done = per_node(
        st,
        "storage",
        "accepted",
        "acceptance",
        lambda n: st.driver.run_acceptance(n, request_id=st.rid("acceptance", n), tests=node_tests),
        check,
    )
    if not done or st.rewind:
        return
    names = sorted(st.live())
    cluster_tests = tuple(t for t in acceptance.CLUSTER_TESTS if enabled.get(t, True))
    results: list[acceptance.TestResult] = []
    if cluster_tests and names:
        op = st.driver.run_cluster_tests(
            names,
            request_id=f"{st.cluster.id}/cluster-tests/{st.work.generation}",
            tests=cluster_tests,
            volumes=volumes.ensure(st.session, st.cluster),
            storage_network_gb_s=storage_network(st.cluster),
        )
        if not op.done:
            st.wait()
            return
        if op.status == base.FAILED:
            fail(st, "ClusterTestsFailed", f"cluster tests could not run: {op.error}")
            return
        write, read = expected_storage(st.cluster, len(names))
        results = acceptance.judge_cluster(
            st.cluster.node_type,
            op.result,
            expected_write_gb_s=write,
            expected_read_gb_s=read,
            tests=cluster_tests,
            expected_all_reduce_gb_s=expected_all_reduce(st.cluster),
        )
    if not scheduler.deliver(st, names):  # the Scheduler step: what ``scheduler`` names, on these nodes
        return
    deliver(st, names, [r.to_dict() for r in results])


def expected_all_reduce(cluster: models.Cluster) -> float | None:
    """All-reduce bus bandwidth (GB/s) the fabric plan predicts: each GPU's link, or its share of the
    bisection when the fabric is oversubscribed, times the share NCCL reaches (``acceptance.ALL_REDUCE_SHARE``).
    None when the plan has no fabric section (the judge then uses the node type's NIC)."""
    fabric = ClusterPlan.from_dict(cluster.plan).fabric
    if fabric is None or not fabric.link_gbps or not fabric.gpus:
        return None
    per_gpu_gbps = fabric.link_gbps
    if fabric.bisection_gbps:
        per_gpu_gbps = min(per_gpu_gbps, 2.0 * fabric.bisection_gbps / float(fabric.gpus))
    return round(acceptance.all_reduce_gb_s(per_gpu_gbps), 2)


def storage_network(cluster: models.Cluster) -> float | None:
    """What the cluster's planned storage plane carries (GB/s aggregate), None when the plan has none."""
    fabric = ClusterPlan.from_dict(cluster.plan).fabric
    return fabric.storage_plane_gb_s if fabric is not None else None


def expected_storage(cluster: models.Cluster, nodes: int) -> tuple[float | None, float | None]:
    """What the storage plan predicts for the performance tier (its own section when the plan has one,
    else the tier model at the declared capacity), bounded by what the planned storage plane carries."""
    storage = ClusterPlan.from_dict(cluster.plan).storage
    if storage is not None:
        write, read = storage.expected_write_gb_s, storage.expected_read_gb_s
    else:
        tb = float((cluster.spec.get("storage") or {}).get("parallel_fs_tb") or 0.0)
        if tb <= 0:
            return None, None
        from velyrix.planners import tiers

        perf = tiers.tier_performance("parallel_fs", tb, nodes=nodes, node_type=cluster.node_type)
        write, read = perf.expected_write_gb_s, perf.expected_read_gb_s
    cap = storage_network(cluster)
    return (write, read) if cap is None else (min(write, cap), min(read, cap))


def deliver(st: Step, names: list[str], cluster_results: list[dict[str, Any]]) -> None:
    nodes = [st.members[n] for n in names]
    doc = report_mod.build(
        st.cluster,
        nodes,
        {n: list(st.entries[n].results or ()) for n in names},
        cluster_results,
        list(st.work.replacements),
        delivered_at=models.utcnow().isoformat(),
    )
    doc["integrity"] = integrity.section(st.cluster, nodes, networks.ensure(st.session, st.cluster))
    signed = signing.sign(doc, st.cluster.region)
    st.session.add(
        models.AcceptanceReport(
            tenant_id=st.cluster.tenant_id,
            cluster_id=st.cluster.id,
            region=st.cluster.region,
            passed=doc["passed"],
            report=signed,
        )
    )
    st.work.cluster_results = cluster_results
    for node in nodes:
        if node.provisioning_state == states.PROVISIONING:
            move(st.session, node, states.ACTIVE, actor=ACTOR, reason=f"delivered in {st.cluster.name}")
    short = len(names) < st.cluster.node_count
    failed_cluster = [r for r in cluster_results if not r["passed"]]
    status.set_condition(
        st.cluster,
        "AcceptancePassed",
        doc["passed"],
        "AcceptanceReport",
        delivered_counts(len(names), st.cluster.node_count, st.work.replacements),
    )
    if short or failed_cluster:
        why = (
            f"{len(names)} of {st.cluster.node_count} nodes delivered (no spare left)"
            if short
            else "; ".join(
                f"{r['test']} {r['subject']}: {r['measured']} {r['unit']} < {r['expected']}" for r in failed_cluster
            )
        )
        status.set_condition(st.cluster, "Ready", False, "Degraded", why)
        set_phase(st, phases.DEGRADED, why)
    else:
        status.set_condition(st.cluster, "Ready", True, "AcceptancePassed", "every test passed")
        set_phase(st, phases.READY, f"{len(names)} nodes delivered and validated")
