"""The node hardware model: inventory round trip and firmware drift against a baseline."""

from __future__ import annotations

from velyrix.fleet import hardware


def test_firmware_drift_lists_differing_and_missing_components_only() -> None:
    baseline = {"gpu_vbios": "96.00.A1", "bmc": "1.2", "hca": "28.39"}
    running = {"gpu_vbios": "96.00.A1", "bmc": "1.1", "extra": "7"}
    assert hardware.firmware_drift(running, baseline) == {"bmc": ("1.1", "1.2"), "hca": ("missing", "28.39")}
    assert hardware.firmware_drift(baseline, baseline) == {}


def test_node_hardware_drift_and_dict_round_trip() -> None:
    node = hardware.NodeHardware(
        hostname="n1",
        node_type="hgx-h200-8g",
        serial="S1",
        gpus=(hardware.GPUInfo(0, "GPU-0", "G0", "H200", 141.0),),
        nics=(hardware.NICInfo("mlx5_0", "compute", 400, "aa", rail=0),),
        bmc=hardware.BMCInfo("10.0.0.1", "bb", "1.2"),
        nvme=(hardware.NVMeInfo("nvme0n1", "N0", 3.84),),
        firmware={"bmc": "1.1"},
        position=hardware.Position("us-east-1", 0, "r1", 0, (hardware.LeafPort(0, "leaf-su00-r0", 1),)),
    )
    assert hardware.NodeHardware.from_dict(node.to_dict()) == node
    assert node.firmware_drift({"bmc": "1.2"}) == {"bmc": ("1.1", "1.2")}


def test_to_dict_is_what_asdict_gives_for_twin_nodes_with_and_without_position() -> None:
    """The hand-built ``to_dict`` (the intake's hot path) says exactly what ``dataclasses.asdict`` says, and
    its nested data is a copy: changing it leaves the inventory alone."""
    import dataclasses

    from velyrix.fleet.drivers.sim import SimRegion

    region = SimRegion.build("us-east-1", {"hgx-h200-8g": 2}, seed=3)
    for sim in region.nodes.values():
        inventory = sim.hardware()
        assert inventory.position is not None
        assert inventory.to_dict() == dataclasses.asdict(inventory)
        bare = dataclasses.replace(inventory, position=None)
        assert bare.to_dict() == dataclasses.asdict(bare)
        raw = inventory.to_dict()
        raw["firmware"]["bmc"] = "tampered"
        raw["gpus"][0]["uuid"] = "GPU-other"
        assert inventory.firmware.get("bmc") != "tampered"
        assert inventory.gpus[0].uuid != "GPU-other"
