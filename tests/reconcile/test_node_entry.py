"""The per-node reconcile work entry: stored rows of every age load; what is stored round-trips."""

from __future__ import annotations

import pytest

from velyrix.controlplane.reconcile import node_entry
from velyrix.controlplane.reconcile.node_entry import NodeEntry


def test_rows_stored_before_schema_version_still_load() -> None:
    old = {
        "a": {"step": "accepted", "attempt": 1, "seq": 2, "results": [{"test": "gpu_burn", "passed": True}]},
        "b": {"step": "storage", "attempt": 0, "release": "replaced", "failed": "acceptance failed: nccl"},
        "c": {"step": "allocated", "attempt": 0},  # the oldest rows had no seq
    }
    entries = node_entry.load(old)
    assert entries["a"] == NodeEntry("accepted", 1, 2, None, None, ({"test": "gpu_burn", "passed": True},))
    assert entries["b"].release == "replaced" and entries["b"].failed == "acceptance failed: nccl"
    assert entries["c"].seq == 0 and entries["c"].release is None and entries["c"].results is None


def test_stored_json_round_trips_and_keeps_its_shape() -> None:
    stored = node_entry.dump({"a": NodeEntry("networked", 2, 5, release="scale down")})
    assert stored == {"a": {"schema_version": 1, "step": "networked", "attempt": 2, "seq": 5, "release": "scale down"}}
    assert node_entry.dump(node_entry.load(stored)) == stored


def test_a_newer_schema_is_refused_not_misread() -> None:
    with pytest.raises(ValueError, match="schema_version 2"):
        NodeEntry.from_dict({"schema_version": 2, "step": "accepted"})
