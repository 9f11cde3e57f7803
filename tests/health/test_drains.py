"""The in-memory scheduler seam: reasons name their source; only the drainer undrains."""

from __future__ import annotations

import pytest

from velyrix import errors
from velyrix.health.drains import InMemorySeam, format_reason


def test_reason_names_its_source():
    seam = InMemorySeam(clock=lambda: 1.0)
    seam.drain("gpu-001", "xid:79:gpu3 fallen off the bus", "health")
    assert seam.holders("gpu-001") == {"health": "velyrix:health: xid:79:gpu3 fallen off the bus"}
    assert format_reason("ops", "a\nb   c") == "velyrix:ops: a b c"


def test_only_the_source_that_drained_undrains():
    seam = InMemorySeam()
    seam.drain("n1", "bad ECC", "health")
    with pytest.raises(errors.DrainOwnershipError) as info:
        seam.undrain("n1", "admin")
    assert info.value.code == "drain_owned_by_other_source" and "health" in info.value.message
    seam.undrain("n1", "health")
    assert not seam.is_drained("n1")


def test_two_sources_hold_a_drain_until_both_release():
    seam = InMemorySeam()
    seam.drain("n1", "maintenance", "admin")
    seam.drain("n1", "slow GPU", "health")
    seam.undrain("n1", "health")
    assert seam.holders("n1") == {"admin": "velyrix:admin: maintenance"}
    seam.undrain("n1", "admin")
    assert not seam.is_drained("n1")
    seam.undrain("n1", "admin")  # nobody holds it: a no-op


def test_reboot_calls_the_twin_hook_and_is_logged():
    booted = []
    seam = InMemorySeam(clock=lambda: 7.0, on_reboot=booted.append)
    seam.reboot("n2", "xid 79")
    assert booted == ["n2"] and seam.events[-1].op == "reboot" and seam.events[-1].t_s == 7.0
