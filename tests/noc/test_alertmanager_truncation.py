"""A group that grows past Alertmanager's ``max_alerts`` after the delivery that opened its incident: the
incident's timeline still says that alerts were left out (once per count), and a repeat of the same
delivery adds nothing. (Seen in CI: under load Alertmanager can flush a group after ingesting only the
first of the alerts posted together, so the truncation starts with the second delivery.)"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest


def _payload(truncated: int) -> dict[str, Any]:
    alert = {
        "status": "firing",
        "labels": {"alertname": "GpuFellOffTheBus", "severity": "critical", "instance": "gpu-001"},
        "annotations": {"summary": "GPU fell off the bus (XID 79)"},
        "startsAt": "2026-12-01T19:00:00Z",
        "fingerprint": "f1",
    }
    return {
        "status": "firing",
        "receiver": "velyrix",
        "groupKey": '{}:{alertname="GpuFellOffTheBus"}',
        "groupLabels": {"alertname": "GpuFellOffTheBus"},
        "commonLabels": {"alertname": "GpuFellOffTheBus", "severity": "critical"},
        "commonAnnotations": {"summary": "GPU fell off the bus (XID 79)"},
        "alerts": [alert],
        "truncatedAlerts": truncated,
    }


def test_truncation_that_starts_with_a_later_delivery_is_noted_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("VELYRIX_DATABASE_URL", raising=False)
    from velyrix.controlplane import db
    from velyrix.controlplane.db import health_tables
    from velyrix.ops.noc import incidents, intake

    db.upgrade()
    now = dt.datetime(2026, 12, 1, 19, 1, tzinfo=dt.UTC)
    with db.session() as s:
        assert intake.alertmanager(s, _payload(0), now)["new_alerts"] == 1
        for _ in range(2):  # the group grew to two alerts; Alertmanager shows one and sends it again
            answer = intake.alertmanager(s, _payload(1), now + dt.timedelta(minutes=1))
            assert answer["new_alerts"] == 0 and answer["changed"] is False
        s.commit()
        incident = s.query(health_tables.Incident).one()
        notes = [e.text for e in incidents.timeline(s, incident.id) if e.kind == "note"]
    assert notes.count("1 more alerts of the group truncated by Alertmanager (max_alerts)") == 1, notes
