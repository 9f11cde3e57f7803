"""A staged rollout declared in HCL (``resource "velyrix_rollout" "NAME" { ... }``) -> ``RolloutSpec``::

    resource "velyrix_rollout" "driver_580" {
      region    = "us-east-1"
      component = "gpu_driver"
      version   = "580.95.05"
      target { node_type = "hgx-h200-8g" }            # or: clusters = ["acme-pretrain"]
      stages    = ["staging", "canary", "production"]
      canary { nodes = 4, soak = "2h" }
      max_unavailable = "10%"
      window { days = ["sat", "sun"], start = "02:00", hours = 6, timezone = "UTC" }
      notice_hours = 72
      gates    = ["acceptance", "no_new_xids", "all_reduce_baseline"]
      rollback = "automatic"
    }

A block written on one line may separate its attributes with commas (as above). Every problem is reported
at once with file:line:column, what was expected and the closest valid value (``errors.SpecError``).
``from_dict`` checks the same rules on plain data (the API's body) and raises ``InvalidInputError``.
"""

from __future__ import annotations

import re
import zoneinfo
from dataclasses import asdict, dataclass
from typing import Any

from velyrix import catalog, errors
from velyrix.catalog import versions
from velyrix.declarations import expressions, hcl

STAGES = ("staging", "canary", "production")
GATES = ("acceptance", "no_new_xids", "all_reduce_baseline")
ROLLBACK = ("automatic", "manual")
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
MAX_BYTES = 64 * 1024
ATTRIBUTES = {
    "region": 'a catalog region such as "us-east-1"',
    "component": "a component of catalog/data/versions.toml",
    "version": "a known version of the component",
    "stages": 'a list from "staging", "canary", "production" ending with "production"',
    "max_unavailable": 'nodes at a time: a count such as 4 or a share such as "10%"',
    "max_unavailable_per_cluster": 'per tenant cluster: a count or a share such as "25%"',
    "max_unavailable_per_su": 'per scalable unit: a count or a share such as "10%"',
    "notice_hours": "whole hours of notice to tenants before their window, 0..2160",
    "gates": 'a list from "acceptance", "no_new_xids", "all_reduce_baseline"',
    "rollback": '"automatic" or "manual"',
    "failed_node_limit": "nodes that may fail validation before the rollout halts, 0..100",
    "notify": 'targets told before and after: ["email:ADDRESS", "webhook:URL", "pagerduty:URL"]',
}
BLOCKS = {
    "target": {"node_type": "a catalog node type", "clusters": "a list of cluster names"},
    "staging": {"nodes": "free nodes of the region in the staging pod, 1..64"},
    "canary": {"nodes": "nodes in the canary, 1..64", "soak": 'a duration such as "2h" or "30m"'},
    "window": {
        "days": 'a list of days such as ["sat", "sun"]',
        "start": 'a time of day "HH:MM"',
        "hours": "whole hours, 1..24",
        "timezone": 'an IANA time zone such as "UTC"',
    },
}
_ONE_LINE_BLOCK = re.compile(r"^(\s*)(" + "|".join(BLOCKS) + r")(\s*)\{(?=.*\}\s*(#.*)?$)", re.MULTILINE)


@dataclass(frozen=True)
class WindowSpec:
    """Weekly maintenance window: ``days`` (mon..sun), ``start`` "HH:MM" local time, ``hours`` long."""

    days: tuple[str, ...]
    start: str
    hours: int
    timezone: str = "UTC"


@dataclass(frozen=True)
class RolloutSpec:
    """A validated rollout. ``max_unavailable*``: a node count (int) or a share such as "10%" (str)."""

    name: str
    region: str
    component: str
    version: str
    stages: tuple[str, ...]
    window: WindowSpec
    target_node_type: str | None = None
    target_clusters: tuple[str, ...] = ()
    staging_nodes: int = 4
    canary_nodes: int = 0
    canary_soak_s: float = 0.0
    max_unavailable: int | str = "10%"
    max_unavailable_per_cluster: int | str | None = None
    max_unavailable_per_su: int | str | None = None
    notice_hours: int = 72
    gates: tuple[str, ...] = GATES
    rollback: str = "automatic"
    failed_node_limit: int = 0
    notify: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain data (the API's body), the inverse of ``from_dict``."""
        out = asdict(self)
        out["stages"], out["gates"], out["target_clusters"] = (
            list(self.stages),
            list(self.gates),
            list(self.target_clusters),
        )
        out["window"]["days"] = list(self.window.days)
        out["notify"] = list(self.notify)
        return out


def duration_s(text: str) -> float:
    """``"2h"``, ``"30m"``, ``"90s"``, ``"1h30m"`` -> seconds; ``ValueError`` otherwise."""
    m = re.fullmatch(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text.strip())
    if not text.strip() or m is None:
        raise ValueError(text)
    d, h, mi, s = (int(g or 0) for g in m.groups())
    return float(((d * 24 + h) * 60 + mi) * 60 + s)


def _share(value: Any) -> int | str:
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, int) and value >= 1:
        return value
    if isinstance(value, str) and (m := re.fullmatch(r"(\d+(?:\.\d+)?)%", value)) and 0 < float(m.group(1)) <= 100:
        return value
    raise ValueError(value)


def _one_of(problems: list[tuple[str, str, str | None]], what: str, value: Any, valid: tuple[str, ...]) -> None:
    if value not in valid:
        near = errors.closest(str(value), valid)
        problems.append((what, f"{what} must be one of {', '.join(valid)}, got {value!r}", near[0] if near else None))


def _check_core(raw: dict[str, Any], problems: list[tuple[str, str, str | None]]) -> None:
    if raw.get("region") not in catalog.region_names():
        near = errors.closest(str(raw.get("region")), catalog.region_names())
        problems.append(("region", f"unknown region {raw.get('region')!r}", near[0] if near else None))
    comp = raw.get("component")
    if comp not in versions.component_names():
        near = errors.closest(str(comp), versions.component_names())
        problems.append(("component", f"unknown component {comp!r}", near[0] if near else None))
    elif raw.get("version") not in versions.component(comp).versions:
        known = versions.component(comp).versions
        near = errors.closest(str(raw.get("version")), known)
        problems.append(
            (
                "version",
                f"{comp} has no version {raw.get('version')!r}: known {', '.join(known)}",
                near[0] if near else None,
            )
        )
    stages = list(raw.get("stages") or ())
    for st in stages:
        _one_of(problems, "stages", st, STAGES)
    if not stages or stages[-1] != "production" or stages != [s for s in STAGES if s in stages]:
        problems.append(
            ("stages", 'stages run in the order "staging", "canary", "production" and end with "production"', None)
        )
    for g in raw.get("gates") or ():
        _one_of(problems, "gates", g, GATES)
    _one_of(problems, "rollback", raw.get("rollback", "automatic"), ROLLBACK)
    notify = raw.get("notify") or []
    if not isinstance(notify, list | tuple) or len(notify) > 8:
        problems.append(("notify", "notify is a list of at most 8 targets", None))
    else:
        for t in notify:
            if not isinstance(t, str) or not re.fullmatch(r"(email|webhook|pagerduty):[!-~]+", t) or len(t) > 512:
                problems.append(
                    ("notify", f"notify target {t!r} is not email:ADDRESS, webhook:URL or pagerduty:URL", None)
                )


def _check_limits(raw: dict[str, Any], problems: list[tuple[str, str, str | None]]) -> None:
    for name in ("max_unavailable", "max_unavailable_per_cluster", "max_unavailable_per_su"):
        if raw.get(name) is not None:
            try:
                _share(raw[name])
            except ValueError:
                problems.append(
                    (name, f'{name} must be a node count >= 1 or a share such as "10%", got {raw[name]!r}', None)
                )
    for name, lo, hi in (("notice_hours", 0, 2160), ("failed_node_limit", 0, 100), ("staging_nodes", 1, 64)):
        value = raw.get(name, lo)
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            problems.append((name, f"{name} must be a whole number {lo}..{hi}, got {value!r}", None))
    stages = raw.get("stages") or ()
    canary = raw.get("canary_nodes", 0)
    if "canary" in stages and (isinstance(canary, bool) or not isinstance(canary, int) or not 1 <= canary <= 64):
        problems.append(("canary", 'a "canary" stage needs canary { nodes = 1..64, soak = "2h" }', None))
    if "canary" not in stages and canary:
        problems.append(("canary", 'a canary block needs "canary" in stages', None))
    if (raw.get("target_node_type") is None) == (not raw.get("target_clusters")):
        problems.append(("target", "target names a node_type or clusters, exactly one of them", None))
    elif raw.get("target_node_type") is not None and raw["target_node_type"] not in catalog.node_type_names():
        near = errors.closest(str(raw["target_node_type"]), catalog.node_type_names())
        problems.append(("target", f"unknown node type {raw['target_node_type']!r}", near[0] if near else None))


def _check_window(w: Any, problems: list[tuple[str, str, str | None]]) -> None:
    if not isinstance(w, dict):
        problems.append(("window", 'a rollout needs window { days = [...], start = "HH:MM", hours = N }', None))
        return
    days = w.get("days")
    if not isinstance(days, list | tuple) or not days:
        problems.append(("window", 'window days is a non-empty list such as ["sat", "sun"]', None))
    else:
        for d in days:
            _one_of(problems, "window days", d, DAYS)
    if not isinstance(w.get("start"), str) or not re.fullmatch(r"([01]\d|2[0-3]):[0-5]\d", w["start"]):
        problems.append(("window", f'window start is "HH:MM" (00:00..23:59), got {w.get("start")!r}', None))
    hours = w.get("hours")
    if isinstance(hours, bool) or not isinstance(hours, int) or not 1 <= hours <= 24:
        problems.append(("window", f"window hours is a whole number 1..24, got {hours!r}", None))
    try:
        zoneinfo.ZoneInfo(str(w.get("timezone", "UTC")))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        problems.append(("window", f"unknown time zone {w.get('timezone')!r}", "UTC"))


def problems_of_window(window: Any) -> list[str]:
    """What is wrong with a maintenance window's plain data (``{"days", "start", "hours", "timezone"}``)."""
    out: list[tuple[str, str, str | None]] = []
    _check_window(dict(window) if isinstance(window, dict) else window, out)
    return [m for _, m, _ in out]


def problems_of(raw: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    """Every rule ``raw`` (``RolloutSpec.to_dict``'s shape) breaks: (field, message, closest valid value)."""
    out: list[tuple[str, str, str | None]] = []
    _check_core(raw, out)
    _check_limits(raw, out)
    _check_window(raw.get("window"), out)
    return out


def from_dict(raw: dict[str, Any]) -> RolloutSpec:
    """A spec from plain data; ``InvalidInputError`` naming the first broken rule (``problems_of``: all)."""
    found = problems_of(raw)
    if found:
        field, message, near = found[0]
        raise errors.InvalidInputError(message, hint=f"did you mean '{near}'?" if near else None, field=field)
    w = raw["window"]
    window = WindowSpec(tuple(w["days"]), w["start"], int(w["hours"]), str(w.get("timezone", "UTC")))
    names = {f for f in RolloutSpec.__dataclass_fields__ if f != "window"}
    kwargs: dict[str, Any] = {k: (tuple(v) if isinstance(v, list) else v) for k, v in raw.items() if k in names}
    return RolloutSpec(window=window, **kwargs)


def _values(
    block: hcl.Block, allowed: dict[str, str], diags: list[errors.Diagnostic], file: str, skip: tuple[str, ...] = ()
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for attr in block.attributes:
        if attr.name in skip:
            continue
        if attr.name not in allowed:
            near = errors.closest(attr.name, allowed)
            diags.append(
                errors.Diagnostic(
                    file, attr.line, attr.column, f"unknown attribute '{attr.name}'", ", ".join(allowed), *near[:1]
                )
            )
            continue
        try:
            out[attr.name] = expressions.evaluate(attr.expr, {})
        except expressions.ExpressionError as exc:
            diags.append(exc.diagnostic(file))
    return out


def _raw(
    block: hcl.Block, file: str, diags: list[errors.Diagnostic]
) -> tuple[dict[str, Any], dict[str, tuple[int, int]]]:
    """Plain data of one resource block and where each field was declared (line, column)."""
    raw: dict[str, Any] = {"name": block.labels[1] if len(block.labels) > 1 else ""}
    where = {a.name: (a.line, a.column) for a in block.attributes}
    raw.update(_values(block, ATTRIBUTES, diags, file, skip=tuple(BLOCKS)))
    nested: dict[str, dict[str, Any]] = {}
    for child in block.blocks:
        where[child.type] = (child.line, child.column)
        if child.type not in BLOCKS:
            near = errors.closest(child.type, BLOCKS)
            diags.append(
                errors.Diagnostic(
                    file, child.line, child.column, f"unknown block '{child.type}'", ", ".join(BLOCKS), *near[:1]
                )
            )
            continue
        nested[child.type] = _values(child, BLOCKS[child.type], diags, file)
    for attr in block.attributes:  # one-line blocks, read as objects: canary = { nodes = 4, soak = "2h" }
        if attr.name in BLOCKS:
            value = expressions.evaluate(attr.expr, {})
            nested[attr.name] = dict(value) if isinstance(value, dict) else {}
            for k in nested[attr.name]:
                if k not in BLOCKS[attr.name]:
                    near = errors.closest(k, BLOCKS[attr.name])
                    diags.append(
                        errors.Diagnostic(
                            file,
                            attr.line,
                            attr.column,
                            f"unknown attribute '{k}' in {attr.name}",
                            ", ".join(BLOCKS[attr.name]),
                            *near[:1],
                        )
                    )
    _fold(raw, nested, where, file, diags)
    return raw, where


def _fold(
    raw: dict[str, Any],
    nested: dict[str, dict[str, Any]],
    where: dict[str, tuple[int, int]],
    file: str,
    diags: list[errors.Diagnostic],
) -> None:
    target = nested.get("target", {})
    raw["target_node_type"] = target.get("node_type")
    raw["target_clusters"] = list(target.get("clusters") or [])
    if "staging" in nested:
        raw["staging_nodes"] = nested["staging"].get("nodes", 4)
    canary = nested.get("canary", {})
    raw["canary_nodes"] = canary.get("nodes", 0)
    try:
        raw["canary_soak_s"] = duration_s(str(canary.get("soak", "0s")))
    except ValueError:
        line, col = where.get("canary", (1, 1))
        diags.append(
            errors.Diagnostic(
                file, line, col, f"canary soak {canary.get('soak')!r} is not a duration", '"2h", "30m" or "1h30m"'
            )
        )
    raw["window"] = nested.get("window")
    raw.setdefault("stages", list(STAGES))
    raw.setdefault("gates", list(GATES))


def loads(text: str, filename: str = "rollout.tf") -> list[RolloutSpec]:
    """Every ``velyrix_rollout`` declared in ``text``; ``SpecError`` with every problem found."""
    if len(text.encode()) > MAX_BYTES:
        raise errors.SpecError([errors.Diagnostic(filename, 1, 1, f"rollout file over {MAX_BYTES} bytes")])
    root = hcl.parse(_ONE_LINE_BLOCK.sub(r"\1\2\3= {", text), filename)
    diags: list[errors.Diagnostic] = []
    out: list[tuple[dict[str, Any], dict[str, tuple[int, int]], hcl.Block]] = []
    for block in root.blocks:
        if (
            block.type != "resource"
            or not block.labels
            or block.labels[0] != "velyrix_rollout"
            or len(block.labels) != 2
        ):
            diags.append(
                errors.Diagnostic(
                    filename,
                    block.line,
                    block.column,
                    "expected a rollout resource",
                    'resource "velyrix_rollout" "NAME" { ... }',
                )
            )
            continue
        raw, where = _raw(block, filename, diags)
        out.append((raw, where, block))
    if not out and not diags:
        diags.append(
            errors.Diagnostic(
                filename, 1, 1, "no velyrix_rollout resource in file", 'resource "velyrix_rollout" "NAME" { ... }'
            )
        )
    for raw, where, block in out:
        for field, message, near in problems_of(raw):
            line, col = where.get(
                field.split()[0], where.get("target" if field == "target" else field, (block.line, block.column))
            )
            diags.append(errors.Diagnostic(filename, line, col, message, ATTRIBUTES.get(field), near))
    if diags:
        raise errors.SpecError(diags)
    return [from_dict(raw) for raw, _, _ in out]
