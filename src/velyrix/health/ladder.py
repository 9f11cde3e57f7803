"""The action ladder and the verdict levels.

Rungs, lowest first: IGNORE < RESTART_APP < RESET_GPU < REBOOT < DRAIN_AFTER_JOB < DRAIN_NOW <
QUARANTINE < RMA. Escalation on recurrence climbs one rung at a time and stops at ``ESCALATION_CAP``
(QUARANTINE): RMA is reached only through an RMA criterion, never by counting.
"""

from __future__ import annotations

from enum import IntEnum

from velyrix import errors


class Action(IntEnum):
    """What to do about a node (or one of its GPUs); higher is more drastic."""

    IGNORE = 0
    """Record it, nothing else."""
    RESTART_APP = 1
    """The application must restart; the node stays in service."""
    RESET_GPU = 2
    """Reset the GPU (clears volatile errors, applies pending row remaps) once no job holds it."""
    REBOOT = 3
    """Reboot the node (NVIDIA's RESTART_BM); the node is drained while it reboots."""
    DRAIN_AFTER_JOB = 4
    """No new jobs; the running job finishes, then diagnostics."""
    DRAIN_NOW = 5
    """Take the node out now (the job is requeued) for diagnostics or hardware inspection."""
    QUARANTINE = 6
    """Out of service until a person clears it; a spare replaces it in the tenant's cluster."""
    RMA = 7
    """Return the part to the vendor."""

    def up(self, rungs: int = 1, cap: Action | None = None) -> Action:
        """The rung ``rungs`` above this one, never above ``cap`` (default ``ESCALATION_CAP``) unless this
        action is already higher."""
        top = max(int(cap if cap is not None else ESCALATION_CAP), int(self))
        return Action(min(int(self) + max(rungs, 0), top))

    @property
    def drains(self) -> bool:
        """Whether the node leaves the scheduler for this action (a reboot drains it while it runs)."""
        return self >= Action.REBOOT

    @classmethod
    def parse(cls, name: str | Action) -> Action:
        """``Action`` from its name (case-insensitive, ``-`` or ``_``); ``UnknownNameError`` otherwise."""
        if isinstance(name, Action):
            return name
        key = str(name).strip().upper().replace("-", "_")
        if key not in cls.__members__:
            raise errors.UnknownNameError("action", str(name), cls.__members__)
        return cls[key]


ESCALATION_CAP = Action.QUARANTINE


class Level(IntEnum):
    """How bad a finding is: ok < warn < degraded < fatal (fatal: a job on the node is already damaged)."""

    OK = 0
    WARN = 1
    DEGRADED = 2
    FATAL = 3

    @classmethod
    def parse(cls, name: str | Level) -> Level:
        if isinstance(name, Level):
            return name
        key = str(name).strip().upper()
        if key not in cls.__members__:
            raise errors.UnknownNameError("level", str(name), [m.lower() for m in cls.__members__])
        return cls[key]

    def __str__(self) -> str:
        return self.name.lower()
