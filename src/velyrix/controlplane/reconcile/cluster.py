"""One reconcile step of one cluster (CONTRIBUTING.md, "State"): read the cluster, its nodes and its bookkeeping,
take the
next steps the phase calls for through the driver, save. A function of the database and the driver only, so a
step after a crash picks up where the last committed one left off; requests are keyed by cluster, node,
allocation and attempt, so resubmitting one is safe.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import errors
from velyrix.controlplane import fabric_artifacts, status
from velyrix.controlplane.db import models
from velyrix.controlplane.evidence import firmware
from velyrix.controlplane.reconcile import (
    allocation,
    leases,
    locks,
    networks,
    node_entry,
    phases,
    teardown,
    validation,
    volumes,
)
from velyrix.controlplane.reconcile.node_entry import NodeEntry
from velyrix.controlplane.reconcile.scheduler_service import SchedulerService
from velyrix.controlplane.reconcile.steps import (
    ACTOR,
    STEP_ORDER,
    Step,
    fail,
    per_node,
    replace,
    set_phase,
    spec_digest,
    work_of,
)
from velyrix.controlplane.reconcile.store import move
from velyrix.fleet import states
from velyrix.fleet.drivers import base
from velyrix.fleet.hardware import StoredHardware

__all__ = [
    "Step",
    "fail",
    "heal",
    "needs_work",
    "reconcile",
    "replace",
    "set_phase",
    "settled",
    "spec_digest",
    "work_of",
]


def _pending(st: Step) -> None:
    status.mark_reconciled(st.cluster, phases.REPLICA)
    set_phase(st, phases.ALLOCATING, "reconciling the declared spec")


def _allocating(st: Step) -> None:
    live = st.live()
    for name in st.members:  # adopt nodes whose entry was lost (should not happen; keeps the step total)
        if name not in st.entries:
            st.entries[name] = NodeEntry(step="allocated", attempt=0, seq=st.work.generation)
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
            st.entries[node.name] = NodeEntry(step="allocated", attempt=0, seq=seq)
        status.add_event(st.cluster, "NodesAllocated", f"{len(new)} nodes allocated")
    elif have > want:

        def keep_score(name: str) -> tuple[int, int, int]:
            hw = StoredHardware.from_dict(st.members[name].hardware)
            return (STEP_ORDER[live[name].step], -(hw.su or 0), -(hw.slot or 0))

        for name in sorted(live, key=keep_score)[: have - want]:
            st.entries[name] = dataclasses.replace(st.entries[name], release="scale down")
        status.add_event(st.cluster, "ScaleDown", f"releasing {have - want} nodes")
        teardown.process_releases(st)
    status.set_condition(st.cluster, "NodesAllocated", True, "Allocated", f"{want} nodes")
    set_phase(st, phases.PROVISIONING, f"{want} nodes allocated")


def _provisioning(st: Step) -> None:
    try:
        manifest = firmware.load(st.cluster.region)  # signature checked before every provisioning
    except errors.InvalidInputError as exc:
        fail(st, "FirmwareManifestRefused", exc.message)
        return
    baseline = manifest.versions
    for name, entry in st.live().items():
        node = st.members[name]
        if entry.step == "allocated" and node.provisioning_state == states.ALLOCATED:
            move(st.session, node, states.PROVISIONING, actor=ACTOR, reason=f"provisioning for {st.cluster.name}")

    def check(node: models.Node, op: base.Operation) -> str | None:
        evidence, problem = firmware.check(manifest, op.result)
        node.hardware = {**(node.hardware or {}), "firmware_evidence": evidence}
        if problem:
            return problem
        node.hardware = {**node.hardware, "firmware": op.result.get("firmware", {})}
        return None

    done = per_node(
        st,
        "allocated",
        "provisioned",
        "provision",
        lambda n: st.driver.provision(n, image=st.settings.image, firmware=baseline, request_id=st.rid("provision", n)),
        check,
    )
    if done:
        status.set_condition(
            st.cluster,
            "Provisioned",
            True,
            "ImageAndFirmware",
            f"image {st.settings.image}, firmware at the {st.cluster.region} baseline",
        )
        set_phase(st, phases.NETWORKING, "image and firmware baseline verified on every node")


def _networking(st: Step) -> None:
    try:
        net = networks.ensure(st.session, st.cluster)
    except errors.CapacityError as exc:
        fail(st, "NoNetworkLeft", exc.message)
        return
    st.work.network = net.to_dict()
    done = per_node(
        st,
        "provisioned",
        "networked",
        "attach_networks",
        lambda n: st.driver.attach_networks(n, net, request_id=st.rid("networks", n)),
    )
    if done:
        fabric_artifacts.deliver(st.session, st.cluster, st.driver)  # partitions, VLANs, VRFs onto the gear
        status.set_condition(
            st.cluster,
            "Networked",
            True,
            "TenantNetworks",
            f"VLAN {net.vlan} in {net.vrf}, {net.compute_isolation()}",
        )
        set_phase(st, phases.STORAGE, f"tenant networks attached (VLAN {net.vlan}, {net.compute_isolation()})")


def _storage(st: Step) -> None:
    vols = volumes.ensure(st.session, st.cluster)
    done = per_node(
        st,
        "networked",
        "storage",
        "attach_storage",
        lambda n: st.driver.attach_storage(n, vols, request_id=st.rid("storage", n)),
    )
    if done:
        status.set_condition(st.cluster, "StorageAttached", True, "Volumes", ", ".join(v.tier for v in vols) or "none")
        set_phase(st, phases.VALIDATING, f"{len(vols)} volumes mounted")


HANDLERS: dict[str, Callable[[Step], None]] = {
    phases.PENDING: _pending,
    phases.ALLOCATING: _allocating,
    phases.PROVISIONING: _provisioning,
    phases.NETWORKING: _networking,
    phases.STORAGE: _storage,
    phases.VALIDATING: validation.validating,
}


def _out_of_service(node: models.Node) -> bool:
    # taken out by health (quarantine, RMA, retirement) or broken while delivered
    return node.fleet_stage != states.PRODUCTION or node.provisioning_state == states.FAILED


def needs_work(cluster: models.Cluster, work: models.ClusterWork | None, session: orm.Session | None = None) -> bool:
    """Cheap check: whether ``reconcile`` has anything to do. Settled clusters need none unless their spec
    changed, nodes are on their way out, or (with ``session``) a delivered node was taken out of service.
    A settled cluster costs the same whatever its size: no work row is read and the node check is two
    index lookups (``_OUT_OF_SERVICE``)."""
    if cluster.phase == phases.DELETED:
        return False
    if cluster.desired_state == "absent" or cluster.phase not in phases.SETTLED_PHASES or work is None:
        return True
    if work.spec_digest != spec_digest(cluster.spec) or work.releasing:
        return True
    if session is None or cluster.phase == phases.FAILED:
        return False
    return bool(session.scalar(_OUT_OF_SERVICE, {"cid": cluster.id}))


_NOT_IN_PRODUCTION = tuple(s for s in states.FLEET_STAGES if s != states.PRODUCTION)
_OUT_OF_SERVICE = sa.select(
    sa.or_(
        sa.exists().where(
            models.Node.cluster_id == sa.bindparam("cid"), models.Node.fleet_stage.in_(_NOT_IN_PRODUCTION)
        ),
        sa.exists().where(
            models.Node.cluster_id == sa.bindparam("cid"), models.Node.provisioning_state == states.FAILED
        ),
    )
)
"""Whether any node of cluster ``:cid`` is out of service; each EXISTS is a range of one
``ix_nodes_cluster_*`` index (``models.reconcile_work``), not a scan of the cluster's nodes."""


_PROBE = sa.select(
    models.Cluster.phase,
    models.Cluster.desired_state,
    models.Cluster.version,
    models.ClusterWork.settled_version,
    models.ClusterWork.releasing,
    _OUT_OF_SERVICE.scalar_subquery(),
).join(models.ClusterWork, models.ClusterWork.cluster_id == models.Cluster.id)


def _is_settled(phase: str, desired: str, version: int, seen: int | None, releasing: int | None, out: bool) -> bool:
    """The verdict of one probe row (``settled`` and ``settled_in``)."""
    if desired == "absent" or phase not in phases.SETTLED_PHASES or releasing or seen != version:
        return False
    return phase == phases.FAILED or not out


def settled(session: orm.Session, cluster_id: str) -> bool:
    """Whether a full ``reconcile`` of ``cluster_id`` would find nothing to do, from one statement that reads
    no JSON: the cluster row unchanged since a full check found it settled (its ``version`` against
    ``cluster_work.settled_version``), no node leaving, none out of service. False means: look properly."""
    row = session.execute(_PROBE.where(models.Cluster.id == cluster_id), {"cid": cluster_id}).first()
    return row is not None and _is_settled(*row[:6])


_OUT_OF_SERVICE_OF_ROW = sa.or_(
    sa.exists().where(models.Node.cluster_id == models.Cluster.id, models.Node.fleet_stage.in_(_NOT_IN_PRODUCTION)),
    sa.exists().where(models.Node.cluster_id == models.Cluster.id, models.Node.provisioning_state == states.FAILED),
)
_REGION_PROBE = (
    sa.select(
        models.Cluster.id,
        models.Cluster.phase,
        models.Cluster.desired_state,
        models.Cluster.version,
        models.ClusterWork.settled_version,
        models.ClusterWork.releasing,
        _OUT_OF_SERVICE_OF_ROW,
    )
    .outerjoin(models.ClusterWork, models.ClusterWork.cluster_id == models.Cluster.id)
    .where(models.Cluster.region == sa.bindparam("region"), models.Cluster.phase != phases.DELETED)
    .order_by(models.Cluster.id)
)


def settled_in(session: orm.Session, region: str) -> dict[str, bool]:
    """Every cluster of ``region`` not deleted, by id (in id order), with ``settled``'s verdict, from one
    statement: what the reconcile loop's pass reads first, so a settled fleet costs one statement a pass, not
    one per cluster. A verdict read here, outside the cluster's lock, is a snapshot: anything that changes
    the cluster after it moves its version or its nodes, and the next pass sees it."""
    rows = session.execute(_REGION_PROBE, {"region": region})
    return {
        cid: _is_settled(phase, desired, version, seen, releasing, bool(out))
        for cid, phase, desired, version, seen, releasing, out in rows
    }


def _mark_settled(session: orm.Session, cluster: models.Cluster, work: models.ClusterWork) -> None:
    session.flush()  # the cluster's version as it will be committed
    if work.settled_version != cluster.version:
        work.settled_version = cluster.version


def _heal(st: Step) -> None:
    """Replace delivered nodes that health took out of service; the replacements go through every phase."""
    for name, node in list(st.members.items()):
        entry = st.entries.get(name)
        if entry is None or entry.release or not _out_of_service(node):
            continue
        replace(
            st,
            name,
            f"taken out of service ({node.fleet_stage}, {node.provisioning_state}): "
            f"{node.last_error or 'no reason recorded'}",
        )
    if st.rewind:
        st.rewind = False
        set_phase(st, phases.PROVISIONING, "replacing nodes taken out of service")


HEALABLE = (phases.PROVISIONING, phases.NETWORKING, phases.STORAGE, phases.VALIDATING, phases.READY, phases.DEGRADED)


def heal(
    session: orm.Session,
    cluster: models.Cluster,
    settings: phases.ReconcileSettings | None = None,
    *,
    held: leases.Fence | None = None,
) -> list[dict[str, Any]] | None:
    """Replace now the nodes of ``cluster`` that were taken out of service (what ``reconcile`` does for a
    settled cluster on its next pass; the API calls it when a node's agent reports a fatal verdict, in
    the same transaction). No driver is needed: replacements are allocated in the database and the
    reconciler provisions them. Returns the replacement records added (``replacement`` None: no spare).
    ``held``: this replica's leases (replicas on PostgreSQL; ``leases.NO_LEASE`` in a process that reconciles
    nothing there): the replacement is written only under the cluster's lease, fenced in this transaction (the
    lease row stays locked until it commits); returns None when another replica holds the cluster: its
    reconciler replaces the nodes on its next pass. ``held`` None: one process alone, unfenced."""
    if cluster.phase not in HEALABLE or cluster.desired_state == "absent":
        return []  # before allocation nothing is delivered; Failed/Deleting clusters give nodes back anyway
    locks.hold(session, f"cluster/{cluster.id}")  # PostgreSQL: wait for a reconciler's step on it to commit
    if held is not None:
        try:
            held.fence(session, cluster.id)
        except leases.LeaseLost:
            return None
    added = _unsaved_events(cluster)  # e.g. the report's HealthDrain: the refresh would drop them
    session.refresh(cluster)
    if added:
        cluster.events = [*cluster.events, *added][-status.MAX_EVENTS :]
    work = work_of(session, cluster)
    session.refresh(work)
    members = {n.name: n for n in session.scalars(sa.select(models.Node).where(models.Node.cluster_id == cluster.id))}
    st = Step(
        session=session,
        cluster=cluster,
        work=work,
        driver=cast(base.Driver, None),
        settings=settings or phases.ReconcileSettings(),
        members=members,
        loaded=node_entry.fetch(session, cluster.id),
    )
    st.entries = dict(st.loaded)
    before = len(work.replacements or [])
    _heal(st)
    st.save()
    session.flush()
    return list(work.replacements[before:])


def _unsaved_events(cluster: models.Cluster) -> list[dict[str, Any]]:
    """The events added to ``cluster`` in this session and not yet flushed (``status.add_event``)."""
    hist = sa.inspect(cluster).attrs.events.history
    if not hist.added:
        return []
    old = list(hist.deleted[0]) if hist.deleted else []
    return [e for e in hist.added[0] if e not in old]


def _run_phases(st: Step, max_phases: int) -> None:
    """Run the handlers of at most ``max_phases`` successive phases, stopping at a phase that stays or waits."""
    cluster = st.cluster
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


def reconcile(
    session: orm.Session,
    cluster: models.Cluster,
    driver: base.Driver,
    settings: phases.ReconcileSettings | None = None,
    *,
    max_phases: int = 1,
    scheduler: SchedulerService | None = None,
) -> float | None:
    """Take the next steps for ``cluster`` (the caller commits): at most ``max_phases`` phases, so that each
    phase is its own transaction. Returns wall seconds after which to call again (0 when the next phase can
    start at once), or None when the cluster is settled. ``scheduler``: who delivers the cluster's scheduler."""
    settings = settings or phases.ReconcileSettings()
    work = work_of(session, cluster)
    if not needs_work(cluster, work, session):
        _mark_settled(session, cluster, work)
        return None
    members = {n.name: n for n in session.scalars(sa.select(models.Node).where(models.Node.cluster_id == cluster.id))}
    st = Step(
        session=session,
        cluster=cluster,
        work=work,
        driver=driver,
        settings=settings,
        members=members,
        loaded=node_entry.fetch(session, cluster.id),
        scheduler=scheduler,
    )
    st.entries = dict(st.loaded)
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
        _run_phases(st, max_phases)
        if any(e.release for e in st.entries.values()) and st.requeue_s is None:
            st.wait()
        if cluster.phase in phases.ACTIVE_PHASES and st.requeue_s is None:
            st.wait()
        return st.requeue_s
    finally:
        st.save()
