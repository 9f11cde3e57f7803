"""Escalation policies (``catalog/data/sla.toml`` ``[escalation_policy.*]``) and the pages they make due.

While an incident is ``open`` (nobody acknowledged it), page ``k`` of the ladder goes to level
``k % len(levels)``: page 0 when the incident opens plus level 0's ``delay_min``, each next page the next
level's ``delay_min`` after the previous one, and after the last level the ladder restarts
``repeat_after_min`` later, ``repeats`` times. Once acknowledged, no update for the contract's
``update_every_min`` re-escalates: the level after the last one paged gets a page (once per missed
update). Pure: times in, pages out; ``velyrix.ops.noc.incidents`` sends them and records them.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from velyrix import catalog, errors
from velyrix.ops.noc import states

TARGET_KINDS = ("email", "webhook", "pagerduty")


@dataclass(frozen=True)
class Level:
    delay_min: int
    targets: tuple[str, ...]
    """``email:ADDRESS``, ``webhook:URL`` or ``pagerduty:URL`` (PagerDuty Events v2 format)."""


@dataclass(frozen=True)
class Policy:
    name: str
    levels: tuple[Level, ...]
    repeats: int
    repeat_after_min: int


@dataclass(frozen=True)
class Page:
    """A page that is due: its index in the ladder (``-1`` for a re-escalation), level, targets, when."""

    index: int
    level: int
    targets: tuple[str, ...]
    due_at: dt.datetime
    reason: str


def policy_from_dict(name: str, raw: dict[str, Any]) -> Policy:
    """A policy from plain data (a section of ``sla.toml``); checks targets and delays."""
    levels = []
    for lv in raw.get("level", []):
        targets = tuple(str(t) for t in lv.get("targets", []))
        for t in targets:
            if t.split(":", 1)[0] not in TARGET_KINDS or ":" not in t:
                raise errors.InvalidInputError(
                    f"escalation target '{t}' of policy {name}", hint="email:ADDRESS, webhook:URL or pagerduty:URL"
                )
        if int(lv.get("delay_min", 0)) < 0 or not targets:
            raise errors.InvalidInputError(f"policy {name}: each level needs targets and a delay_min >= 0")
        levels.append(Level(int(lv.get("delay_min", 0)), targets))
    if not levels:
        raise errors.InvalidInputError(f"escalation policy {name} has no level")
    return Policy(name, tuple(levels), int(raw.get("repeats", 0)), int(raw.get("repeat_after_min", 30)))


def load_overrides(path: str) -> dict[str, Any]:
    """The ``[escalation_policy.NAME]`` sections of the TOML file ``path`` (``VELYRIX_ESCALATION_POLICIES``),
    each checked as ``policy_from_dict`` checks the catalog's; ``{}`` for an empty path."""
    if not path:
        return {}
    import tomllib

    try:
        with open(path, "rb") as f:
            raw = tomllib.load(f).get("escalation_policy", {})
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise errors.InvalidInputError(f"escalation policies {path}: {exc}", hint="a TOML file") from None
    if not isinstance(raw, dict):
        raise errors.InvalidInputError(f"escalation policies {path}: [escalation_policy.NAME] sections expected")
    for name, body in raw.items():
        policy_from_dict(name, body)
    return dict(raw)


def policy(name: str, overrides: dict[str, Any] | None = None) -> Policy:
    """The policy ``name`` of the catalog, or of ``overrides`` (name -> raw policy, e.g. from settings)."""
    pool = {**catalog.load_toml("sla.toml").get("escalation_policy", {}), **(overrides or {})}
    if name not in pool:
        raise errors.UnknownNameError("escalation policy", name, pool)
    return policy_from_dict(name, pool[name])


def ladder(pol: Policy, opened_at: dt.datetime) -> list[Page]:
    """Every page of the unacknowledged ladder, in order, with its due time."""
    pages: list[Page] = []
    at = opened_at
    count = len(pol.levels) * (pol.repeats + 1)
    for k in range(count):
        level = k % len(pol.levels)
        if k == 0:
            step = pol.levels[0].delay_min
        elif level == 0:
            step = pol.repeat_after_min
        else:
            step = pol.levels[level].delay_min
        at = at + dt.timedelta(minutes=step)
        pages.append(Page(k, level, pol.levels[level].targets, at, f"not acknowledged: level {level}"))
    return pages


def due(
    pol: Policy,
    *,
    state: str,
    opened_at: dt.datetime,
    pages_sent: int,
    last_level: int,
    last_update_at: dt.datetime | None,
    reescalated_at: dt.datetime | None,
    update_every_min: int,
    now: dt.datetime,
) -> list[Page]:
    """The pages due at ``now`` that were not sent yet (``pages_sent`` of the ladder were)."""
    if state == states.OPEN:
        return [p for p in ladder(pol, opened_at)[pages_sent:] if p.due_at <= now]
    if state != states.ACKNOWLEDGED or last_update_at is None:
        return []
    deadline = last_update_at + dt.timedelta(minutes=update_every_min)
    if now < deadline or (reescalated_at is not None and reescalated_at >= last_update_at):
        return []
    level = min(last_level + 1, len(pol.levels) - 1)
    reason = f"no update for {update_every_min} min after acknowledgement: level {level}"
    return [Page(-1, level, pol.levels[level].targets, deadline, reason)]
