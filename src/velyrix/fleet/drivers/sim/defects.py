"""Bad versions the twin can ship (``velyrix sim defect COMPONENT VERSION --effect ...``): a node that
installs a defective version misbehaves the declared way, so a rollout's gates are tested on real failures.

Effects (``EFFECTS``): ``xid:N`` one GPU logs XID N after the install (79: it falls off the bus);
``slow_gemm:F`` every GPU computes at F (0..1) of its speed; ``no_boot`` the node does not come back from the
install's reboot. Installing a version without a defect undoes what a defect did (a rollback fixes it).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from velyrix import errors
from velyrix.catalog import versions
from velyrix.fleet.drivers.sim.devices import SimNode

EFFECTS: dict[str, str] = {
    "xid": "xid:N: one GPU logs XID N after the install (79: the GPU falls off the bus)",
    "slow_gemm": "slow_gemm:F: every GPU computes at F (0 < F < 1) of its normal speed",
    "no_boot": "no_boot: the node does not come back from the install's reboot",
}


@dataclass(frozen=True)
class Defect:
    """``component`` at ``version`` has ``effect`` (a key of ``EFFECTS``) with ``value`` (XID or factor)."""

    component: str
    version: str
    effect: str
    value: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        shown = f"{self.effect}:{self.value:g}" if self.effect != "no_boot" else self.effect
        return {"component": self.component, "version": self.version, "effect": shown}


def parse(component: str, version: str, effect: str) -> Defect:
    """``effect`` text (``xid:79``, ``slow_gemm:0.5``, ``no_boot``) for a known component version;
    ``InvalidInputError`` / ``UnknownNameError`` otherwise."""
    versions.check_version(component, version)
    kind, _, raw = effect.partition(":")
    if kind not in EFFECTS:
        raise errors.UnknownNameError("defect effect", kind, EFFECTS)
    if kind == "no_boot":
        if raw:
            raise errors.InvalidInputError("no_boot takes no value", hint="--effect no_boot")
        return Defect(component, version, kind)
    try:
        value = float(raw)
    except ValueError:
        raise errors.InvalidInputError(f"{kind} needs a value: {EFFECTS[kind]}", hint=f"--effect {kind}:...") from None
    if kind == "xid" and (value != int(value) or not 1 <= value <= 1000):
        raise errors.InvalidInputError(f"an XID is a whole number 1..1000, got {raw}")
    if kind == "slow_gemm" and not 0.0 < value < 1.0:
        raise errors.InvalidInputError(f"slow_gemm's factor is between 0 and 1 (exclusive), got {raw}")
    return Defect(component, version, kind, value)


class Defects:
    """The defects shipped in a twin, and what they changed on each node (to undo it on a later install)."""

    def __init__(self) -> None:
        self.shipped: dict[tuple[str, str], Defect] = {}
        self._saved: dict[str, list[float]] = {}
        """hostname -> each GPU's compute factor before a slow_gemm defect changed it."""

    def ship(self, defect: Defect) -> None:
        """Make nodes that install ``defect.component`` at ``defect.version`` misbehave from now on."""
        self.shipped[(defect.component, defect.version)] = defect

    def clear(self, component: str, version: str) -> bool:
        """Stop shipping a defect (nodes that already installed it keep misbehaving). True if one was shipped."""
        return self.shipped.pop((component, version), None) is not None

    def install(self, node: SimNode, component: str, version: str, now_s: float) -> dict[str, Any]:
        """Install ``component`` at ``version`` (and its companions) on ``node`` at simulated ``now_s``, then
        apply the version's defect if one is shipped. Returns ``{"component", "from", "to", "booted",
        "xids": [[gpu, xid], ...]}`` (the XIDs the node logged since the install's boot)."""
        comp = versions.component(component)
        before = versions.installed(node.firmware)[component]
        for name in (component, *versions.companions(component)):
            node.firmware[versions.component(name).installed_key] = version
        saved = self._saved.pop(node.hostname, None)
        if saved is not None:
            for gpu, factor in zip(node.gpus, saved, strict=False):
                gpu.compute_factor = factor
        if comp.reboot or saved is not None or not node.powered:
            node.reboot(now_s)
        defect = self.shipped.get((component, version))
        if defect is not None:
            self._apply(node, defect, now_s)
        xids = [[g.index, x] for g in node.gpus for _, x in g.xid_events]
        return {"component": component, "from": before, "to": version, "booted": node.powered, "xids": xids}

    def _apply(self, node: SimNode, defect: Defect, now_s: float) -> None:
        if defect.effect == "no_boot":
            node.powered = False
            return
        if defect.effect == "slow_gemm":
            self._saved[node.hostname] = [g.compute_factor for g in node.gpus]
            for g in node.gpus:
                g.compute_factor *= defect.value
                g.refresh_measured()
            return
        # xid: which GPU is deterministic per node (same twin, same GPU)
        index = int(hashlib.sha256(node.hostname.encode()).hexdigest()[:4], 16) % max(1, len(node.gpus))
        gpu = node.gpus[index]
        gpu.add_xid(now_s, int(defect.value))
        if int(defect.value) == 79:
            gpu.responsive = False
            gpu.refresh_measured()
