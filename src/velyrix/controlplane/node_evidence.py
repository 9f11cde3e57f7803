"""The control plane's own judgement of a node: its agent's report is evidence, the verdict is the server's.

``judge(session, node, report)`` adds the report's sample and XID events to the server's history of the node
(``NodeEvidence``: trend counters of recent reports, XIDs within the recurrence window, the repairs the control
plane did), takes the node's peers (the latest measured figures of the other nodes of its cluster), and runs
``velyrix.health.engine.Engine`` with the catalog's thresholds on all of it. The agent's verdict, parsed into a
typed ``Verdict`` with every reason, is a claim: when its rung or level differs from the server's, the
disagreement is recorded (``NodeEvent`` ``AgentDisagrees``, counted on the evidence row) and only the
server's verdict is acted on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import errors
from velyrix.catalog import health as catalog_health
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import cloud as models_cloud
from velyrix.health import evidence as ev
from velyrix.health.engine import Engine, Verdict
from velyrix.health.ladder import Action

HISTORY_SPACING_S = 240.0
"""Velyrix design value: reports closer than this (node clock, s) replace the newest kept sample instead of
adding one, so the history spans hours at any report cadence."""
HISTORY_MAX = 120
"""Samples kept per node (with the spacing above: 8 hours, the twin's precursor window is 6 hours)."""
PEER_METRICS = ("bf16_tflops_measured", "hbm_gb_s_measured")


@dataclass(frozen=True)
class Judgement:
    """The server's verdict on one report, the agent's claim beside it, and whether they disagree."""

    verdict: Verdict
    claimed: Verdict | None
    disagreement: str | None
    new_findings: tuple[str, ...] = ()
    """Keys of the verdict's reasons above IGNORE that the node's previous verdict did not hold."""


def _trend_metrics() -> dict[str, set[str]]:
    th = catalog_health.health_thresholds()
    out: dict[str, set[str]] = {"gpu": set(), "ib_port": set(), "nvme": set()}
    for rule in th.trends:
        out.setdefault(rule.scope, set()).add(rule.metric)
    return out


def _compact(sample: ev.CounterSample) -> dict[str, Any]:
    """``sample`` as data, keeping only the counters trend rules read (and only non-zero ones)."""
    keep = _trend_metrics()
    gpus = []
    for g in sample.gpus:
        row: dict[str, Any] = {"index": g.index}
        row.update({m: getattr(g, m) for m in sorted(keep["gpu"]) if getattr(g, m, 0)})
        gpus.append(row)
    ports = []
    for p in sample.ib_ports:
        counters = {m: int(p.counters[m]) for m in sorted(keep["ib_port"]) if p.counters.get(m)}
        ports.append({"device": p.device, "port": p.port, "state": p.state, "counters": counters})
    nvme = [{"name": d.name, "media_errors": d.media_errors} for d in sample.nvme]
    return {"t_s": sample.t_s, "gpus": gpus, "ib_ports": ports, "nvme": nvme}


def _expand(raw: Mapping[str, Any]) -> ev.CounterSample:
    return ev.CounterSample.from_reading(
        float(raw["t_s"]), raw.get("gpus", ()), raw.get("ib_ports", ()), raw.get("nvme", ())
    )


def evidence_row(session: orm.Session, node: models.Node) -> models_cloud.NodeEvidence:
    """The node's evidence row (created empty on first use)."""
    row = session.scalar(sa.select(models_cloud.NodeEvidence).where(models_cloud.NodeEvidence.node_id == node.id))
    if row is None:
        row = models_cloud.NodeEvidence(
            node_id=node.id,
            node_type=node.node_type,
            samples=[],
            xids=[],
            repairs=[],
            peer_metrics={},
            verdict={},
            pending_ops=[],
        )
        session.add(row)
    row.cluster_id = node.cluster_id
    return row


def record_repair(row: models_cloud.NodeEvidence, t_s: float, kind: str, gpu: int | None, reason: str) -> None:
    """Note that the control plane did ``kind`` (``ev.REPAIR_KINDS``) to the node at ``t_s``."""
    if kind not in ev.REPAIR_KINDS:
        raise errors.InvalidInputError(f"unknown repair kind '{kind}'", hint=", ".join(ev.REPAIR_KINDS))
    row.repairs = [*row.repairs, [t_s, kind, gpu, reason[:300]]][-200:]


def _peers(session: orm.Session, row: models_cloud.NodeEvidence) -> dict[str, list[float]]:
    if row.cluster_id is None:
        return {}
    others = session.scalars(
        sa.select(models_cloud.NodeEvidence.peer_metrics).where(
            models_cloud.NodeEvidence.cluster_id == row.cluster_id, models_cloud.NodeEvidence.id != row.id
        )
    ).all()
    out: dict[str, list[float]] = {}
    for metrics in others:
        for name, values in (metrics or {}).items():
            out.setdefault(name, []).extend(float(v) for v in values)
    return out


def _parse_sample(report: Mapping[str, Any], t_s: float) -> tuple[ev.CounterSample, list[ev.XidEvent]]:
    sample = report.get("sample") or {}
    try:
        gpus = list(sample.get("gpus") or [])
        counters = ev.CounterSample.from_reading(t_s, gpus, sample.get("ib_ports") or [], sample.get("nvme") or [])
        xids = ev.xid_events_of(gpus)
    except (TypeError, ValueError, AttributeError) as exc:
        raise errors.InvalidInputError(
            f"the report's sample is not a node sample: {exc}", hint="send NodeSample.to_dict() (docs/telemetry.md)"
        ) from exc
    return counters, xids


def _add_history(row: models_cloud.NodeEvidence, counters: ev.CounterSample, xids: Sequence[ev.XidEvent]) -> None:
    window_s = float(catalog_health.health_thresholds().recurrence["window_h"]) * 3600.0
    t_s = counters.t_s
    kept = list(row.samples)
    if kept and t_s - float(kept[-1]["t_s"]) < HISTORY_SPACING_S and len(kept) > 1:
        kept[-1] = _compact(counters)
    elif not kept or t_s > float(kept[-1]["t_s"]):
        kept.append(_compact(counters))
    row.samples = kept[-HISTORY_MAX:]
    seen = {(float(t), int(c), g) for t, c, g in row.xids}
    new = [[x.t_s, x.code, x.gpu] for x in xids if (x.t_s, x.code, x.gpu) not in seen]
    row.xids = [x for x in [*row.xids, *new] if float(x[0]) >= t_s - window_s][-500:]
    row.peer_metrics = {
        m: [float(getattr(g, m)) for g in counters.gpus if getattr(g, m) is not None] for m in PEER_METRICS
    }
    row.last_t_s = max(row.last_t_s or 0.0, t_s)


def evaluate(
    session: orm.Session,
    node: models.Node,
    row: models_cloud.NodeEvidence,
    latest: ev.CounterSample | None,
    now_s: float,
) -> Verdict:
    """The server's verdict on ``node`` at ``now_s`` from its history (``latest``: the fresh full sample)."""
    history = [_expand(s) for s in row.samples]
    if latest is not None and history and history[-1].t_s == latest.t_s:
        history[-1] = latest  # counter rules read the latest sample: the full one, not the compact copy
    repairs = [ev.RepairEvent(float(t), str(k), g, str(r)) for t, k, g, r in row.repairs]
    evidence = ev.Evidence.build(
        node.name,
        now_s,
        xids=[ev.XidEvent(float(t), int(c), g) for t, c, g in row.xids],
        samples=history,
        repairs=repairs,
        peers=_peers(session, row),
    )
    return Engine().evaluate(evidence)


def _claimed(node: models.Node, report: Mapping[str, Any]) -> Verdict | None:
    raw = report.get("verdict")
    return None if raw is None else Verdict.from_dict(raw, node.name)


def _disagreement(verdict: Verdict, claimed: Verdict | None) -> str | None:
    if claimed is None or (claimed.action == verdict.action and claimed.level == verdict.level):
        return None
    worse = "worse" if (claimed.action, claimed.level) > (verdict.action, verdict.level) else "better"
    return (
        f"the agent claims {claimed.action.name} ({claimed.level}: {claimed.summary()}), a {worse} state than its "
        f"evidence shows: {verdict.action.name} ({verdict.level}: {verdict.summary()}); acting on the evidence"
    )


def add_event(
    session: orm.Session,
    node: models.Node,
    t_s: float,
    reason: str,
    message: str,
    *,
    kind: str = "Normal",
    agent_action: str | None = None,
    server_action: str | None = None,
) -> models_cloud.NodeEvent:
    """Record a health event of ``node`` (readable by the provider and by the node's tenant)."""
    event = models_cloud.NodeEvent(
        node_id=node.id,
        tenant_id=node.tenant_id,
        t_s=t_s,
        type=kind,
        reason=reason[:64],
        message=message[:4000],
        agent_action=agent_action,
        server_action=server_action,
    )
    session.add(event)
    return event


def judge(session: orm.Session, node: models.Node, report: Mapping[str, Any]) -> Judgement:
    """Add ``report`` to the node's history and judge it (see the module docstring). A report older than
    the history's newest sample is judged but not added. Bad sample or verdict data: ``InvalidInputError``."""
    claimed = _claimed(node, report)
    row = evidence_row(session, node)
    t_s = float(report.get("collected_at_s") or 0.0)
    latest = None
    if report.get("up", True):
        latest, xids = _parse_sample(report, t_s)
        if t_s >= (row.last_t_s or 0.0):
            _add_history(row, latest, xids)
    verdict = evaluate(session, node, row, latest, max(t_s, row.last_t_s or 0.0))
    disagreement = _disagreement(verdict, claimed)
    repeated = (
        disagreement is not None
        and (row.agent_verdict or {}).get("action") == (claimed.action.name if claimed else None)
        and (row.verdict or {}).get("action") == verdict.action.name
        and row.disagreements
    )
    if disagreement is not None and not repeated:
        row.disagreements = (row.disagreements or 0) + 1
        add_event(
            session,
            node,
            t_s,
            "AgentDisagrees",
            disagreement,
            kind="Warning",
            agent_action=claimed.action.name if claimed else None,
            server_action=verdict.action.name,
        )
    elif disagreement is not None:
        row.disagreements = (row.disagreements or 0) + 1  # the same claim again: counted, not re-recorded
    before = {r.get("key") for r in (row.verdict or {}).get("reasons", [])}
    new = tuple(r.key for r in verdict.reasons if r.action > Action.IGNORE and r.key not in before)
    row.server_action = verdict.action.name
    row.verdict = verdict.to_dict()
    row.agent_verdict = claimed.to_dict() if claimed else None
    return Judgement(verdict, claimed, disagreement, new)


def held(row: models_cloud.NodeEvidence) -> Action | None:
    """The rung of the drain the control plane holds on the node (None: none)."""
    return Action.parse(row.held_action) if row.held_action else None
