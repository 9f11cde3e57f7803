"""The world of the health evaluation: its parameters, the jobs on the nodes and the benign noise.

See ``velyrix.ops.study.evaluation`` for what is evaluated and how.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from velyrix import errors
from velyrix.fleet.drivers.sim import Fault

POLICIES = ("none", "reactive", "proactive")
H = 3600.0


@dataclass(frozen=True)
class EvalConfig:
    """Parameters of one evaluation (times in hours unless named ``_s``)."""

    days: float = 90.0
    nodes: int = 1024
    seed: int = 0
    region: str = "us-east-1"
    node_type: str = "hgx-h200-8g"
    poll_s: float = 3600.0  # agent verdict cadence in the simulation (the real agent polls ~60 s)
    precursor_h: float | None = None  # how long precursors run before the fault (None: the twin's default)
    load_pct: float = 90.0
    job_mean_h: float = 24.0  # assumption: mean job (or job segment) length on a node
    idle_mean_h: float = 2.4  # assumption: mean gap between jobs -> ~90% busy
    checkpoint_interval_h: float = 1.0  # assumption; Young's T* = sqrt(2 delta M) is ~1 h for minute-long saves
    restart_h: float = 0.25  # assumption: detect + reschedule + reload (R in REFERENCE section 2)
    repair_h: float = 48.0  # assumption: part swap or RMA turnaround (a spare covers it)
    reboot_h: float = 0.5  # assumption: drain + reset/reboot + quick check
    diag_h: float = 2.0  # assumption: deep diagnostics after a drain that finds nothing
    notice_h: float = 24.0  # assumption: without checks, a person notices a broken node
    app_xid_per_node_day: float = 0.01  # assumption: benign application XIDs (13, 31, 43)
    sbe_storm_per_node_day: float = 0.0005  # assumption: one-off single-bit ECC bursts on healthy GPUs
    link_flap_per_node_day: float = 0.002  # assumption: a single IB link retrain (link_downed +1, symbol errors)
    job_nodes: tuple[tuple[int, float], ...] = ((1, 0.4), (4, 0.3), (16, 0.2), (64, 0.1))  # assumption

    def validate(self) -> None:
        if self.days <= 0 or self.nodes <= 0:
            raise errors.InvalidInputError(
                f"--days and --nodes must be positive (got {self.days}, {self.nodes})",
                hint="e.g. --days 90 --nodes 1024",
            )
        if self.precursor_h is not None and self.precursor_h <= 0:
            raise errors.InvalidInputError(f"--precursor-h must be positive, got {self.precursor_h}")
        if self.poll_s <= 0 or self.poll_s > 6 * H:
            raise errors.InvalidInputError(f"poll interval must be within (0, 21600] s, got {self.poll_s}")


class Jobs:
    """Per-node alternating busy/idle intervals (exponential lengths), the same for every policy."""

    def __init__(self, cfg: EvalConfig, rng: np.random.Generator) -> None:
        horizon_h = cfg.days * 24.0 + 10 * cfg.job_mean_h
        m = int(horizon_h / (cfg.job_mean_h + cfg.idle_mean_h) * 2) + 20
        busy = rng.exponential(cfg.job_mean_h * H, size=(cfg.nodes, m))
        idle = rng.exponential(cfg.idle_mean_h * H, size=(cfg.nodes, m))
        offset = rng.uniform(0, (cfg.job_mean_h + cfg.idle_mean_h) * H, size=(cfg.nodes, 1))
        self.starts = np.cumsum(busy + idle, axis=1) - busy - idle - offset
        self.ends = self.starts + busy
        sizes, weights = zip(*cfg.job_nodes, strict=True)
        # GPUs of the job behind each interval: the same job has the same size under every policy
        self.gpus = 8 * rng.choice(np.array(sizes), size=(cfg.nodes, m), p=np.array(weights) / sum(weights))

    def at(self, i: int, t: float) -> tuple[bool, float, float]:
        """(busy, job start, job end) of node ``i`` at time ``t`` (s)."""
        k = self._k(i, t)
        if k < 0:
            return False, t, t
        return bool(t < self.ends[i, k]), float(self.starts[i, k]), float(self.ends[i, k])

    def _k(self, i: int, t: float) -> int:
        return int(np.searchsorted(self.starts[i], t, side="right")) - 1

    def job_gpus(self, i: int, t: float) -> int:
        """GPUs of the job running (or last started) on node ``i`` at ``t``."""
        return int(self.gpus[i, max(self._k(i, t), 0)])

    def starts_between_gpus(self, i: int, a: float, b: float) -> list[int]:
        """GPU counts of the jobs that start on node ``i`` in (a, b]."""
        row = self.starts[i]
        lo, hi = np.searchsorted(row, a, side="right"), np.searchsorted(row, b, side="right")
        return [int(g) for g in self.gpus[i, lo:hi]]


def noise_events(cfg: EvalConfig, rng: np.random.Generator) -> list[tuple[float, int, Fault | str]]:
    """Benign events on healthy nodes: (time s, node index, a twin Fault or "link_flap")."""
    out: list[tuple[float, int, Fault | str]] = []
    span = cfg.days * 86400.0
    makers = (
        (cfg.app_xid_per_node_day, lambda g: Fault("xid", gpu=g, xid=int(rng.choice([13, 31, 43])))),
        (cfg.sbe_storm_per_node_day, lambda g: Fault("ecc_sbe_storm", gpu=g)),
        (cfg.link_flap_per_node_day, lambda g: "link_flap"),
    )
    for rate, make in makers:
        for _ in range(int(rng.poisson(rate * cfg.nodes * cfg.days))):
            out.append((float(rng.uniform(0, span)), int(rng.integers(cfg.nodes)), make(int(rng.integers(8)))))
    return sorted(out, key=lambda x: x[0])


def lasting(fault: Fault) -> bool:
    """Whether the node stays broken after the fault (transient XIDs only crash the job)."""
    return fault.kind != "xid" or fault.xid == 79
