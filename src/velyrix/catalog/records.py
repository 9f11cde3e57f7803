"""Typed, frozen records of the catalog. Units are in the field names (see ``velyrix.units``)."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from velyrix import errors, units
from velyrix.frozen import frozen


@frozen
class NodeType:
    """A GPU server model that Velyrix sells."""

    name: str
    description: str
    gpu_model: str
    gpus_per_node: int
    gpu_memory_gb: float
    hbm_bandwidth_gb_s: float
    bf16_dense_tflops: float
    nvlink_gb_s: float
    compute_nics: int
    compute_nic_gbps: int
    storage_nics: int
    storage_nic_gbps: int
    inband_nic_gbps: int
    bmc_nic_gbps: int
    host_ram_gb: float
    cpu_cores: int
    local_nvme_tb: float
    local_nvme_drives: int
    local_nvme_read_gb_s: float
    local_nvme_write_gb_s: float
    power_kw: float
    fabrics: tuple[str, ...]
    source: str
    cpu_sockets: int = 1
    """CPU sockets; ``cpu_cores`` counts the cores of all of them."""
    cpu_threads_per_core: int = 1

    @property
    def storage_gb_s(self) -> float:
        """Per-node storage-plane bandwidth in GB/s (all storage NICs together)."""
        return units.gbps_to_gb_s(self.storage_nics * self.storage_nic_gbps)


@frozen
class GPUModel:
    """A GPU model (``NodeType.gpu_model``): power and clocks as NVML reports them (see gpus.toml)."""

    name: str
    tdp_w: float
    idle_w: float
    max_sm_clock_mhz: int
    idle_sm_clock_mhz: int
    mem_clock_mhz: int
    nvlink_links: int
    source: str
    nvml_name: str = ""
    """The name NVML reports (``nvmlDeviceGetName``), e.g. ``NVIDIA H200``."""
    gfd_product: str = ""
    """GPU Feature Discovery's ``nvidia.com/gpu.product`` node label, e.g. ``NVIDIA-H200``."""


@frozen
class Switch:
    """A network switch model."""

    name: str
    description: str
    protocol: str
    ports: int
    port_gbps: int
    split_ports: int
    split_port_gbps: int
    sharp: bool
    rack_units: int
    power_w: float
    source: str
    uplink_ports: int = 0
    uplink_gbps: int = 0
    cages: int = 0
    """Front-panel transceiver cages (OSFP); 0 = one cage per port."""
    sharp_trees_max: int = 0
    """SHARP aggregation trees per subnet (0 = no SHARP)."""

    def radix_at(self, link_gbps: int) -> int:
        """Ports available when every port runs at ``link_gbps`` (native, or split where supported)."""
        if self.split_ports and link_gbps <= self.split_port_gbps:
            return self.split_ports
        return self.ports


@frozen
class Fabric:
    """A compute fabric offering: which switch, at which link speed, with which features."""

    name: str
    description: str
    protocol: str
    switch: str
    link_gbps: int
    sharp: bool
    adaptive_routing: bool
    storage_switch: str
    source: str


@frozen
class StorageTier:
    """A storage tier of the product page with its performance model (see storage_tiers.toml)."""

    name: str
    description: str
    technology: str
    use: str
    model: str
    price_usd_per_tb_month: float
    hcl_key: str
    p10_derate: float
    source: str
    params: dict[str, float] = field(default_factory=dict)

    def param(self, key: str) -> float:
        """A model parameter such as ``read_gb_s_per_tb``; a missing one is a catalog error."""
        try:
            return self.params[key]
        except KeyError:
            raise errors.CatalogError(f"storage tier '{self.name}' has no parameter '{key}'") from None


@frozen
class Region:
    """A region: where capacity lives, with its firmware baseline and network ranges."""

    name: str
    description: str
    scalable_unit_nodes: int
    spare_fraction: float
    vlan_range: tuple[int, int]
    capacity: dict[str, int]
    firmware_baseline: dict[str, str]


@frozen
class FailureCause:
    """One cause of job interruptions with its share of all interruptions."""

    name: str
    count: int
    share: float
    precursor: bool


@frozen
class FailureRates:
    """Node failure rates (per 1,000 node-days) and the mix of causes."""

    rates_per_1000_node_days: dict[str, float]
    causes: tuple[FailureCause, ...]

    @property
    def default(self) -> float:
        return self.rates_per_1000_node_days["default"]


def pick(raw: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """The subset of ``raw`` whose keys are in ``names``."""
    return {k: v for k, v in raw.items() if k in names}
