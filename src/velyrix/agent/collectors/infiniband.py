"""InfiniBand port state and counters from sysfs.

Layout read (Linux ``ib_core``): ``<root>/<device>/ports/<port>/state`` ("4: ACTIVE"),
``.../rate`` ("400 Gb/sec (4X NDR)") and one file per counter under ``.../counters/`` (an integer each;
``port_xmit_data``/``port_rcv_data`` count 4-byte words, as the IB spec's PortCounters do). ``root``
defaults to ``/sys/class/infiniband``; tests point it at a fixture tree.
"""

from __future__ import annotations

import re
from pathlib import Path

from velyrix.agent.collectors.base import Collector, IBPortReading, NodeSample, read_sysfs

DEFAULT_ROOT = "/sys/class/infiniband"
_RATE = re.compile(r"^\s*([0-9.]+)\s*Gb/sec")


def parse_state(text: str | None) -> str:
    """``"4: ACTIVE"`` -> ``"ACTIVE"``; unreadable -> ``"UNKNOWN"``."""
    if not text:
        return "UNKNOWN"
    return text.split(":", 1)[-1].strip().upper()


def parse_rate_gbps(text: str | None) -> float | None:
    """``"400 Gb/sec (4X NDR)"`` -> 400.0 (Gb/s); unreadable -> None."""
    if not text:
        return None
    match = _RATE.match(text)
    return float(match.group(1)) if match else None


def read_ports(root: str | Path = DEFAULT_ROOT) -> tuple[list[IBPortReading], list[str]]:
    """All ports under ``root``, sorted by device then port; returns (readings, problems)."""
    base = Path(root)
    readings: list[IBPortReading] = []
    problems: list[str] = []
    if not base.is_dir():
        return readings, problems
    for dev in sorted(p for p in base.iterdir() if (p / "ports").is_dir()):
        for port_dir in sorted((dev / "ports").iterdir(), key=lambda p: (len(p.name), p.name)):
            if not port_dir.name.isdigit():
                continue
            counters: dict[str, int] = {}
            counter_dir = port_dir / "counters"
            if counter_dir.is_dir():
                for f in sorted(counter_dir.iterdir()):
                    raw = read_sysfs(f)
                    try:
                        counters[f.name] = int(raw) if raw is not None else 0
                    except ValueError:
                        problems.append(f"infiniband: {f} holds {raw!r}, expected an integer")
            else:
                problems.append(f"infiniband: {counter_dir} missing")
            readings.append(
                IBPortReading(
                    device=dev.name,
                    port=int(port_dir.name),
                    state=parse_state(read_sysfs(port_dir / "state")),
                    rate_gbps=parse_rate_gbps(read_sysfs(port_dir / "rate")),
                    counters=counters,
                )
            )
    return readings, problems


class InfinibandCollector(Collector):
    """Partial collector: the node's InfiniBand ports (no GPUs)."""

    name = "infiniband"

    def __init__(self, root: str | Path = DEFAULT_ROOT, hostname: str = "localhost"):
        self.root = Path(root)
        self.hostname = hostname

    def collect(self) -> NodeSample:
        ports, problems = read_ports(self.root)
        return NodeSample(hostname=self.hostname, ib_ports=ports, problems=problems)
