"""One GPU counter record: the twin, the agent and the health engine carry the same counters with one type,
and a twin GPU's counters reach the engine unchanged through the agent's reading and its JSON form."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from velyrix.agent.collectors.base import GPUReading, NodeSample
from velyrix.agent.collectors.sim import read_gpu
from velyrix.catalog.gpu_counters import COUNTER_NAMES, GpuCounters
from velyrix.fleet.drivers.sim import SimGPU
from velyrix.fleet.drivers.sim.region import SimRegion
from velyrix.health import evidence as ev


def test_every_record_takes_its_counters_from_the_one_declaration() -> None:
    assert len(COUNTER_NAMES) >= 17
    for cls in (SimGPU, GPUReading, ev.GpuReading):
        assert issubclass(cls, GpuCounters)
        assert set(COUNTER_NAMES) <= {f.name for f in dataclasses.fields(cls)}
        own = cls.__dict__["__annotations__"]
        assert not set(COUNTER_NAMES) & set(own), f"{cls.__name__} declares a counter again"
    hints = typing.get_type_hints(GpuCounters)
    assert hints["remap_pending"] == hints["remap_failure"] == bool | GpuCounters.__parameters__[0]


def test_a_twin_gpus_counters_reach_the_engine_through_the_agent_and_json() -> None:
    region = SimRegion.build("us-east-1", {"hgx-h200-8g": 1})
    gpu = next(iter(region.nodes.values())).gpus[3]
    gpu.ecc_sbe_volatile, gpu.remap_pending, gpu.nvlink_links_up = 41, True, 16
    reading = read_gpu(gpu)
    wire = NodeSample.from_dict(NodeSample(hostname="n", gpus=[reading]).to_dict()).gpus[0]
    judged = ev.GpuReading.from_object(wire)
    for name in COUNTER_NAMES:
        assert getattr(gpu, name) == getattr(reading, name) == getattr(wire, name) == getattr(judged, name)
    assert judged.remap_pending is True and wire.remap_pending is True


def test_a_gpu_off_the_bus_reports_no_counter_and_the_engine_keeps_healthy_defaults() -> None:
    region = SimRegion.build("us-east-1", {"hgx-h200-8g": 1})
    gpu = next(iter(region.nodes.values())).gpus[0]
    gpu.responsive = False
    reading = read_gpu(gpu)
    assert all(getattr(reading, n) is None for n in COUNTER_NAMES) and reading.responsive is False
    again = NodeSample.from_dict({"hostname": "n", "gpus": [{"index": 0, "uuid": "GPU-1"}]}).gpus[0]
    assert all(getattr(again, n) is None for n in COUNTER_NAMES)
    judged = ev.GpuReading.from_object(reading)
    assert judged == ev.GpuReading(0, responsive=False) and judged.nvlink_links_up == 18


def test_the_engines_reading_cannot_be_changed_once_built() -> None:
    reading = ev.GpuReading(0, ecc_dbe_volatile=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        reading.ecc_dbe_volatile = 0
    assert hash(reading) == hash(ev.GpuReading(0, ecc_dbe_volatile=1))
