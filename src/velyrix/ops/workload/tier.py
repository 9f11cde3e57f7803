"""The twin's performance tier as a training job sees it: bandwidth over time, and how long a transfer takes.

The tenant's volume delivers the tier model's bandwidth at its size (``storage_tiers.toml``: GB/s per TB,
capped by the tier's maximum), capped by the job nodes' storage NICs and the cluster's storage plane,
times the share the twin's streams achieve (``fleet.drivers.sim.driver.STORAGE_EFFICIENCY``, the same the
twin's storage acceptance test measures), less what other tenants' traffic on the same storage servers
takes in each epoch (``twin_workload.toml``, seeded: the same seed gives the same neighbours).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from velyrix import catalog, units
from velyrix.fleet.drivers.sim.driver import STORAGE_EFFICIENCY
from velyrix.ops.workload.job import JobSpec


@dataclass(frozen=True)
class Neighbours:
    """Other tenants' share of the tier, one value per epoch (0..1)."""

    epoch_s: float
    shares: np.ndarray

    @classmethod
    def draw(cls, seed: int, horizon_s: float) -> Neighbours:
        cfg = catalog.load_toml("twin_workload.toml")["other_tenants"]
        epoch = float(cfg["epoch_s"])
        n = int(math.ceil(horizon_s / epoch)) + 2
        rng = np.random.default_rng([seed, 7])
        burst = rng.random(n) < float(cfg["burst_probability"])
        loud = rng.uniform(float(cfg["burst_share_min"]), float(cfg["burst_share_max"]), n)
        quiet = rng.uniform(0.0, float(cfg["quiet_share_max"]), n)
        return cls(epoch, np.where(burst, loud, quiet))

    def share(self, t_s: float) -> float:
        i = min(int(t_s // self.epoch_s), len(self.shares) - 1)
        return float(self.shares[max(i, 0)])


class TwinTier:
    """The performance tier of one job: write and read GB/s at a simulated time, transfer end times."""

    def __init__(self, job: JobSpec, neighbours: Neighbours) -> None:
        tier = catalog.storage_tier("parallel_fs")
        node = catalog.node_type(job.node_type)
        clients = job.nodes * node.storage_gb_s
        if job.storage_plane_gb_s is not None:
            clients = min(clients, job.storage_plane_gb_s)
        tb = job.parallel_fs_tb
        self.write_gb_s = min(tb * tier.param("write_gb_s_per_tb"), tier.param("max_write_gb_s"), clients)
        self.read_gb_s = min(tb * tier.param("read_gb_s_per_tb"), tier.param("max_read_gb_s"), clients)
        self.random_read_factor = float(tier.params.get("random_read_factor", 1.0))
        self.node_gb_s = node.storage_gb_s * STORAGE_EFFICIENCY
        self.neighbours = neighbours
        self.job = job

    def _free(self, t_s: float) -> float:
        return STORAGE_EFFICIENCY * (1.0 - self.neighbours.share(t_s))

    def write_at(self, t_s: float) -> float:
        """GB/s this job's writes get at ``t_s``."""
        return self.write_gb_s * self._free(t_s)

    def read_at(self, t_s: float) -> float:
        """GB/s this job's streaming reads get at ``t_s``."""
        return self.read_gb_s * self._free(t_s)

    def data_read_at(self, t_s: float) -> float:
        """GB/s the dataloader's reads get at ``t_s`` (random reads at the tier's random-read factor)."""
        return self.read_at(t_s) * (self.random_read_factor if self.job.random_reads else 1.0)

    def transfer_end(self, start_s: float, total_bytes: float, per_node_bytes: float, *, write: bool) -> float:
        """When a transfer of ``total_bytes`` (the busiest node moving ``per_node_bytes``) started at
        ``start_s`` ends: the aggregate is integrated over the neighbours' epochs; no node can beat its NICs."""
        rate = self.write_at if write else self.read_at
        t, left = start_s, total_bytes / units.GB
        epoch = self.neighbours.epoch_s
        while True:
            bw = rate(t)
            boundary = (math.floor(t / epoch) + 1.0) * epoch
            if bw * (boundary - t) >= left:
                end = t + left / bw
                break
            left -= bw * (boundary - t)
            t = boundary
        return max(end, start_s + per_node_bytes / units.GB / self.node_gb_s)
