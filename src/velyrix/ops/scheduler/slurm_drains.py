"""The health engine's scheduler seam for Slurm: drains, undrains and reboots with ``scontrol``.

Slurm keeps one reason per node, so the reasons of several holders are joined with ``"; "``:
``velyrix:health: xid 79; velyrix:noc: switch maintenance``. A reason (or part) that does not start
with ``velyrix:`` belongs to an operator and is held by the pseudo-source ``admin``; Velyrix never
clears it. ``undrain`` removes only its own source's part and resumes the node when nothing is left.
Fleet hostnames map to Slurm node names through ``node_map`` (identity by default).
"""

from __future__ import annotations

import re

from velyrix import errors
from velyrix.health import drains
from velyrix.ops.scheduler import commands

ADMIN = "admin"
"""Pseudo-source of reasons an operator set by hand."""
_PART = re.compile(r"velyrix:([A-Za-z0-9_.\-]+): ")


def parse_reason(reason: str) -> dict[str, str]:
    """Holders of a Slurm reason: source → its part (``admin`` for text that is not ours)."""
    reason = reason.strip()
    if not reason or reason.lower() in ("none", "(null)"):
        return {}
    out: dict[str, str] = {}
    for part in (p.strip() for p in reason.split("; ")):
        if not part:
            continue
        m = _PART.match(part)
        key = m.group(1) if m else ADMIN
        out[key] = f"{out[key]}; {part}" if key in out else part
    return out


def join_reason(holders: dict[str, str]) -> str:
    """Reason text for a set of holders (the inverse of ``parse_reason``)."""
    return "; ".join(holders.values())


class SlurmSeam(drains.SchedulerSeam):
    """``SchedulerSeam`` on a real Slurm through ``scontrol``/``sinfo``.

    ``node_map``: fleet hostname → Slurm node name (missing names map to themselves).
    """

    def __init__(self, slurm: commands.Slurm, node_map: dict[str, str] | None = None) -> None:
        self.slurm = slurm
        self.node_map = dict(node_map or {})

    def slurm_name(self, node: str) -> str:
        """The Slurm node name of a fleet hostname."""
        return self.node_map.get(node, node)

    def _state(self, node: str) -> tuple[str, str]:
        """(state flags in lower case, reason) of ``node`` from sinfo; UnknownNameError if Slurm lacks it."""
        name = self.slurm_name(node)
        out = self.slurm.run("scontrol", "show", "node", name, check=False)
        if out.returncode != 0 or "NodeName=" not in out.stdout:
            known = self.slurm.run("sinfo", "-h", "-N", "-o", "%N", check=False).stdout.split()
            raise errors.UnknownNameError("Slurm node", name, sorted(set(known)))
        state = re.search(r"\bState=(\S+)", out.stdout)
        reason = re.search(r"\bReason=(.*?)(?: \[[^\]]*@[^\]]*\])?\s*$", out.stdout, re.M)
        return (state.group(1).lower() if state else "", reason.group(1) if reason else "")

    def holders(self, node: str) -> dict[str, str]:
        """Source → reason part of the drains on ``node`` (empty when it is not drained)."""
        state, reason = self._state(node)
        # DOWN with a reason holds a node too: a reboot requested while drained returns it DOWN.
        if "drain" not in state and "down" not in state:
            return {}
        return parse_reason(reason)

    def busy(self, node: str) -> bool:
        """Whether a job still runs on ``node`` (Slurm state ALLOCATED, MIXED or COMPLETING)."""
        state, _ = self._state(node)
        return any(s in state for s in ("alloc", "mix", "comp"))

    def drain(self, node: str, reason: str, source: str) -> None:
        """DRAIN ``node`` with reason ``velyrix:<source>: <reason>``, keeping other holders' reasons."""
        held = self.holders(node)
        held[source] = drains.format_reason(source, reason)
        self._update(node, "DRAIN", join_reason(held))

    def undrain(self, node: str, source: str) -> None:
        """Remove ``source``'s reason; RESUME when no holder is left. Others' drains: DrainOwnershipError."""
        held = self.holders(node)
        if not drains.release(held, node, source):
            return
        if held:
            self._update(node, "DRAIN", join_reason(held))
        else:
            self._update(node, "RESUME", None)

    def reboot(self, node: str, reason: str) -> None:
        """``scontrol reboot ASAP``: the node drains, reboots once idle, then comes back held by its
        holders (Slurm's ``nextstate`` is DOWN or RESUME only: DOWN with their reasons) or, when nobody
        held it, in service."""
        held = self.holders(node)
        nxt = "DOWN" if held else "RESUME"
        text = join_reason(held) if held else drains.format_reason("reboot", reason)
        self.slurm.out("scontrol", "reboot", "ASAP", f"nextstate={nxt}", f"reason={text}", self.slurm_name(node))

    def _update(self, node: str, state: str, reason: str | None) -> None:
        args = ["update", f"NodeName={self.slurm_name(node)}", f"State={state}"]
        if reason:
            args.append(f"Reason={reason}")
        self.slurm.out("scontrol", *args)
