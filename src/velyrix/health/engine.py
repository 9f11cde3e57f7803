"""The health engine: evidence -> verdict (level, reasons, one action on the ladder).

Rules, each producing ``Reason``s with a stable ``key`` (one trigger, e.g. ``xid:48:gpu3``):
- XIDs from the catalog; a recurrence after a fix (GPU reset, reboot) climbs ONE rung per recurrence
  (escalation), up to QUARANTINE; after ``hardware_after_remedies`` fixes the reason says "hardware".
  A reason stays active until a fix at its rung (capped at REBOOT) follows its last occurrence;
  IGNORE/RESTART_APP reasons are current for ``recent_s`` only.
- Counter rules on the latest sample, trend rules over windows (rising single-bit rate, remaps
  approaching a bank's limit, link flaps), peer outliers (a GPU slower than its peers), failed or
  unrunnable checks, and a lemon score from the repair history.
The verdict takes the highest action and level of its reasons; policy overrides tune both.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from velyrix import errors
from velyrix.catalog import health as catalog_health
from velyrix.health import evidence as ev
from velyrix.health.ladder import ESCALATION_CAP, Action, Level
from velyrix.health.policy import Policy

_SOURCE_ORDER = {"xid": 0, "check": 1, "counter": 2, "trend": 3, "peer": 4, "lemon": 5}

RECENT_S = 3600.0
"""An XID whose action needs no fix (IGNORE, RESTART_APP) is current for this long after it was seen."""

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "mask": lambda a, b: (int(a) & int(b)) != 0,
}


@dataclass(frozen=True)
class Reason:
    """One finding. ``key`` names the trigger; ``source`` the rule family (xid, counter, trend, check,
    peer, lemon); ``hardware`` marks a suspected hardware fault."""

    key: str
    source: str
    message: str
    level: Level
    action: Action
    hardware: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "source": self.source,
            "message": self.message,
            "level": str(self.level),
            "action": self.action.name,
            "hardware": self.hardware,
        }

    @classmethod
    def from_dict(cls, raw: Any) -> Reason:
        """A reason from its ``to_dict`` form (what a node report carries). Raises ``InvalidInputError``
        naming the bad field; unknown levels and actions get the closest valid name."""
        if not isinstance(raw, dict):
            raise errors.InvalidInputError(f"a verdict reason must be an object, got {type(raw).__name__}")
        for name in ("key", "source", "message"):
            if not isinstance(raw.get(name), str) or not raw.get(name):
                raise errors.InvalidInputError(f"verdict reason field '{name}' must be a non-empty string")
        hardware = raw.get("hardware", False)
        if not isinstance(hardware, bool):
            raise errors.InvalidInputError("verdict reason field 'hardware' must be true or false")
        return cls(
            key=raw["key"][:200],
            source=raw["source"][:32],
            message=raw["message"][:1000],
            level=Level.parse(str(raw.get("level", ""))),
            action=Action.parse(str(raw.get("action", ""))),
            hardware=hardware,
        )


@dataclass(frozen=True)
class Verdict:
    """The engine's answer for one node: overall level, the action to take, and why."""

    node: str
    level: Level
    action: Action
    reasons: tuple[Reason, ...] = ()
    lemon_score: float = 0.0

    def reason(self, key: str) -> Reason | None:
        return next((r for r in self.reasons if r.key == key), None)

    def summary(self) -> str:
        """One line naming the strongest reason, for drain reasons and logs."""
        if not self.reasons:
            return "healthy"
        top = self.reasons[0]  # reasons are sorted strongest first
        more = f" (+{len(self.reasons) - 1} more)" if len(self.reasons) > 1 else ""
        return f"{top.key}: {top.message}{more}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "level": str(self.level),
            "action": self.action.name,
            "lemon_score": round(self.lemon_score, 3),
            "reasons": [r.to_dict() for r in self.reasons],
        }

    @classmethod
    def from_dict(cls, raw: Any, node: str, *, max_reasons: int = 200) -> Verdict:
        """A verdict from its ``to_dict`` form, every reason typed (what an agent's report carries);
        ``node`` is the node the report is for (a verdict naming another node is refused)."""
        if not isinstance(raw, dict):
            raise errors.InvalidInputError(f"the verdict must be an object, got {type(raw).__name__}")
        if raw.get("node", node) != node:
            raise errors.InvalidInputError(f"the verdict is for node '{raw.get('node')}', not '{node}'")
        reasons = raw.get("reasons", [])
        if not isinstance(reasons, list) or len(reasons) > max_reasons:
            raise errors.InvalidInputError(f"verdict 'reasons' must be a list of at most {max_reasons} reasons")
        score = raw.get("lemon_score", 0.0)
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise errors.InvalidInputError("verdict 'lemon_score' must be a number")
        return cls(
            node=node,
            level=Level.parse(str(raw.get("level", ""))),
            action=Action.parse(str(raw.get("action", ""))),
            reasons=tuple(Reason.from_dict(r) for r in reasons),
            lemon_score=float(score),
        )


@dataclass
class Engine:
    """Evaluates evidence with the catalog's thresholds and a policy. Stateless between calls: the
    evidence carries the history, so the same evidence always gives the same verdict."""

    policy: Policy = field(default_factory=Policy)
    thresholds: catalog_health.HealthThresholds = field(default_factory=catalog_health.health_thresholds)

    def evaluate(self, evidence: ev.Evidence) -> Verdict:
        """The verdict for ``evidence`` (see the module docstring for the rules)."""
        reasons: list[Reason] = []
        for gen in (
            self._xid_reasons,
            self._counter_reasons,
            self._trend_reasons,
            self._check_reasons,
            self._peer_reasons,
        ):
            reasons.extend(gen(evidence))
        score = self.lemon_score(evidence)
        lem = self.thresholds.lemon
        if self.policy.enabled("lemon") and score >= float(lem["threshold"]):
            reasons.append(
                Reason(
                    "lemon",
                    "lemon",
                    f"lemon score {score:.1f} >= {lem['threshold']} from repair history",
                    self.policy.rule_level("lemon", Level.parse(lem["level"])),
                    self.policy.rule_action("lemon", Action.parse(lem["action"])),
                    hardware=True,
                )
            )
        reasons = [
            r
            if r.action <= self.policy.max_action
            else Reason(r.key, r.source, r.message, r.level, self.policy.max_action, r.hardware)
            for r in reasons
        ]
        reasons.sort(key=lambda r: (-r.action, -r.level, _SOURCE_ORDER.get(r.source, 9), r.key))
        action = max((r.action for r in reasons), default=Action.IGNORE)
        level = max((r.level for r in reasons), default=Level.OK)
        return Verdict(evidence.node, level, action, tuple(reasons), score)

    # XIDs -----------------------------------------------------------------------------------------
    def _xid_reasons(self, e: ev.Evidence) -> Iterator[Reason]:
        rec = self.thresholds.recurrence
        window_s = float(rec["window_h"]) * 3600.0
        corr_s = float(rec["correlation_s"])
        hw_after = int(rec["hardware_after_remedies"])
        recent = [x for x in e.xids if e.now_s - window_s <= x.t_s <= e.now_s]
        groups: dict[tuple[int, int | None], list[ev.XidEvent]] = defaultdict(list)
        for x in recent:
            groups[(x.code, x.gpu)].append(x)
        fixes = [(r.t_s, r.gpu, ev.FIX_RUNG[r.kind]) for r in e.repairs if r.kind in ev.FIX_RUNG and r.t_s <= e.now_s]
        for (code, gpu), events in sorted(
            groups.items(), key=lambda kv: (kv[0][0], kv[0][1] if kv[0][1] is not None else -1)
        ):
            if not self.policy.enabled(str(code)):
                continue
            key = f"xid:{code}:gpu{gpu if gpu is not None else '?'}"
            base, level, message, escalates = self._xid_base(code, events[-1], recent, corr_s)
            n = 0
            if escalates:
                for prev, cur in zip(events, events[1:], strict=False):
                    if any(prev.t_s < t <= cur.t_s and (g is None or gpu is None or g == gpu) for t, g, _ in fixes):
                        n += 1
            action = base.up(n, cap=ESCALATION_CAP)
            last = events[-1].t_s
            if action <= Action.RESTART_APP:
                if e.now_s - last > RECENT_S:
                    continue
            else:
                need = min(int(action), int(Action.REBOOT))
                if any(t > last and rung >= need and (g is None or gpu is None or g == gpu) for t, g, rung in fixes):
                    continue
            hardware = n >= hw_after
            if n:
                message += f"; recurred after {n} fix{'es' if n > 1 else ''}" + (
                    " (same XID after repeated fixes: hardware suspected)" if hardware else ""
                )
            yield Reason(key, "xid", message, level, action, hardware)

    def _xid_base(
        self, code: int, last: ev.XidEvent, recent: list[ev.XidEvent], corr_s: float
    ) -> tuple[Action, Level, str, bool]:
        try:
            info = catalog_health.xid(code)
        except errors.UnknownNameError:  # an XID the catalog lacks is still evidence
            act, lvl = catalog_health.xid_unknown()
            return Action.parse(act), Level.parse(lvl), f"XID {code} (not in the catalog)", False
        action = self.policy.xid_action(code, Action.parse(info.action))
        level = self.policy.xid_level(code, Level.parse(info.level))
        message = f"XID {code} {info.mnemonic}: {info.meaning}"
        if info.reports_recovery_action:
            table = catalog_health.xid_recovery_actions()
            ra = (last.recovery_action or "").upper()
            if ra in table and code not in self.policy.xid_actions:
                action, level = Action.parse(table[ra][0]), Level.parse(table[ra][1])
                message += f" (recovery action {ra})"
            elif ra not in table:
                message += " (recovery action not reported: read it from NVML)"
        elif info.follows_other:
            others = [
                x
                for x in recent
                if x.code != code
                and (x.gpu == last.gpu or x.gpu is None or last.gpu is None)
                and abs(x.t_s - last.t_s) <= corr_s
            ]
            if others:
                return Action.IGNORE, Level.OK, message + f" (follows XID {others[0].code})", False
        return action, level, message, info.escalates

    # Counters and trends --------------------------------------------------------------------------
    def _objects(self, sample: ev.CounterSample, scope: str) -> Iterator[tuple[str, Any]]:
        """(entity name, reading) for every GPU, IB port or NVMe drive of ``sample``."""
        if scope == "gpu":
            for g in sample.gpus:
                yield f"gpu{g.index}", g
        elif scope == "ib_port":
            for p in sample.ib_ports:
                yield p.key, p
        else:
            for n in sample.nvme:
                yield n.name, n

    def _value(self, scope: str, obj: Any, metric: str) -> Any:
        """One metric of one reading, including the derived ones (remapped_rows_total, nvlink_links_down)."""
        if scope == "gpu":
            if metric == "nvlink_links_down":
                return max(int(self.thresholds.gpu["nvlinks_per_gpu"]) - obj.nvlink_links_up, 0)
            if metric == "responsive":
                return int(obj.responsive)
            value = getattr(obj, metric, None)
            return int(value) if isinstance(value, bool) else value  # flags read 0/1 in reasons
        if scope == "ib_port":
            return obj.state if metric == "state" else obj.counters.get(metric)
        return getattr(obj, metric, None)

    def _counter_reasons(self, e: ev.Evidence) -> Iterator[Reason]:
        if not e.samples:
            return
        latest = e.samples[-1]
        for rule in self.thresholds.counters:
            if not self.policy.enabled(rule.name):
                continue
            for ent, obj in self._objects(latest, rule.scope):
                value = self._value(rule.scope, obj, rule.metric)
                if value is None or not _OPS[rule.op](value, rule.value):
                    continue
                yield Reason(
                    f"{rule.name}:{ent}",
                    "counter",
                    f"{ent}: {rule.reason} ({rule.metric}={value})",
                    self.policy.rule_level(rule.name, Level.parse(rule.level)),
                    self.policy.rule_action(rule.name, Action.parse(rule.action)),
                    hardware=Action.parse(rule.action) >= Action.QUARANTINE,
                )

    def _trend_reasons(self, e: ev.Evidence) -> Iterator[Reason]:
        import numpy as np

        last_fix = max((r.t_s for r in e.repairs if r.kind in ev.FIX_RUNG and r.t_s <= e.now_s), default=float("-inf"))
        for rule in self.thresholds.trends:
            if not self.policy.enabled(rule.name):
                continue
            # a fix (GPU reset, reboot, part swap) restarts every trend: growth before it is history
            start = max(e.now_s - rule.window_h * 3600.0, last_fix)
            window = [s for s in e.samples if start <= s.t_s <= e.now_s]
            if len(window) < 3:
                continue
            ents: dict[str, int] = {}
            rows = []
            for s in window:
                row: dict[int, float] = {}
                for ent, obj in self._objects(s, rule.scope):
                    v = self._value(rule.scope, obj, rule.metric)
                    if isinstance(v, (int, float)):
                        row[ents.setdefault(ent, len(ents))] = float(v)
                rows.append(row)
            if not ents:
                continue
            values = np.full((len(window), len(ents)), np.nan)
            for i, row in enumerate(rows):
                for j, v in row.items():
                    values[i, j] = v
            times = np.array([s.t_s for s in window])
            # growth of a cumulative counter: the sum of its positive steps (a reset is not negative growth)
            steps = np.nan_to_num(np.clip(np.diff(values, axis=0), 0.0, None))
            total = steps.sum(axis=0)
            counted = (~np.isnan(values)).sum(axis=0)
            grew = (steps > 0).sum(axis=0)
            mid = (times[0] + times[-1]) / 2.0
            first = steps[times[1:] <= mid].sum(axis=0)
            second = steps[times[:-1] >= mid].sum(axis=0)
            for ent, j in ents.items():
                if counted[j] < 3 or total[j] < rule.min_increase or grew[j] < rule.min_steps:
                    continue
                if rule.rising_factor > 0 and second[j] < rule.rising_factor * max(first[j], 1.0):
                    continue
                yield Reason(
                    f"{rule.name}:{ent}",
                    "trend",
                    f"{ent}: {rule.reason} (+{total[j]:.0f} {rule.metric} in {rule.window_h:g} h)",
                    self.policy.rule_level(rule.name, Level.parse(rule.level)),
                    self.policy.rule_action(rule.name, Action.parse(rule.action)),
                )

    # Checks, peers, lemons ------------------------------------------------------------------------
    def _check_reasons(self, e: ev.Evidence) -> Iterator[Reason]:
        latest: dict[tuple[str, int | None], ev.CheckResult] = {}
        for c in e.checks:
            if c.t_s <= e.now_s:
                latest[(c.name, c.gpu)] = c
        for (name, gpu), c in sorted(latest.items(), key=lambda kv: (kv[0][0], kv[0][1] or -1)):
            if c.passed or not self.policy.enabled(name):
                continue
            why = c.detail or c.status
            if c.status == "skipped":
                why = c.detail or "skipped by configuration"
            elif not c.ran:
                why = f"could not run ({c.status}): counted as a failure; {c.detail}".rstrip("; ")
            where = f"gpu{gpu}" if gpu is not None else "node"
            verb = "not run" if c.status == "skipped" else "failed"
            yield Reason(
                f"check:{name}:{where}",
                "check",
                f"check {name} {verb} on {where}: {why}",
                self.policy.rule_level(name, Level.parse(c.level)),
                self.policy.rule_action(name, Action.parse(c.action)),
            )

    def _peer_reasons(self, e: ev.Evidence) -> Iterator[Reason]:
        if not e.samples or not self.policy.enabled("peer"):
            return
        cfg = self.thresholds.peer
        frac = float(cfg["min_fraction_of_median"])
        for metric in ("bf16_tflops_measured", "hbm_gb_s_measured"):
            own = [(g.index, getattr(g, metric)) for g in e.samples[-1].gpus if getattr(g, metric) is not None]
            peers = [float(v) for v in e.peers.get(metric, ())] or [float(v) for _, v in own]
            if len(peers) < int(cfg["min_peers"]) or not own:
                continue
            median = statistics.median(peers)
            for idx, value in own:
                if value < frac * median:
                    yield Reason(
                        f"peer:{metric}:gpu{idx}",
                        "peer",
                        f"gpu{idx}: {metric} {value:.0f} is {value / median:.0%} of the peer median "
                        f"{median:.0f} (minimum {frac:.0%})",
                        self.policy.rule_level("peer", Level.parse(cfg["level"])),
                        self.policy.rule_action("peer", Action.parse(cfg["action"])),
                    )

    def lemon_score(self, e: ev.Evidence) -> float:
        """Weighted count of repairs in the lemon window (weights per repair kind from the thresholds)."""
        lem = self.thresholds.lemon
        start = e.now_s - float(lem["window_h"]) * 3600.0
        weights = lem["weights"]
        return float(sum(float(weights.get(r.kind, 0.0)) for r in e.repairs if start <= r.t_s <= e.now_s))
