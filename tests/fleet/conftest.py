"""Fixtures of the fleet tests: a small twin region (two scalable units of H200) and its driver."""

from __future__ import annotations

import pytest

from velyrix.fleet.drivers.sim import SimDelays, SimDriver, SimRegion


@pytest.fixture
def region() -> SimRegion:
    return SimRegion.build("us-east-1", {"hgx-h200-8g": 64}, seed=7)


@pytest.fixture
def driver(region: SimRegion) -> SimDriver:
    return SimDriver(region, SimDelays.off())
