"""Fleet intake: nodes the driver reports are enrolled, inspected and burned in before they are sold.

``reconcile_fleet`` is one pass: enroll unknown hostnames (``enrolled``/``burn-in``), inspect enrolled ones
(-> ``available`` with their inventory), and run the acceptance tests on burned-in nodes (-> ``production``
or ``quarantined``). Requests are keyed by node and step, so a pass after a crash resubmits safely. A driver
that refuses a node fails that node; one that cannot answer (``user_error`` False: the served twin unreachable,
a 5xx) fails the pass, which the caller rolls back.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import errors
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import locks, phases
from velyrix.controlplane.reconcile.store import BulkTransitionStore, flush_nodes, move
from velyrix.fleet import acceptance, states
from velyrix.fleet.drivers import base

ACTOR = f"reconciler/fleet@{phases.REPLICA}"


def enroll(session: orm.Session, driver: base.Driver, region: str, node_types: dict[str, str]) -> int:
    """Insert a node row for every hostname of ``driver`` not yet known; ``node_types`` maps hostname -> node
    type. Returns how many were enrolled. New rows start ``enrolled`` in stage ``burn-in``."""
    locks.hold(session, f"enroll/{region}")  # replicas starting together enroll each node once
    known = set(session.scalars(sa.select(models.Node.name).where(models.Node.region == region)))
    new = [h for h in driver.list_nodes() if h not in known]
    for hostname in new:
        session.add(
            models.Node(
                name=hostname,
                region=region,
                node_type=node_types[hostname],
                provisioning_state=states.ENROLLED,
                fleet_stage=states.BURN_IN,
                hardware={},
                labels={},
            )
        )
    session.flush()
    return len(new)


def reconcile_fleet(session: orm.Session, driver: base.Driver, region: str) -> int:
    """One intake pass over nodes of ``region`` that are not yet sellable; returns how many are still
    waiting on the driver (0 when the intake is done)."""
    waiting = 0
    rows = session.scalars(
        sa.select(models.Node).where(
            models.Node.region == region,
            models.Node.cluster_id.is_(None),
            sa.or_(
                models.Node.provisioning_state.in_([states.ENROLLED, states.INSPECTING]),
                models.Node.fleet_stage == states.BURN_IN,
            ),
        )
    ).all()
    store = BulkTransitionStore(session)  # the pass's transitions in one INSERT, not one ORM object each
    rounds = _burn_in_rounds(session, [n.id for n in rows if n.fleet_stage == states.BURN_IN])
    for node in rows:
        try:
            waiting += _intake_one(session, driver, node, store, rounds.get(node.id, 0))
        except errors.VelyrixError as exc:  # this node only: the driver refused it (e.g. a hostname it lacks)
            if not exc.user_error:  # the driver could not answer (unreachable, 5xx): not the node's fault
                raise  # the caller rolls the pass back; the next pass asks again
            node.last_error = f"intake: the driver refused node '{node.name}': {exc.message}"[:2000]
            if node.provisioning_state != states.FAILED:
                move(session, node, states.FAILED, actor=ACTOR, reason=node.last_error[:500], store=store)
    flush_nodes(session, rows)  # the pass's node rows in bulk UPDATEs, not one per node
    store.write()
    session.flush()
    return waiting


def _burn_in_rounds(session: orm.Session, node_ids: list[str]) -> dict[str, int]:
    """How many times each of ``node_ids`` was sent back to burn-in (its recorded moves into ``burn-in``; a new
    node starts there without one): one statement for the pass."""
    if not node_ids:
        return {}
    t = models.NodeTransition
    rows = session.execute(
        sa.select(t.node_id, sa.func.count())
        .where(t.node_id.in_(node_ids), t.field == "fleet_stage", t.to_state == states.BURN_IN)
        .group_by(t.node_id)
    )
    return {node_id: int(n) for node_id, n in rows.all()}


def burn_in_request(hostname: str, round_: int) -> str:
    """The request id of ``hostname``'s burn-in number ``round_`` (0: its first, as a new node). Drivers dedupe
    request ids, so each return to burn-in gets its own: the node is tested again, not sold on old results."""
    return f"intake/{hostname}/burn-in" + (f"/{round_}" if round_ else "")


def _intake_one(
    session: orm.Session, driver: base.Driver, node: models.Node, store: BulkTransitionStore, round_: int = 0
) -> int:
    """One intake step of ``node`` (``round_``: its burn-in's number, ``burn_in_request``); returns 1 while it
    waits on the driver, else 0."""
    if node.provisioning_state == states.ENROLLED:
        move(session, node, states.INSPECTING, actor=ACTOR, reason="new node: read its inventory", store=store)
    if node.provisioning_state == states.INSPECTING:
        op = driver.inspect(node.name, request_id=f"intake/{node.name}/inspect")
        if not op.done:
            return 1
        if op.status == base.FAILED:
            node.last_error = f"inspection failed: {op.error}"
            move(session, node, states.FAILED, actor=ACTOR, reason=node.last_error, store=store)
            return 0
        node.hardware = op.result["hardware"]
        move(session, node, states.AVAILABLE, actor=ACTOR, reason="inventory read", store=store)
    if node.fleet_stage == states.BURN_IN and node.provisioning_state == states.AVAILABLE:
        op = driver.run_acceptance(node.name, request_id=burn_in_request(node.name, round_))
        if not op.done:
            return 1
        results = acceptance.judge_node(node.node_type, op.result) if op.status == base.SUCCEEDED else []
        if op.status == base.SUCCEEDED and acceptance.passed(results):
            move(session, node, states.PRODUCTION, actor=ACTOR, reason="burn-in passed", store=store)
        else:
            node.last_error = "; ".join(acceptance.failures(results)) or f"burn-in failed: {op.error}"
            move(session, node, states.QUARANTINED, actor=ACTOR, reason=node.last_error[:500], store=store)
    return 0
