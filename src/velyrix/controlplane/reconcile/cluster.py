"""One reconcile step of one cluster (STYLE.md #7): read the cluster, its nodes and its bookkeeping, take the
next steps the phase calls for through the driver, save. A function of the database and the driver only, so a
step after a crash picks up where the last committed one left off; requests are keyed by cluster, node,
allocation and attempt, so resubmitting one is safe.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import catalog, errors
from velyrix.controlplane import status
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import allocation, networks, phases, signing, tables, teardown, volumes
from velyrix.controlplane.reconcile import report as report_mod
from velyrix.controlplane.reconcile.store import move
from velyrix.fleet import acceptance, states
from velyrix.fleet.drivers import base

ACTOR = f"reconciler/cluster@{phases.REPLICA}"
_ORDER = {s: i for i, s in enumerate(phases.STEPS)}


@dataclass
class Step:
    """Everything one reconcile step works on. ``entries`` is a working copy of ``work.nodes``."""

    session: orm.Session
    cluster: models.Cluster
    work: tables.ClusterWork
    driver: base.Driver
    settings: phases.ReconcileSettings
    members: dict[str, models.Node] = field(default_factory=dict)
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    requeue_s: float | None = None
    rewind: bool = False

    def wait(self, seconds: float | None = None) -> None:
        """Ask to be called again after ``seconds`` (default: the poll interval)."""
        s = self.settings.poll_s if seconds is None else seconds
        self.requeue_s = s if self.requeue_s is None else min(self.requeue_s, s)

    def rid(self, kind: str, name: str) -> str:
        e = self.entries[name]
        return f"{self.cluster.id}/{e.get('seq', 0)}/{kind}/{name}/{e.get('attempt', 0)}"

    def live(self) -> dict[str, dict[str, Any]]:
        """Entries of nodes that belong to the cluster (not being released)."""
        return {n: e for n, e in self.entries.items() if not e.get("release")}


def spec_digest(spec: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()


def work_of(session: orm.Session, cluster: models.Cluster) -> tables.ClusterWork:
    """The cluster's bookkeeping row (created on first use)."""
    work = session.scalar(sa.select(tables.ClusterWork).where(tables.ClusterWork.cluster_id == cluster.id))
    if work is None:
        work = tables.ClusterWork(cluster_id=cluster.id, spec_digest="", generation=1, nodes={}, replacements=[],
                                  cluster_results=[], network={}, retries=0, delete_volumes=False,
                                  phase_started_at=models.utcnow())
        session.add(work)
    return work


def set_phase(st: Step, phase: str, reason: str) -> None:
    if st.cluster.phase != phase:
        status.set_phase(st.cluster, phase, actor=ACTOR, reason=reason)
        st.work.phase_started_at = models.utcnow()


def fail(st: Step, reason: str, message: str) -> None:
    """Settle the cluster in FAILED (or DEGRADED when it already holds delivered nodes) with ``reason``."""
    delivered = any(e["step"] == "accepted" for e in st.live().values())
    status.set_condition(st.cluster, "Ready", False, reason, message)
    status.add_event(st.cluster, reason, message, "Warning")
    st.work.last_error = message
    set_phase(st, phases.DEGRADED if delivered else phases.FAILED, message)


# --- phases --------------------------------------------------------------------------------------

def _pending(st: Step) -> None:
    set_phase(st, phases.ALLOCATING, "reconciling the declared spec")


def _allocating(st: Step) -> None:
    live = st.live()
    for name in st.members:  # adopt nodes whose entry was lost (should not happen; keeps the step total)
        if name not in st.entries:
            st.entries[name] = {"step": "allocated", "attempt": 0, "seq": st.work.generation}
            live[name] = st.entries[name]
    want, have = st.cluster.node_count, len(live)
    if have < want:
        try:
            new = allocation.allocate(st.session, st.cluster, want - have, actor=ACTOR)
        except errors.CapacityError as exc:
            fail(st, "InsufficientCapacity", exc.message)
            return
        seq = st.work.generation
        st.work.generation = seq + 1
        for node in new:
            st.members[node.name] = node
            st.entries[node.name] = {"step": "allocated", "attempt": 0, "seq": seq}
        status.add_event(st.cluster, "NodesAllocated", f"{len(new)} nodes allocated")
    elif have > want:
        def keep_score(name: str) -> tuple[int, int, int]:
            pos = (st.members[name].hardware or {}).get("position") or {}
            return (_ORDER[live[name]["step"]], -int(pos.get("su", 0)), -int(pos.get("slot", 0)))

        for name in sorted(live, key=keep_score)[: have - want]:
            st.entries[name]["release"] = "scale down"
        status.add_event(st.cluster, "ScaleDown", f"releasing {have - want} nodes")
        teardown.process_releases(st)
    status.set_condition(st.cluster, "NodesAllocated", True, "Allocated", f"{want} nodes")
    set_phase(st, phases.PROVISIONING, f"{want} nodes allocated")


def _on_failed_op(st: Step, name: str, kind: str, op: base.Operation) -> None:
    entry = st.entries[name]
    if op.retryable and entry.get("attempt", 0) + 1 < st.settings.max_attempts:
        entry["attempt"] = entry.get("attempt", 0) + 1
        status.add_event(st.cluster, "Retry", f"{kind} on {name} failed ({op.error}); retrying", "Warning")
        st.wait(st.settings.retry_backoff_s * 2 ** entry["attempt"])
        return
    replace(st, name, f"{kind} failed: {op.error}")


def replace(st: Step, name: str, reason: str) -> None:
    """Take ``name`` out of the cluster (quarantined, then deprovisioned and sanitized) and allocate a
    replacement near it; the replacement goes through every phase again."""
    node = st.members[name]
    entry = st.entries[name]
    entry["release"], entry["failed"] = "replaced", reason
    node.last_error = reason[:2000]
    if node.fleet_stage == states.PRODUCTION:
        move(st.session, node, states.QUARANTINED, actor=ACTOR, reason=reason[:500])
    pos = (node.hardware or {}).get("position") or {}
    record: dict[str, Any] = {"failed": name, "failed_serial": (node.hardware or {}).get("serial"),
                              "reason": reason, "phase": st.cluster.phase, "at": models.utcnow().isoformat(),
                              "replacement": None}
    try:
        (new,) = allocation.allocate(st.session, st.cluster, 1, actor=ACTOR, replacement=True,
                                     near_su=pos.get("su"))
    except errors.CapacityError:
        status.add_event(st.cluster, "NoSpare", f"{name} failed ({reason}); no spare left to replace it", "Warning")
    else:
        seq = st.work.generation
        st.work.generation = seq + 1
        st.members[new.name] = new
        st.entries[new.name] = {"step": "allocated", "attempt": 0, "seq": seq}
        record["replacement"] = new.name
        st.rewind = True
        status.add_event(st.cluster, "NodeReplaced", f"{name} replaced by {new.name}: {reason}", "Warning")
    st.work.replacements = [*st.work.replacements, record]


def _per_node(st: Step, from_step: str, to_step: str, kind: str,
              submit: Callable[[str], base.Operation],
              check: Callable[[models.Node, base.Operation], str | None] | None = None) -> bool:
    """Run ``submit`` for every live node at ``from_step``; on success (and ``check`` passing) move it to
    ``to_step``. Returns True when every live node is at ``to_step`` or beyond."""
    for name, entry in list(st.live().items()):
        if entry["step"] != from_step:
            continue
        op = submit(name)
        if not op.done:
            st.wait()
            continue
        if op.status == base.FAILED:
            _on_failed_op(st, name, kind, op)
            continue
        problem = check(st.members[name], op) if check else None
        if problem:
            replace(st, name, problem)
            continue
        entry["step"] = to_step
    return all(_ORDER[e["step"]] >= _ORDER[to_step] for e in st.live().values())


def _provisioning(st: Step) -> None:
    baseline = catalog.region(st.cluster.region).firmware_baseline
    for name, entry in st.live().items():
        node = st.members[name]
        if entry["step"] == "allocated" and node.provisioning_state == states.ALLOCATED:
            move(st.session, node, states.PROVISIONING, actor=ACTOR, reason=f"provisioning for {st.cluster.name}")

    def check(node: models.Node, op: base.Operation) -> str | None:
        running = op.result.get("firmware", {})
        drift = {k: (running.get(k), v) for k, v in baseline.items() if running.get(k) != v}
        if drift:
            return "firmware differs from the signed baseline after flashing: " + ", ".join(
                f"{k} {have} != {want}" for k, (have, want) in sorted(drift.items()))
        node.hardware = {**(node.hardware or {}), "firmware": running}
        return None

    done = _per_node(st, "allocated", "provisioned", "provision",
                     lambda n: st.driver.provision(n, image=st.settings.image, firmware=baseline,
                                                   request_id=st.rid("provision", n)), check)
    if done:
        status.set_condition(st.cluster, "Provisioned", True, "ImageAndFirmware",
                             f"image {st.settings.image}, firmware at the {st.cluster.region} baseline")
        set_phase(st, phases.NETWORKING, "image and firmware baseline on every node")


def _networking(st: Step) -> None:
    try:
        net = networks.ensure(st.session, st.cluster)
    except errors.CapacityError as exc:
        fail(st, "NoNetworkLeft", exc.message)
        return
    st.work.network = {"vlan": net.vlan, "vrf": net.vrf, "pkey": net.pkey}
    done = _per_node(st, "provisioned", "networked", "attach_networks",
                     lambda n: st.driver.attach_networks(n, net, request_id=st.rid("networks", n)))
    if done:
        status.set_condition(st.cluster, "Networked", True, "TenantNetworks",
                             f"VLAN {net.vlan} in {net.vrf}, partition key {net.pkey:#06x}")
        set_phase(st, phases.STORAGE, f"tenant networks attached (VLAN {net.vlan}, pkey {net.pkey:#06x})")


def _storage(st: Step) -> None:
    vols = volumes.ensure(st.session, st.cluster)
    done = _per_node(st, "networked", "storage", "attach_storage",
                     lambda n: st.driver.attach_storage(n, vols, request_id=st.rid("storage", n)))
    if done:
        status.set_condition(st.cluster, "StorageAttached", True, "Volumes", ", ".join(v.tier for v in vols) or "none")
        set_phase(st, phases.VALIDATING, f"{len(vols)} volumes mounted")


def _validating(st: Step) -> None:
    enabled = st.cluster.spec.get("acceptance") or {}
    node_tests = tuple(t for t in acceptance.NODE_TESTS if enabled.get(t, True))

    def check(node: models.Node, op: base.Operation) -> str | None:
        results = acceptance.judge_node(node.node_type, op.result, node_tests)
        st.entries[node.name]["results"] = report_mod.summarize_node(results)
        if acceptance.passed(results):
            return None
        return "acceptance failed: " + "; ".join(acceptance.failures(results))[:1500]

    done = _per_node(st, "storage", "accepted", "acceptance",
                     lambda n: st.driver.run_acceptance(n, request_id=st.rid("acceptance", n), tests=node_tests),
                     check)
    if not done or st.rewind:
        return
    names = sorted(st.live())
    cluster_tests = tuple(t for t in acceptance.CLUSTER_TESTS if enabled.get(t, True))
    results: list[acceptance.TestResult] = []
    if cluster_tests and names:
        op = st.driver.run_cluster_tests(names, request_id=f"{st.cluster.id}/cluster-tests/{st.work.generation}",
                                         tests=cluster_tests, volumes=volumes.ensure(st.session, st.cluster))
        if not op.done:
            st.wait()
            return
        if op.status == base.FAILED:
            fail(st, "ClusterTestsFailed", f"cluster tests could not run: {op.error}")
            return
        write, read = _expected_storage(st.cluster, len(names))
        results = acceptance.judge_cluster(st.cluster.node_type, op.result, expected_write_gb_s=write,
                                           expected_read_gb_s=read, tests=cluster_tests,
                                           expected_all_reduce_gb_s=_expected_all_reduce(st.cluster))
    _deliver(st, names, [r.to_dict() for r in results])


def _expected_all_reduce(cluster: models.Cluster) -> float | None:
    """All-reduce bus bandwidth (GB/s) the fabric plan predicts: each GPU's link, or its share of the
    bisection when the fabric is oversubscribed, times the share NCCL reaches (``acceptance.ALL_REDUCE_SHARE``).
    None when the plan has no fabric section (the judge then uses the node type's NIC)."""
    compute = ((cluster.plan or {}).get("fabric_plan") or {}).get("compute") or {}
    gpus = ((cluster.plan or {}).get("fabric_plan") or {}).get("gpus")
    if not compute.get("link_gbps") or not gpus:
        return None
    per_gpu_gbps = float(compute["link_gbps"])
    if compute.get("bisection_gbps"):
        per_gpu_gbps = min(per_gpu_gbps, 2.0 * float(compute["bisection_gbps"]) / float(gpus))
    return round(per_gpu_gbps / 8.0 * acceptance.ALL_REDUCE_SHARE, 2)


def _expected_storage(cluster: models.Cluster, nodes: int) -> tuple[float | None, float | None]:
    """What the storage plan predicts for the performance tier (its own section when the plan has one,
    else the tier model at the declared capacity)."""
    sp = (cluster.plan or {}).get("storage_plan") or {}
    if "expected_write_gb_s" in sp:
        return float(sp["expected_write_gb_s"]), float(sp["expected_read_gb_s"])
    tb = float((cluster.spec.get("storage") or {}).get("parallel_fs_tb") or 0.0)
    if tb <= 0:
        return None, None
    from velyrix.planners import tiers

    perf = tiers.tier_performance("parallel_fs", tb, nodes=nodes, node_type=cluster.node_type)
    return perf.expected_write_gb_s, perf.expected_read_gb_s


def _deliver(st: Step, names: list[str], cluster_results: list[dict[str, Any]]) -> None:
    nodes = [st.members[n] for n in names]
    doc = report_mod.build(st.cluster, nodes, {n: st.entries[n].get("results", []) for n in names}, cluster_results,
                           list(st.work.replacements), delivered_at=models.utcnow().isoformat())
    signed = signing.sign(doc, st.cluster.region)
    st.session.add(tables.AcceptanceReport(tenant_id=st.cluster.tenant_id, cluster_id=st.cluster.id,
                                           region=st.cluster.region, passed=doc["passed"], report=signed))
    st.work.cluster_results = cluster_results
    for node in nodes:
        if node.provisioning_state == states.PROVISIONING:
            move(st.session, node, states.ACTIVE, actor=ACTOR, reason=f"delivered in {st.cluster.name}")
    short = len(names) < st.cluster.node_count
    failed_cluster = [r for r in cluster_results if not r["passed"]]
    status.set_condition(st.cluster, "AcceptancePassed", doc["passed"], "AcceptanceReport",
                         f"{len(names)} nodes; {len(st.work.replacements)} replaced")
    if short or failed_cluster:
        why = (f"{len(names)} of {st.cluster.node_count} nodes delivered (no spare left)" if short else
               "; ".join(f"{r['test']} {r['subject']}: {r['measured']} {r['unit']} < {r['expected']}"
                         for r in failed_cluster))
        status.set_condition(st.cluster, "Ready", False, "Degraded", why)
        set_phase(st, phases.DEGRADED, why)
    else:
        status.set_condition(st.cluster, "Ready", True, "AcceptancePassed", "every test passed")
        set_phase(st, phases.READY, f"{len(names)} nodes delivered and validated")


HANDLERS: dict[str, Callable[[Step], None]] = {
    phases.PENDING: _pending, phases.ALLOCATING: _allocating, phases.PROVISIONING: _provisioning,
    phases.NETWORKING: _networking, phases.STORAGE: _storage, phases.VALIDATING: _validating,
}


def _out_of_service(node: models.Node) -> bool:
    # taken out by health (quarantine, RMA, retirement) or broken while delivered
    return node.fleet_stage != states.PRODUCTION or node.provisioning_state == states.FAILED


def needs_work(cluster: models.Cluster, work: tables.ClusterWork | None, session: orm.Session | None = None) -> bool:
    """Cheap check: whether ``reconcile`` has anything to do. Settled clusters need none unless their spec
    changed, nodes are on their way out, or (with ``session``) a delivered node was taken out of service."""
    if cluster.phase == phases.DELETED:
        return False
    if cluster.desired_state == "absent" or cluster.phase not in phases.SETTLED_PHASES or work is None:
        return True
    if work.spec_digest != spec_digest(cluster.spec) or any(e.get("release") for e in work.nodes.values()):
        return True
    if session is None or cluster.phase == phases.FAILED:
        return False
    return bool(session.scalar(sa.select(sa.func.count()).select_from(models.Node).where(
        models.Node.cluster_id == cluster.id,
        sa.or_(models.Node.fleet_stage != states.PRODUCTION, models.Node.provisioning_state == states.FAILED))))


def _heal(st: Step) -> None:
    """Replace delivered nodes that health took out of service; the replacements go through every phase."""
    for name, node in list(st.members.items()):
        entry = st.entries.get(name)
        if entry is None or entry.get("release") or not _out_of_service(node):
            continue
        replace(st, name, f"taken out of service ({node.fleet_stage}, {node.provisioning_state}): "
                          f"{node.last_error or 'no reason recorded'}")
    if st.rewind:
        st.rewind = False
        set_phase(st, phases.PROVISIONING, "replacing nodes taken out of service")


def reconcile(session: orm.Session, cluster: models.Cluster, driver: base.Driver,
              settings: phases.ReconcileSettings | None = None, *, max_phases: int = 1) -> float | None:
    """Take the next steps for ``cluster`` (the caller commits): at most ``max_phases`` phases, so that each
    phase is its own transaction. Returns wall seconds after which to call again (0 when the next phase can
    start at once), or None when the cluster is settled."""
    settings = settings or phases.ReconcileSettings()
    work = work_of(session, cluster)
    if not needs_work(cluster, work, session):
        return None
    members = {n.name: n for n in session.scalars(sa.select(models.Node).where(models.Node.cluster_id == cluster.id))}
    st = Step(session=session, cluster=cluster, work=work, driver=driver, settings=settings, members=members,
              entries=copy.deepcopy(work.nodes or {}))
    try:
        if cluster.desired_state == "absent":
            teardown.destroy(st)
            return st.requeue_s
        teardown.process_releases(st)
        digest = spec_digest(cluster.spec)
        if work.spec_digest != digest:
            if work.spec_digest and cluster.phase not in (phases.PENDING, phases.ALLOCATING):
                status.add_event(cluster, "SpecChanged", f"spec changed: node_count {cluster.node_count}")
                set_phase(st, phases.ALLOCATING, "spec changed")
            work.spec_digest = digest
        if cluster.phase in (phases.READY, phases.DEGRADED):
            _heal(st)
        for _ in range(max_phases):
            before = cluster.phase
            handler = HANDLERS.get(cluster.phase)
            if handler is None:
                break
            handler(st)
            if st.rewind and cluster.phase not in (phases.PROVISIONING, phases.FAILED, phases.DEGRADED):
                set_phase(st, phases.PROVISIONING, "replacement nodes must catch up")
            st.rewind = False
            if cluster.phase == before or st.requeue_s is not None:
                break
        else:
            if cluster.phase in phases.ACTIVE_PHASES:
                st.wait(0.0)  # the next phase may start in the next transaction, right away
        if any(e.get("release") for e in st.entries.values()) and st.requeue_s is None:
            st.wait()
        if cluster.phase in phases.ACTIVE_PHASES and st.requeue_s is None:
            st.wait()
        return st.requeue_s
    finally:
        work.nodes = st.entries
