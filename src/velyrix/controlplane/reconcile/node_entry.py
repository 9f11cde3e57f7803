"""The per-node reconcile work entry (one value of the ``cluster_work.nodes`` JSON column) as a typed record.
``NodeEntry.from_dict`` parses a stored entry once (entries written before ``schema_version`` existed load as
version 1); ``to_dict`` gives the JSON stored back. Phase handlers replace entries (``dataclasses.replace``),
never mutate them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from velyrix.controlplane.reconcile import phases

SCHEMA_VERSION = 1
"""Version of the stored entry; rows without the key are version 1."""


@dataclass(frozen=True)
class NodeEntry:
    """Where one node of a cluster stands in reconcile.

    ``step``: one of ``phases.STEPS``; ``attempt``: failed retryable requests so far (request ids carry it);
    ``seq``: the allocation generation the node came with (request ids carry it); ``release``: why the node
    leaves the cluster ("scale down", "replaced", "destroy"; None while it belongs); ``failed``: the reason it
    was replaced; ``results``: its acceptance summary (``report.summarize_node``), None before acceptance.
    """

    step: str = phases.STEPS[0]
    attempt: int = 0
    seq: int = 0
    release: str | None = None
    failed: str | None = None
    results: tuple[dict[str, Any], ...] | None = None

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> NodeEntry:
        """Parse a stored entry; missing keys take their defaults."""
        version = int(raw.get("schema_version", 1))
        if version > SCHEMA_VERSION:
            raise ValueError(f"node entry schema_version {version} is newer than this Velyrix ({SCHEMA_VERSION})")
        results = raw.get("results")
        return cls(
            step=str(raw.get("step", phases.STEPS[0])),
            attempt=int(raw.get("attempt", 0) or 0),
            seq=int(raw.get("seq", 0) or 0),
            release=raw.get("release") or None,
            failed=raw.get("failed"),
            results=None if results is None else tuple(dict(r) for r in results),
        )

    def to_dict(self) -> dict[str, Any]:
        """The stored JSON: unset optional keys are left out, as entries were always stored."""
        out: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "step": self.step,
            "attempt": self.attempt,
            "seq": self.seq,
        }
        if self.release is not None:
            out["release"] = self.release
        if self.failed is not None:
            out["failed"] = self.failed
        if self.results is not None:
            out["results"] = [dict(r) for r in self.results]
        return out


def load(stored: Mapping[str, Mapping[str, Any]] | None) -> dict[str, NodeEntry]:
    """Every entry of a ``cluster_work.nodes`` column, by node name."""
    return {name: NodeEntry.from_dict(raw) for name, raw in (stored or {}).items()}


def dump(entries: Mapping[str, NodeEntry]) -> dict[str, dict[str, Any]]:
    """The ``cluster_work.nodes`` column for ``entries``."""
    return {name: entry.to_dict() for name, entry in entries.items()}
