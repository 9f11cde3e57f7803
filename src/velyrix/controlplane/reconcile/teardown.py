"""Taking nodes back: release (scale-down, replacement) and destroy. A node that held tenant data is
deprovisioned (networks and storage detached), sanitized (a signed certificate stored:
``evidence.sanitization``), then returned to the pool; a node that was only allocated goes straight back."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from velyrix.controlplane import fabric_artifacts
from velyrix.controlplane.db import models
from velyrix.controlplane.evidence import sanitization
from velyrix.controlplane.reconcile import networks, phases, scheduler, volumes
from velyrix.controlplane.reconcile.node_entry import NodeEntry
from velyrix.controlplane.reconcile.store import move
from velyrix.fleet import states
from velyrix.fleet.drivers import base

if TYPE_CHECKING:
    from velyrix.controlplane.reconcile.steps import Step

ACTOR = f"reconciler/teardown@{phases.REPLICA}"


def _clear(node: models.Node) -> None:
    node.cluster_id = None
    node.tenant_id = None


def _note_certificate(st: Step, name: str, certificate: str) -> None:
    recs = list(st.work.replacements)
    for rec in recs:
        if rec.get("failed") == name and "sanitize_certificate" not in rec:
            rec["sanitize_certificate"] = certificate
    st.work.replacements = [dict(r) for r in recs]


def process_releases(st: Step) -> None:
    """Advance every node marked ``release`` one step towards the free pool."""
    for name, entry in list(st.entries.items()):
        why = entry.release
        if not why:
            continue
        node = st.members.get(name)
        if node is None:
            del st.entries[name]
            continue
        reason = f"{why}: leaving cluster {st.cluster.name}"
        if node.provisioning_state == states.ALLOCATED:
            _clear(node)
            move(st.session, node, states.AVAILABLE, actor=ACTOR, reason=reason)
            del st.entries[name]
            continue
        if node.provisioning_state in (states.PROVISIONING, states.ACTIVE, states.FAILED):
            move(st.session, node, states.DEPROVISIONING, actor=ACTOR, reason=reason)
        if node.provisioning_state == states.DEPROVISIONING:
            ops = [
                st.driver.detach_networks(name, request_id=st.rid("detach", name)),
                st.driver.attach_storage(name, [], request_id=st.rid("unmount", name)),
            ]
            if not all(op.done for op in ops):
                st.wait()
                continue
            if not _ok(st, name, entry, ops):
                continue
            move(st.session, node, states.SANITIZING, actor=ACTOR, reason="tenant networks and storage detached")
        if node.provisioning_state == states.SANITIZING:
            op = st.driver.sanitize(name, request_id=st.rid("sanitize", name))
            if not op.done:
                st.wait()
                continue
            if not _ok(st, name, entry, [op]):
                continue
            _note_certificate(st, name, op.result.get("certificate", ""))
            sanitization.issue_node(st.session, st.cluster, node, op.result, ACTOR)
            _clear(node)
            move(
                st.session,
                node,
                states.AVAILABLE,
                actor=ACTOR,
                reason=f"sanitized ({op.result.get('certificate', '')}), back to the pool",
            )
            del st.entries[name]


def _ok(st: Step, name: str, entry: NodeEntry, ops: list[base.Operation]) -> bool:
    bad = [op for op in ops if op.status == base.FAILED]
    if not bad:
        return True
    attempt = entry.attempt
    if attempt + 1 < st.settings.max_attempts:
        st.entries[name] = dataclasses.replace(entry, attempt=attempt + 1)
        st.wait(st.settings.retry_backoff_s * 2 ** (attempt + 1))
        return False
    # cannot clean it: out of the cluster but failed and quarantined, never back in the pool with tenant data
    node = st.members[name]
    node.last_error = f"cleanup failed: {bad[0].error}"
    move(st.session, node, states.FAILED, actor=ACTOR, reason=node.last_error)
    if node.fleet_stage == states.PRODUCTION:
        move(st.session, node, states.QUARANTINED, actor=ACTOR, reason=node.last_error)
    _clear(node)
    del st.entries[name]
    return False


def destroy(st: Step) -> None:
    """Tear the cluster down: release every node, then its networks and volume attachments; DELETED when done."""
    from velyrix.controlplane import status
    from velyrix.controlplane.reconcile.steps import set_phase

    if st.cluster.phase == phases.DELETED:
        return
    set_phase(st, phases.DELETING, "deletion requested")
    if not scheduler.remove(st):  # its controller first: no job starts on nodes being taken back
        return
    for name in st.members:
        entry = st.entries.get(name) or NodeEntry(step="allocated", attempt=0, seq=st.work.generation)
        st.entries[name] = entry if entry.release else dataclasses.replace(entry, release="destroy")
    process_releases(st)
    if st.entries:
        st.wait()
        return
    fabric_artifacts.withdraw(st.cluster, st.driver)
    networks.release(st.session, st.cluster)
    if st.work.delete_volumes:
        try:
            sanitization.issue_volumes(st.session, st.cluster, st.driver, ACTOR)
        except NotImplementedError as exc:
            status.add_event(st.cluster, "NoSanitizationCertificate", str(exc))
    deleted = volumes.detach(st.session, st.cluster, delete=st.work.delete_volumes)
    if deleted:
        status.add_event(st.cluster, "VolumesDeleted", ", ".join(deleted))
    status.set_condition(st.cluster, "Ready", False, "Deleted", "nodes sanitized and returned")
    set_phase(st, phases.DELETED, "every node sanitized and returned; networks released")
    # the row stays as a tombstone (history, reports); its name is released so it can be declared again
    original = st.cluster.name
    st.cluster.name = f"{original}~deleted-{st.cluster.id[-8:]}"[:63]
    status.add_event(st.cluster, "NameReleased", f"'{original}' may be declared again")
