"""Fixtures of the agent tests: a small twin region and an InfiniBand sysfs fixture tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from velyrix.fleet.drivers.sim import SimRegion


@pytest.fixture
def region() -> SimRegion:
    return SimRegion.build("us-east-1", {"hgx-h200-8g": 2}, seed=3)


def write_ib_tree(
    root: Path,
    device: str = "mlx5_0",
    port: int = 1,
    state: str = "4: ACTIVE",
    rate: str = "400 Gb/sec (4X NDR)",
    counters: dict[str, str] | None = None,
) -> Path:
    """A sysfs-like ``/sys/class/infiniband`` tree with one port."""
    port_dir = root / device / "ports" / str(port)
    (port_dir / "counters").mkdir(parents=True)
    (port_dir / "state").write_text(state + "\n")
    (port_dir / "rate").write_text(rate + "\n")
    values = counters or {
        "symbol_error": "3",
        "link_downed": "1",
        "port_rcv_errors": "0",
        "port_xmit_wait": "12",
        "port_xmit_data": "1000",
        "port_rcv_data": "250",
        "port_xmit_packets": "7",
        "port_rcv_packets": "5",
        "link_error_recovery": "2",
    }
    for name, value in values.items():
        (port_dir / "counters" / name).write_text(value + "\n")
    return root


@pytest.fixture
def ib_root(tmp_path: Path) -> Path:
    root = write_ib_tree(tmp_path / "infiniband")
    write_ib_tree(root, device="mlx5_1", state="1: DOWN", rate="400 Gb/sec (4X NDR)")
    return root
