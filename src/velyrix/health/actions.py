"""Carrying a verdict out through the scheduler seam.

- IGNORE, RESTART_APP: nothing on the node (the application restarts itself; the reason is logged).
- RESET_GPU and above: the node is drained by ``source`` with the verdict's reason (a reset needs the GPU
  free; from DRAIN_NOW up the reason says the job is to be requeued now).
- REBOOT: drained, then rebooted through the seam.
- When a later verdict is healthy (IGNORE) and ``source`` holds a drain, it releases it: only the source
  that drained a node undrains it. QUARANTINE and RMA are never released automatically.
"""

from __future__ import annotations

from dataclasses import dataclass

from velyrix.health.drains import SchedulerSeam
from velyrix.health.engine import Verdict
from velyrix.health.ladder import Action, Level

SOURCE = "health"


@dataclass(frozen=True)
class Applied:
    """What ``apply_verdict`` did: ``ops`` in order (``drain``, ``reboot``, ``undrain``)."""

    node: str
    action: Action
    ops: tuple[str, ...]


def drain_text(verdict: Verdict) -> str:
    """The drain reason for ``verdict``: rung, urgency and the strongest reason."""
    when = "now" if verdict.action >= Action.DRAIN_NOW or verdict.level == Level.FATAL else "after job"
    return f"{verdict.action.name} ({when}, {verdict.level}): {verdict.summary()}"


def apply_verdict(
    verdict: Verdict, seam: SchedulerSeam, *, source: str = SOURCE, held_action: Action | None = None
) -> Applied:
    """Carry ``verdict`` out on ``seam`` for ``verdict.node``. ``held_action`` is the action of the drain
    ``source`` already holds (None when it holds none); the seam is only called when something changes.
    """
    node, action, ops = verdict.node, verdict.action, []
    if action >= Action.RESET_GPU:
        if held_action is None or action > held_action:
            seam.drain(node, drain_text(verdict), source)
            ops.append("drain")
            if action == Action.REBOOT:
                seam.reboot(node, verdict.summary())
                ops.append("reboot")
    elif held_action is not None and held_action < Action.QUARANTINE:
        seam.undrain(node, source)
        ops.append("undrain")
    return Applied(node, action, tuple(ops))
