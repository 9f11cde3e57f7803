"""The digital twin: a simulated region driven through the same ``Driver`` seam as real hardware.

Public names (docs/architecture.md, "The twin"):
``SimRegion``, ``SimClock``, ``SimNode``, ``SimGPU``, ``SimIBPort``, ``SimNVMe``,
``SimBMC``, ``Fault``, ``SimDriver``, ``SimDelays``.
"""

from velyrix.fleet.drivers.sim.clock import SimClock
from velyrix.fleet.drivers.sim.devices import SimBMC, SimGPU, SimIBPort, SimNode, SimNVMe
from velyrix.fleet.drivers.sim.driver import SimDelays, SimDriver
from velyrix.fleet.drivers.sim.faults import KINDS as FAULT_KINDS
from velyrix.fleet.drivers.sim.faults import Fault
from velyrix.fleet.drivers.sim.region import SimEvent, SimRegion

__all__ = [
    "FAULT_KINDS",
    "Fault",
    "SimBMC",
    "SimClock",
    "SimDelays",
    "SimDriver",
    "SimEvent",
    "SimGPU",
    "SimIBPort",
    "SimNVMe",
    "SimNode",
    "SimRegion",
]
