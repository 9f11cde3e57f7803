"""The scheduler seam: how health actions reach Slurm, Kubernetes or the twin.

Contract (every implementation):
- ``drain(node, reason, source)``: no new work on ``node``; the running job may finish (Slurm DRAIN).
  Idempotent per (node, source): draining again updates the reason. The reason shown to operators
  names its source (``format_reason``). Several sources may hold a drain on the same node at once;
  the node returns to service only when every holder has released it.
- ``undrain(node, source)``: releases the drain ``source`` holds. Only the source that drained a node
  undrains it: a source that holds no drain on a drained node gets ``DrainOwnershipError``; undraining
  a node that nobody drained is a no-op.
- ``reboot(node, reason)``: reboots the node (Slurm ``scontrol reboot ASAP``); the caller drains first.
- ``holders(node)``: source -> reason of the drains held now (empty when in service).
The Slurm implementation lives in ``velyrix.ops.scheduler.slurm_drains``; ``InMemorySeam`` is the twin's.
"""

from __future__ import annotations

import abc
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from velyrix import errors


def format_reason(source: str, reason: str) -> str:
    """The text a scheduler stores: ``velyrix:<source>: <reason>`` (one line, at most 200 characters)."""
    text = f"velyrix:{source}: {' '.join(reason.split())}"
    return text[:200]


def release(held: dict[str, str], node: str, source: str) -> bool:
    """The ownership rule of ``undrain``, applied to ``held`` (source -> reason of the drains on ``node``).

    Removes ``source``'s hold in place and returns True; returns False when nobody holds ``node`` (a
    no-op); raises ``DrainOwnershipError`` when others hold it and ``source`` does not."""
    if not held:
        return False
    if source not in held:
        holders = ", ".join(sorted(held))
        raise errors.DrainOwnershipError(
            node=node, source=source, holders=holders, hint=f"only {holders} may release it"
        )
    del held[source]
    return True


class SchedulerSeam(abc.ABC):
    """Drains, undrains and reboots nodes in a scheduler; see the module docstring for the contract."""

    @abc.abstractmethod
    def drain(self, node: str, reason: str, source: str) -> None:
        """Stop scheduling new work on ``node`` on behalf of ``source``."""

    @abc.abstractmethod
    def undrain(self, node: str, source: str) -> None:
        """Release the drain ``source`` holds on ``node``; ``DrainOwnershipError`` if it holds none."""

    @abc.abstractmethod
    def reboot(self, node: str, reason: str) -> None:
        """Reboot ``node`` (it stays drained by whoever drained it)."""

    def holders(self, node: str) -> dict[str, str]:
        """Source -> reason of the drains currently held on ``node``."""
        raise NotImplementedError(f"{type(self).__name__} does not report drain holders")

    def is_drained(self, node: str) -> bool:
        return bool(self.holders(node))


@dataclass(frozen=True)
class SeamEvent:
    """One call recorded by ``InMemorySeam`` (``t_s`` from its clock)."""

    t_s: float
    op: str
    node: str
    source: str
    reason: str


class InMemorySeam(SchedulerSeam):
    """The seam for tests, the twin and the evaluation: drains held in memory, every call logged.

    ``clock`` returns seconds (the twin's simulated clock or ``time.monotonic``); ``on_reboot`` is
    called with the node name so that a twin can power-cycle its simulated node."""

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, on_reboot: Callable[[str], None] | None = None
    ) -> None:
        self._clock = clock
        self._on_reboot = on_reboot
        self._held: dict[str, dict[str, str]] = {}
        self._lock = threading.Lock()
        self.events: list[SeamEvent] = []

    def drain(self, node: str, reason: str, source: str) -> None:
        text = format_reason(source, reason)
        with self._lock:
            self._held.setdefault(node, {})[source] = text
            self.events.append(SeamEvent(self._clock(), "drain", node, source, text))

    def undrain(self, node: str, source: str) -> None:
        with self._lock:
            held = self._held.get(node, {})
            if not release(held, node, source):
                return
            if not held:
                del self._held[node]
            self.events.append(SeamEvent(self._clock(), "undrain", node, source, ""))

    def reboot(self, node: str, reason: str) -> None:
        with self._lock:
            self.events.append(SeamEvent(self._clock(), "reboot", node, "", reason))
        if self._on_reboot is not None:
            self._on_reboot(node)

    def holders(self, node: str) -> dict[str, str]:
        with self._lock:
            return dict(self._held.get(node, {}))

    def first_drain_s(self, node: str) -> float | None:
        """Clock time of the first drain of ``node``, or None."""
        return next((e.t_s for e in self.events if e.op == "drain" and e.node == node), None)
