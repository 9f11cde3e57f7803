"""Versions of what runs on a node (``data/versions.toml``): components, their known versions, the
compatibility rules between them and the durations a rollout plans with.

``component("gpu_driver")`` gives a ``Component``; ``installed(firmware)`` turns what a node reports (the
twin's ``SimNode.firmware``, keyed by ``installed_key``) into component -> version, defaults filled in;
``problems(installed, component, version)`` lists the rules a change would break (empty: compatible).
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass

from velyrix import errors
from velyrix.catalog import reader


@dataclass(frozen=True)
class Component:
    """One component a rollout may change. ``install_minutes``: time to flash/install it (assumption)."""

    name: str
    description: str
    installed_key: str
    kind: str
    reboot: bool
    install_minutes: int
    default: str
    versions: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class Rule:
    """Versions of ``component`` starting with ``version`` need ``needs`` >= ``at_least``; or the component
    ``follows`` another (installed with it at the same version)."""

    component: str
    version: str
    source: str
    needs: str = ""
    at_least: str = ""
    follows: str = ""


@dataclass(frozen=True)
class RolloutTimes:
    """What one node's step takes besides the install (minutes), and the gates' thresholds."""

    drain_minutes: int
    validate_minutes: int
    all_reduce_tolerance: float
    xid_gate: tuple[int, ...]


def _data() -> dict[str, object]:
    return reader.load_toml("versions.toml")


@functools.cache
def component(name: str) -> Component:
    """The component called ``name``; ``UnknownNameError`` with the closest name otherwise."""
    table = dict(_data()["component"])  # type: ignore[call-overload]
    if name not in table:
        raise errors.UnknownNameError("component", name, table)
    raw = dict(table[name])
    raw["versions"] = tuple(raw["versions"])
    return Component(name=name, **raw)


def component_names() -> list[str]:
    """Every component, sorted."""
    return sorted(dict(_data()["component"]))  # type: ignore[call-overload]


@functools.cache
def rules() -> tuple[Rule, ...]:
    """Every compatibility rule, in file order."""
    return tuple(Rule(**dict(r)) for r in _data().get("rule", []))  # type: ignore[attr-defined]


@functools.cache
def rollout_times() -> RolloutTimes:
    """The ``[rollout]`` section."""
    raw = dict(_data()["rollout"])  # type: ignore[call-overload]
    return RolloutTimes(
        drain_minutes=int(raw["drain_minutes"]),
        validate_minutes=int(raw["validate_minutes"]),
        all_reduce_tolerance=float(raw["all_reduce_tolerance"]),
        xid_gate=tuple(int(x) for x in raw["xid_gate"]),
    )


def key(version: str) -> tuple[tuple[int, str], ...]:
    """A sort key that compares versions number by number (``570.133.20`` < ``580.65.06``; hex VBIOS parts
    such as ``9F`` compare as hexadecimal numbers)."""
    parts = re.split(r"[.\-]", version)
    out = []
    for p in parts:
        try:
            out.append((int(p, 16) if re.fullmatch(r"[0-9A-Fa-f]+", p) and not p.isdigit() else int(p), ""))
        except ValueError:
            out.append((-1, p))
    return tuple(out)


def check_version(name: str, version: str) -> Component:
    """The component, when ``version`` is one of its known versions; ``UnknownNameError`` otherwise."""
    comp = component(name)
    if version not in comp.versions:
        raise errors.UnknownNameError(f"{name} version", version, comp.versions)
    return comp


def installed(firmware: Mapping[str, str]) -> dict[str, str]:
    """Component -> version on a node that reports ``firmware`` (installed_key -> version)."""
    out = {}
    for name in component_names():
        comp = component(name)
        out[name] = str(firmware.get(comp.installed_key, comp.default))
    return out


def companions(name: str) -> list[str]:
    """Components that follow ``name`` (a rollout of ``name`` installs them at the same version)."""
    return [r.component for r in rules() if r.follows == name]


def problems(current: Mapping[str, str], name: str, version: str) -> list[str]:
    """Rules broken when a node with ``current`` (component -> version) gets ``name`` at ``version`` (with
    its companions); each problem names its source. Empty: compatible."""
    after = dict(current)
    after[name] = version
    for c in companions(name):
        after[c] = version
    out = []
    for r in rules():
        have = after.get(r.component, "")
        if r.needs and have.startswith(r.version) and key(after.get(r.needs, "")) < key(r.at_least):
            out.append(
                f"{r.component} {have} needs {r.needs} >= {r.at_least}, the node would run "
                f"{after.get(r.needs, 'none')} ({r.source})"
            )
    return out


def baseline_digest(versions: Mapping[str, str]) -> str:
    """SHA-256 (hex) of the sorted ``component=version`` lines: the baseline a rollout produces, as recorded
    in its status (equal digests: the same versions)."""
    text = "\n".join(f"{k}={versions[k]}" for k in sorted(versions))
    return hashlib.sha256(text.encode()).hexdigest()
