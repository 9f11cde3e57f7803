"""Policy overrides: how an operator tunes severity without editing the catalog.

A policy maps XID codes and rule names (counter/trend rule names, ``peer``, ``lemon``, check names) to
another ladder action or level, or disables them. Unknown names are errors with the closest valid name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from velyrix import errors
from velyrix.catalog import health as catalog_health
from velyrix.health.ladder import Action, Level


def rule_names() -> list[str]:
    """Every rule name a policy may override: counter and trend rules, ``peer``, ``lemon``."""
    th = catalog_health.health_thresholds()
    return [r.name for r in th.counters] + [r.name for r in th.trends] + ["peer", "lemon"]


@dataclass(frozen=True)
class Policy:
    """Overrides applied by the engine. ``max_action`` caps every recommendation (e.g. a tenant that
    forbids automatic quarantine sets QUARANTINE's rung below)."""

    xid_actions: Mapping[int, Action] = field(default_factory=dict)
    xid_levels: Mapping[int, Level] = field(default_factory=dict)
    rule_actions: Mapping[str, Action] = field(default_factory=dict)
    rule_levels: Mapping[str, Level] = field(default_factory=dict)
    disabled: frozenset[str] = frozenset()
    max_action: Action = Action.RMA

    def xid_action(self, code: int, default: Action) -> Action:
        return self.xid_actions.get(code, default)

    def xid_level(self, code: int, default: Level) -> Level:
        return self.xid_levels.get(code, default)

    def rule_action(self, name: str, default: Action) -> Action:
        return self.rule_actions.get(name, default)

    def rule_level(self, name: str, default: Level) -> Level:
        return self.rule_levels.get(name, default)

    def enabled(self, name: str) -> bool:
        return name not in self.disabled

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], *, check_names: tuple[str, ...] = ()) -> Policy:
        """Build from plain data, e.g. ``{"xid": {"13": {"action": "IGNORE"}}, "rules": {"peer":
        {"level": "warn"}}, "disabled": ["lemon"], "max_action": "DRAIN_NOW"}``.

        Raises ``UnknownNameError`` for an unknown XID, rule, action or level."""
        known_rules = set(rule_names()) | set(check_names)
        codes = {str(c) for c in catalog_health.xid_codes()}
        xa: dict[int, Action] = {}
        xl: dict[int, Level] = {}
        for code, spec in (raw.get("xid") or {}).items():
            if str(code) not in codes:
                raise errors.UnknownNameError("XID", str(code), codes)
            if "action" in spec:
                xa[int(code)] = Action.parse(spec["action"])
            if "level" in spec:
                xl[int(code)] = Level.parse(spec["level"])
        ra: dict[str, Action] = {}
        rl: dict[str, Level] = {}
        for name, spec in (raw.get("rules") or {}).items():
            if name not in known_rules:
                raise errors.UnknownNameError("health rule", name, known_rules)
            if "action" in spec:
                ra[name] = Action.parse(spec["action"])
            if "level" in spec:
                rl[name] = Level.parse(spec["level"])
        disabled = set()
        for name in raw.get("disabled") or ():
            if name not in known_rules and name not in codes:
                raise errors.UnknownNameError("health rule", name, known_rules | codes)
            disabled.add(str(name))
        cap = Action.parse(raw["max_action"]) if "max_action" in raw else Action.RMA
        return cls(
            xid_actions=xa, xid_levels=xl, rule_actions=ra, rule_levels=rl, disabled=frozenset(disabled), max_action=cap
        )
