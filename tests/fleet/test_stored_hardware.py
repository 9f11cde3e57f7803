"""The node ``hardware`` column read back: a whole inventory through ``NodeHardware.from_dict``, a partial one
(registered through the API) field by field, nothing yet as unknowns."""

from __future__ import annotations

from velyrix.fleet.drivers.sim.region import SimRegion
from velyrix.fleet.hardware import StoredHardware


def test_a_whole_inventory_parses_as_node_hardware_and_keeps_its_evidence() -> None:
    region = SimRegion.build("us-east-1", {"hgx-h200-8g": 2})
    node = next(iter(region.nodes.values()))
    raw = {**node.hardware().to_dict(), "firmware_evidence": {"secure_boot": {"enabled": True}}}
    hw = StoredHardware.from_dict(raw)
    assert hw.inventory == node.hardware()
    assert hw.serial == raw["serial"] and hw.su == raw["position"]["su"] and hw.slot == raw["position"]["slot"]
    assert hw.gpu_uuids == tuple(g["uuid"] for g in raw["gpus"]) and len(hw.gpu_uuids) == 8
    assert hw.firmware_evidence == {"secure_boot": {"enabled": True}}


def test_a_partial_or_empty_column_reads_what_is_there() -> None:
    hw = StoredHardware.from_dict({"serial": "SN-1", "position": {"su": 3}})
    assert (hw.inventory, hw.serial, hw.su, hw.slot, hw.su_nodes, hw.gpu_uuids) == (None, "SN-1", 3, None, None, ())
    assert StoredHardware.from_dict(None) == StoredHardware.from_dict({}) == StoredHardware()
