"""What ``velyrix apply`` shows while it follows a cluster: each phase line names the phase that produced
its result, the bar counts the phases this run got through (not 6/6 on a failure), its time is the
control plane's own record of this run, and an update does not replay the cluster's old events.

The control plane's answers are scripted (``Scripted`` stands in for ``cli.client.Client``, whose ``get``
is all ``follow`` uses); the server-side run is in tests/reconcile/test_state_apply.py."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from velyrix.cli import apply_follow as apply

T0 = "2026-12-01T10:00:"


def _at(s: int) -> str:
    return f"{T0}{s:02d}+00:00"


def _record(phase: str, prev: str | None, s: int, why: str) -> tuple[dict[str, Any], dict[str, Any]]:
    history = {"phase": phase, "from": prev, "at": _at(s), "actor": "reconciler", "reason": why}
    event = {"at": _at(s), "type": "Normal", "reason": f"Phase{phase}", "message": why}
    return history, event


class Scripted:
    """Returns the given cluster objects one per ``get``, then the last one forever."""

    def __init__(self, objects: list[dict[str, Any]]) -> None:
        self.objects = objects

    def get(self, path: str) -> dict[str, Any]:
        return self.objects.pop(0) if len(self.objects) > 1 else self.objects[0]


def _cluster(records: list[tuple[dict[str, Any], dict[str, Any]]], extra_events: list[dict[str, Any]] = ()) -> dict:
    history = [h for h, _ in records]
    events = [*(e for _, e in records), *extra_events]
    events.sort(key=lambda e: e["at"])
    return {"id": "c1", "status": {"phase": history[-1]["phase"], "phase_history": history, "events": events}}


OLD = [
    _record("Pending", None, 0, "cluster declared"),
    _record("Allocating", "Pending", 1, "reconciling the declared spec"),
    _record("Ready", "Allocating", 2, "4 nodes delivered and validated"),
]


def _follow(objects: list[dict[str, Any]], since: int, baseline: list[dict[str, Any]]) -> str:
    con = Console(record=True, width=160)
    apply.follow(
        Scripted(objects),
        "c1",
        since_phases=since,
        want=("Ready", "Degraded", "Failed"),
        timeout_s=30,
        con=con,
        seen=baseline,
    )
    return con.export_text()


def test_phase_lines_pair_a_result_with_the_phase_that_produced_it() -> None:
    line = apply.event_line(OLD[1][1], [h for h, _ in OLD])
    assert line == "Pending: reconciling the declared spec -> Allocating"
    first = apply.event_line(OLD[0][1], [h for h, _ in OLD])
    assert first == "cluster declared -> Pending"
    assert apply.event_line({"reason": "NodeReplaced", "message": "n07 by n64"}, []) == "NodeReplaced: n07 by n64"


def test_an_update_shows_only_its_own_events_and_its_own_time() -> None:
    before = _cluster(OLD)
    spec = {"at": _at(10), "type": "Normal", "reason": "SpecUpdated", "message": "spec updated by alice"}
    run = [
        _record("Allocating", "Ready", 11, "spec changed"),
        _record("Provisioning", "Allocating", 30, "8 nodes allocated"),
        _record("Ready", "Provisioning", 52, "8 nodes delivered and validated"),
    ]
    # the first answers still show the settled cluster from before the update
    objects = [_cluster(OLD, [spec]), _cluster([*OLD, *run[:1]], [spec]), _cluster([*OLD, *run], [spec])]
    text = _follow(objects, since=len(OLD), baseline=before["status"]["events"])
    assert "4 nodes delivered" not in text and "cluster declared" not in text  # no replay
    assert "SpecUpdated: spec updated by alice" in text
    assert "Allocating: 8 nodes allocated -> Provisioning" in text
    assert "6/6 phases" in text and "42 s" in text  # 10:00:10 (the update) to 10:00:52 (Ready)
    assert "0:00:00" not in text


def test_a_failure_shows_how_far_the_run_got() -> None:
    run = [
        *OLD[:2],
        _record("Provisioning", "Allocating", 5, "4 nodes allocated"),
        _record("Failed", "Provisioning", 9, "firmware baseline not reached on n03"),
    ]
    text = _follow([_cluster(OLD[:1]), _cluster(run)], since=0, baseline=[])
    assert "Provisioning: firmware baseline not reached on n03 -> Failed" in text
    assert "Failed" in text and "2/6 phases" in text and "6/6" not in text
    assert "9 s" in text
