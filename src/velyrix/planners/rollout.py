"""The plan of a staged rollout: waves, the nodes of each, the window each falls in per tenant, and what
blocks it. Pure: the same spec, fleet view and time give the same plan (no database, no clock).

Order: the staging pod (free nodes of the region), the canary (the next free nodes; it soaks), then
production: the remaining free nodes, then each tenant cluster in waves of at most the per-cluster limit,
each wave inside one of the cluster's maintenance windows that starts after the tenants' notice.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import zoneinfo
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from velyrix.catalog import versions
from velyrix.declarations.rollout import DAYS, RolloutSpec, WindowSpec

HORIZON_DAYS = 120
"""How far ahead the planner looks for windows (days)."""


@dataclass(frozen=True)
class NodeView:
    """One node as the planner sees it. ``installed``: component -> version now on the node."""

    hostname: str
    node_type: str
    scalable_unit: str
    installed: dict[str, str]
    cluster: str | None = None
    tenant: str | None = None


@dataclass(frozen=True)
class ClusterView:
    """A tenant cluster: its committed size, whether its contract promises full size (every committed node
    healthy: ``cluster-minutes``), its contract's maintenance window (None: the rollout's) and notice."""

    name: str
    tenant: str
    node_count: int
    full_size: bool = False
    window: WindowSpec | None = None
    notice_days: int = 5


@dataclass(frozen=True)
class Wave:
    """Nodes upgraded together (at most the limits apart). ``window_*``: the window occurrence it is planned
    in (UTC) for a tenant cluster's wave, ``starts_at`` when in it; None for provider-owned nodes (staging,
    canary, free production nodes)."""

    index: int
    stage: str
    nodes: tuple[str, ...]
    cluster: str | None = None
    tenant: str | None = None
    window_start: dt.datetime | None = None
    window_end: dt.datetime | None = None
    starts_at: dt.datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "stage": self.stage,
            "nodes": list(self.nodes),
            "cluster": self.cluster,
            "tenant": self.tenant,
            "window_start": self.window_start.isoformat() if self.window_start else None,
            "window_end": self.window_end.isoformat() if self.window_end else None,
            "starts_at": self.starts_at.isoformat() if self.starts_at else None,
        }


@dataclass(frozen=True)
class Block:
    """Something that stops the rollout from being applied: a stable ``code`` and a sentence."""

    code: str
    message: str
    cluster: str | None = None


@dataclass
class Plan:
    """The rollout's plan. ``wave_s``: simulated/real seconds one wave takes (drain, install, validate)."""

    name: str
    component: str
    version: str
    waves: list[Wave]
    blocks: list[Block]
    skipped: list[str]
    """Nodes already on the version (nothing to do)."""
    max_unavailable_nodes: int
    wave_s: float
    companions: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "component": self.component,
            "version": self.version,
            "also_installs": self.companions,
            "max_unavailable_nodes": self.max_unavailable_nodes,
            "wave_seconds": self.wave_s,
            "nodes": sum(len(w.nodes) for w in self.waves),
            "skipped": self.skipped,
            "waves": [w.to_dict() for w in self.waves],
            "blocks": [{"code": b.code, "message": b.message, "cluster": b.cluster} for b in self.blocks],
        }


def limit(value: int | str | None, of: int, default: int) -> int:
    """A node count from ``value`` (a count, or a share "10%" of ``of`` rounded up; None -> ``default``), >= 1."""
    if value is None:
        return max(1, default)
    if isinstance(value, int):
        return max(1, value)
    m = re.fullmatch(r"(\d+(?:\.\d+)?)%", value)
    share = float(m.group(1)) if m else 100.0
    return max(1, math.ceil(of * share / 100 - 1e-9))


def occurrences(window: WindowSpec, after: dt.datetime) -> Iterator[tuple[dt.datetime, dt.datetime]]:
    """The window's occurrences (UTC start, end) that start at or after ``after``, for ``HORIZON_DAYS``."""
    tz = zoneinfo.ZoneInfo(window.timezone)
    hh, mm = (int(x) for x in window.start.split(":"))
    day = after.astimezone(tz).date() - dt.timedelta(days=1)
    for _ in range(HORIZON_DAYS + 2):
        if DAYS[day.weekday()] in window.days:
            start = dt.datetime(day.year, day.month, day.day, hh, mm, tzinfo=tz).astimezone(dt.UTC)
            if start >= after:
                yield start, start + dt.timedelta(hours=window.hours)
        day += dt.timedelta(days=1)


def wave_seconds(component: str) -> float:
    """Seconds one wave takes: drain, install and validate (catalog ``versions.toml``)."""
    t = versions.rollout_times()
    return 60.0 * (t.drain_minutes + versions.component(component).install_minutes + t.validate_minutes)


def _batches(nodes: Sequence[NodeView], size: int, per_su: int) -> list[list[str]]:
    """Nodes in order, in batches of at most ``size`` with at most ``per_su`` of one scalable unit."""
    out: list[list[str]] = []
    todo = list(nodes)
    while todo:
        batch: list[NodeView] = []
        for n in list(todo):
            if len(batch) < size and sum(1 for b in batch if b.scalable_unit == n.scalable_unit) < per_su:
                batch.append(n)
                todo.remove(n)
        out.append([n.hostname for n in batch])
    return out


@dataclass
class _Ctx:
    spec: RolloutSpec
    now: dt.datetime
    wave_s: float
    blocks: list[Block]
    waves: list[Wave]
    max_global: int = 1

    def add(self, stage: str, nodes: Sequence[str], **kw: Any) -> None:
        self.waves.append(Wave(len(self.waves), stage, tuple(nodes), **kw))


def _cluster_batches(ctx: _Ctx, c: ClusterView, nodes: list[NodeView], spares: int) -> list[list[str]]:
    """The cluster's waves (node batches) after its checks; empty when a check blocks it."""
    spec = ctx.spec
    per_cluster = spec.max_unavailable if spec.max_unavailable_per_cluster is None else spec.max_unavailable_per_cluster
    size = min(limit(per_cluster, c.node_count, 1), ctx.max_global, c.node_count or ctx.max_global)
    if spec.notice_hours < c.notice_days * 24:
        ctx.blocks.append(
            Block(
                "notice_shorter_than_contract",
                f"notice {spec.notice_hours} h is shorter than {c.tenant}'s contract notice of {c.notice_days} days: "
                "its maintenance would count against the SLA",
                c.name,
            )
        )
    if c.full_size and spares < size:
        ctx.blocks.append(
            Block("no_spare", f"{c.name} is promised at full size and needs {size} spare nodes; {spares} free", c.name)
        )
    window = c.window or spec.window
    if window.hours * 3600 < ctx.wave_s:
        ctx.blocks.append(
            Block(
                "window_too_short",
                f"{c.name}'s {window.hours} h window is shorter than one wave ({ctx.wave_s / 3600:.2f} h)",
                c.name,
            )
        )
        return []
    return _batches(nodes, size, limit(spec.max_unavailable_per_su, 32, 10**9))


def _slot(occ: list[tuple[dt.datetime, dt.datetime]], at: dt.datetime, wave_s: float) -> tuple[dt.datetime, int]:
    """The earliest start >= ``at`` inside one of ``occ`` with room for a wave, and that occurrence's index
    (-1: none within the horizon)."""
    room = dt.timedelta(seconds=wave_s)
    for i, (a, b) in enumerate(occ):
        start = max(a, at)
        if start + room <= b:
            return start, i
    return at, -1


def _schedule(ctx: _Ctx, todo: list[tuple[ClusterView, list[list[str]]]], earliest: dt.datetime) -> None:
    """Tenant waves on one timeline (the controller runs waves one after another): the next wave is the
    one, of any cluster, that can start first inside its cluster's window."""
    occ = {c.name: list(occurrences(c.window or ctx.spec.window, earliest)) for c, _ in todo}
    queues = {c.name: list(batches) for c, batches in todo if batches}
    views = {c.name: c for c, _ in todo}
    cursor = earliest
    while queues:
        options = {name: _slot(occ[name], cursor, ctx.wave_s) for name in queues}
        for name in [n for n, (_, i) in options.items() if i < 0]:
            ctx.blocks.append(Block("no_window", f"{name} has no window in the next {HORIZON_DAYS} days", name))
            del queues[name]
        if not queues:
            return
        name = min(queues, key=lambda n: (options[n][0], n))
        start, i = options[name]
        c = views[name]
        ctx.add(
            "production",
            queues[name].pop(0),
            cluster=c.name,
            tenant=c.tenant,
            window_start=occ[name][i][0],
            window_end=occ[name][i][1],
            starts_at=start,
        )
        if not queues[name]:
            del queues[name]
        cursor = start + dt.timedelta(seconds=ctx.wave_s)


def plan(spec: RolloutSpec, nodes: Sequence[NodeView], clusters: Sequence[ClusterView], now: dt.datetime) -> Plan:
    """The plan of ``spec`` over ``nodes`` (the region's, any cluster) at ``now`` (aware UTC; tenants are
    told now, so windows start at least ``notice_hours`` later)."""
    wave_s = wave_seconds(spec.component)
    by_name = {c.name: c for c in clusters}
    mine = [
        n
        for n in sorted(nodes, key=lambda n: n.hostname)
        if (spec.target_node_type is not None and n.node_type == spec.target_node_type)
        or (n.cluster in spec.target_clusters)
    ]
    skipped = [n.hostname for n in mine if n.installed.get(spec.component) == spec.version]
    todo = [n for n in mine if n.hostname not in skipped]
    ctx = _Ctx(spec, now, wave_s, [], [])
    ctx.max_global = limit(spec.max_unavailable, len(mine), 1)
    for n in todo:
        for p in versions.problems(n.installed, spec.component, spec.version):
            ctx.blocks.append(Block("incompatible", f"{n.hostname}: {p}", n.cluster))
            break
    free = [n for n in todo if n.cluster is None]
    if "staging" in spec.stages:
        staged, free = free[: spec.staging_nodes], free[spec.staging_nodes :]
        if len(staged) < spec.staging_nodes:
            ctx.blocks.append(
                Block("no_staging_pod", f"the staging pod needs {spec.staging_nodes} free nodes; {len(staged)} free")
            )
        if staged:
            ctx.add("staging", [n.hostname for n in staged])
    if "canary" in spec.stages:
        canary, free = free[: spec.canary_nodes], free[spec.canary_nodes :]
        if len(canary) < spec.canary_nodes:
            ctx.blocks.append(
                Block("no_canary", f"the canary needs {spec.canary_nodes} free nodes; {len(canary)} free")
            )
        if canary:
            ctx.add("canary", [n.hostname for n in canary])
    spares = len(free)
    for batch in _batches(free, ctx.max_global, limit(spec.max_unavailable_per_su, 32, 10**9)):
        ctx.add("production", batch)
    lead_s = wave_s * len(ctx.waves) + spec.canary_soak_s
    earliest = now + max(dt.timedelta(hours=spec.notice_hours), dt.timedelta(seconds=lead_s))
    tenant_waves = []
    for name in sorted({n.cluster for n in todo if n.cluster is not None}):
        c = by_name.get(name) or ClusterView(name, next(n.tenant or "" for n in todo if n.cluster == name), 0)
        tenant_waves.append((c, _cluster_batches(ctx, c, [n for n in todo if n.cluster == name], spares)))
    _schedule(ctx, tenant_waves, earliest)
    if not mine:
        ctx.blocks.append(Block("no_nodes", "the target matches no node of the region"))
    return Plan(
        name=spec.name,
        component=spec.component,
        version=spec.version,
        waves=ctx.waves,
        blocks=ctx.blocks,
        skipped=skipped,
        max_unavailable_nodes=ctx.max_global,
        wave_s=wave_s,
        companions=versions.companions(spec.component),
    )
