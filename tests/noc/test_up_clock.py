"""``velyrix up`` on an accelerated clock: where its twin's clock starts (``--start``) and how often the NOC
sweeps escalations at a given speed (``sweeping.interval_for``)."""

from __future__ import annotations

from typing import Any

import pytest

from velyrix.ops.noc import sweeping


@pytest.mark.parametrize(
    ("speed", "setting_s", "expected_s"),
    [
        (1.0, 30.0, 30.0),  # wall-clock speed: the setting
        (60.0, 30.0, 1.0),  # one simulated minute
        (20_000.0, 30.0, 0.05),  # one simulated minute would be 3 ms: the floor
        (20_000.0, 0.0, 0.0),  # sweeps turned off stay off
    ],
)
def test_sweeps_are_at_most_a_simulated_minute_apart(speed: float, setting_s: float, expected_s: float) -> None:
    assert sweeping.interval_for(speed, setting_s) == pytest.approx(expected_s)


def test_up_refuses_a_start_that_is_not_a_time(velyrix: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    res = velyrix("up", "--start", "first of November", "--port", "1")
    assert res.exit_code == 2
    assert "--start 'first of November' is not an ISO 8601 time" in res.stderr and "2026-11-01T00:00:00Z" in res.stderr
    assert "Traceback" not in res.stderr
