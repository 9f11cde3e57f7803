"""Health knowledge as typed records: the XID catalog (``xids.toml``) and the thresholds
(``health_thresholds.toml``). Read lazily through ``velyrix.catalog.load_toml``.

Actions and levels stay strings here (the catalog sits below ``velyrix.health``); the engine turns
them into ``velyrix.health.ladder.Action`` and ``Level``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from velyrix import errors
from velyrix.catalog.reader import load_toml

ACTIONS = ("IGNORE", "RESTART_APP", "RESET_GPU", "REBOOT", "DRAIN_AFTER_JOB", "DRAIN_NOW", "QUARANTINE", "RMA")
LEVELS = ("ok", "warn", "degraded", "fatal")
OPS = ("gt", "ge", "lt", "le", "eq", "ne", "mask")
SCOPES = ("gpu", "ib_port", "nvme")


@dataclass(frozen=True)
class XidInfo:
    """One XID: NVIDIA's meaning and buckets, and what Velyrix does on its first occurrence."""

    code: int
    mnemonic: str
    meaning: str
    nvidia_immediate: str
    nvidia_investigatory: str
    action: str
    level: str
    escalates: bool
    critical: bool
    source: str
    follows_other: bool = False
    note: str = ""
    reports_recovery_action: bool = False
    """The event carries NVML's recovery action, which decides the action (``xid_recovery_actions``)."""
    twin_set: dict[str, Any] = field(default_factory=dict)
    """What an injected XID of this code sets on the twin's GPU (attribute -> value)."""
    twin_add: dict[str, int] = field(default_factory=dict)
    """Counters of the twin's GPU an injected XID of this code increases (attribute -> amount)."""


@dataclass(frozen=True)
class CounterRule:
    """A finding when the latest value of ``metric`` compares (``op``) with ``value``."""

    name: str
    scope: str
    metric: str
    op: str
    value: Any
    level: str
    action: str
    reason: str
    source: str


@dataclass(frozen=True)
class TrendRule:
    """A finding when a cumulative counter grows by ``min_increase`` within ``window_h`` hours (and,
    with ``rising_factor`` > 0, the second half of the window grows that many times the first)."""

    name: str
    scope: str
    metric: str
    window_h: float
    min_increase: float
    rising_factor: float
    level: str
    action: str
    reason: str
    source: str
    min_steps: int = 1
    """Polls in the window in which the counter grew: 2 or more tells a sustained rise from a one-off burst."""


@dataclass(frozen=True)
class HealthThresholds:
    """All thresholds of ``health_thresholds.toml``; the sections without rows stay plain dicts."""

    counters: tuple[CounterRule, ...]
    trends: tuple[TrendRule, ...]
    peer: dict[str, Any]
    recurrence: dict[str, Any]
    lemon: dict[str, Any]
    checks: dict[str, Any]
    gpu: dict[str, Any]


def _check(value: str, valid: tuple[str, ...], kind: str, where: str) -> None:
    if value not in valid:
        raise errors.CatalogError(f"{where}: unknown {kind} '{value}' (valid: {', '.join(valid)})")


@functools.cache
def _xids() -> dict[int, XidInfo]:
    raw = load_toml("xids.toml")
    out: dict[int, XidInfo] = {}
    for row in raw["xid"]:
        info = XidInfo(**row)
        _check(info.action, ACTIONS, "action", f"xids.toml xid {info.code}")
        _check(info.level, LEVELS, "level", f"xids.toml xid {info.code}")
        out[info.code] = info
    return out


def xid(code: int) -> XidInfo:
    """The catalog entry of XID ``code``; ``UnknownNameError`` for a code the catalog does not list."""
    table = _xids()
    if code not in table:
        raise errors.UnknownNameError("XID", str(code), [str(c) for c in table])
    return table[code]


def xid_codes() -> list[int]:
    """Every XID code in the catalog, ascending."""
    return sorted(_xids())


def xid_recovery_actions() -> dict[str, tuple[str, str]]:
    """XID 154: NVML recovery action name -> (ladder action, level)."""
    raw = load_toml("xids.toml")["recovery_action"]
    return {k: (str(v[0]), str(v[1])) for k, v in raw.items()}


def xid_unknown() -> tuple[str, str]:
    """(action, level) for an XID the catalog does not list."""
    raw = load_toml("xids.toml")["unknown"]
    return str(raw["action"]), str(raw["level"])


@functools.cache
def health_thresholds() -> HealthThresholds:
    """The thresholds of ``health_thresholds.toml``, validated (unknown actions, levels, ops are errors)."""
    raw = load_toml("health_thresholds.toml")
    counters = tuple(CounterRule(**row) for row in raw.get("counter", []))
    trends = tuple(
        TrendRule(
            **{
                **row,
                "window_h": float(row["window_h"]),
                "min_increase": float(row["min_increase"]),
                "rising_factor": float(row["rising_factor"]),
            }
        )
        for row in raw.get("trend", [])
    )
    for c in counters:
        _check(c.op, OPS, "op", f"health_thresholds.toml counter {c.name}")
    rules: tuple[CounterRule | TrendRule, ...] = (*counters, *trends)
    for r in rules:
        _check(r.action, ACTIONS, "action", f"health_thresholds.toml {r.name}")
        _check(r.level, LEVELS, "level", f"health_thresholds.toml {r.name}")
        _check(r.scope, SCOPES, "scope", f"health_thresholds.toml {r.name}")
    for section in ("peer", "lemon"):
        _check(raw[section]["action"], ACTIONS, "action", f"health_thresholds.toml [{section}]")
    return HealthThresholds(
        counters=counters,
        trends=trends,
        peer=dict(raw["peer"]),
        recurrence=dict(raw["recurrence"]),
        lemon=dict(raw["lemon"]),
        checks=dict(raw["checks"]),
        gpu=dict(raw["gpu"]),
    )
