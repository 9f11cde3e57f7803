"""Every XID of REFERENCE.md section 3, fed as an event, gives its expected action and level."""

from __future__ import annotations

import pytest

from velyrix import errors
from velyrix.catalog import health as catalog_health
from velyrix.health import evidence as ev
from velyrix.health.engine import Engine
from velyrix.health.ladder import Action, Level

# Written out by hand from REFERENCE.md section 3 and NVIDIA's buckets, not read back from the catalog.
EXPECTED = {
    13: (Action.RESTART_APP, Level.WARN),
    31: (Action.RESTART_APP, Level.WARN),
    43: (Action.IGNORE, Level.WARN),
    45: (Action.RESTART_APP, Level.WARN),  # alone; next to another XID it follows that one
    48: (Action.REBOOT, Level.FATAL),
    61: (Action.RESET_GPU, Level.FATAL),
    62: (Action.RESET_GPU, Level.FATAL),
    63: (Action.IGNORE, Level.WARN),
    64: (Action.QUARANTINE, Level.FATAL),
    74: (Action.RESET_GPU, Level.FATAL),
    79: (Action.REBOOT, Level.FATAL),
    92: (Action.IGNORE, Level.WARN),
    94: (Action.RESTART_APP, Level.DEGRADED),
    95: (Action.RESET_GPU, Level.FATAL),
    109: (Action.RESET_GPU, Level.DEGRADED),
    119: (Action.RESET_GPU, Level.FATAL),
    120: (Action.RESET_GPU, Level.FATAL),
    140: (Action.RESET_GPU, Level.FATAL),
    143: (Action.RESET_GPU, Level.FATAL),
    154: (Action.IGNORE, Level.WARN),  # without a recovery action reported
}


def test_catalog_lists_every_reference_xid_with_both_nvidia_buckets_and_a_source():
    assert sorted(EXPECTED) == catalog_health.xid_codes()
    for code in EXPECTED:
        info = catalog_health.xid(code)
        assert info.nvidia_immediate and info.nvidia_investigatory and info.meaning and info.source


@pytest.mark.parametrize("code", sorted(EXPECTED))
def test_single_xid_event_gives_expected_action(code):
    verdict = Engine().evaluate(ev.Evidence.build("n1", 10.0, xids=[ev.XidEvent(5.0, code, gpu=2)]))
    action, level = EXPECTED[code]
    assert (verdict.action, verdict.level) == (action, level)
    assert verdict.reasons[0].key == f"xid:{code}:gpu2"
    assert str(code) in verdict.reasons[0].message


@pytest.mark.parametrize(
    ("recovery", "action"),
    [
        ("NONE", Action.IGNORE),
        ("GPU_RESET", Action.RESET_GPU),
        ("NODE_REBOOT", Action.REBOOT),
        ("DRAIN_P2P", Action.DRAIN_AFTER_JOB),
        ("DRAIN_AND_RESET", Action.DRAIN_NOW),
    ],
)
def test_xid_154_follows_nvml_recovery_action(recovery, action):
    e = ev.Evidence.build("n1", 10.0, xids=[ev.XidEvent(5.0, 154, gpu=0, recovery_action=recovery)])
    assert Engine().evaluate(e).action is action


def test_xid_45_next_to_another_xid_follows_that_xid():
    e = ev.Evidence.build("n1", 10.0, xids=[ev.XidEvent(5.0, 45, 1), ev.XidEvent(6.0, 79, 1)])
    verdict = Engine().evaluate(e)
    assert verdict.action is Action.REBOOT
    assert verdict.reason("xid:45:gpu1").action is Action.IGNORE


def test_unknown_xid_is_still_evidence():
    verdict = Engine().evaluate(ev.Evidence.build("n1", 10.0, xids=[ev.XidEvent(5.0, 999, 0)]))
    assert verdict.action is Action.DRAIN_AFTER_JOB
    with pytest.raises(errors.UnknownNameError):
        catalog_health.xid(999)


def test_same_xid_after_two_reboots_is_hardware():
    xids = [ev.XidEvent(100.0, 48, 3), ev.XidEvent(2000.0, 48, 3), ev.XidEvent(5000.0, 48, 3)]
    fixes = [ev.RepairEvent(200.0, "reboot"), ev.RepairEvent(3000.0, "reboot")]
    engine = Engine()
    first = engine.evaluate(ev.Evidence.build("n", 150.0, xids=xids[:1]))
    second = engine.evaluate(ev.Evidence.build("n", 2100.0, xids=xids[:2], repairs=fixes[:1]))
    third = engine.evaluate(ev.Evidence.build("n", 5100.0, xids=xids, repairs=fixes))
    assert [v.action for v in (first, second, third)] == [Action.REBOOT, Action.DRAIN_AFTER_JOB, Action.DRAIN_NOW]
    assert not second.reasons[0].hardware and third.reasons[0].hardware
    assert "hardware suspected" in third.reasons[0].message


def test_fix_after_last_occurrence_resolves_the_xid():
    e = ev.Evidence.build("n", 500.0, xids=[ev.XidEvent(100.0, 79, 0)], repairs=[ev.RepairEvent(200.0, "reboot")])
    assert Engine().evaluate(e).action is Action.IGNORE


def test_application_xid_repeats_never_escalate():
    xids = [ev.XidEvent(t, 13, 0) for t in (100.0, 300.0, 500.0)]
    fixes = [ev.RepairEvent(200.0, "reboot"), ev.RepairEvent(400.0, "reboot")]
    assert Engine().evaluate(ev.Evidence.build("n", 600.0, xids=xids, repairs=fixes)).action is Action.RESTART_APP
