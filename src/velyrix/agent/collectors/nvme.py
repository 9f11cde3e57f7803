"""Local NVMe drives: identity from sysfs, bytes moved from the block layer, SMART health from nvme-cli.

sysfs (``root`` defaults to ``/sys/class/nvme``): ``nvme0/model``, and for each namespace
``nvme0/nvme0n1/stat`` (the block layer's counters; fields 3 and 7 are sectors read/written, 512 bytes
each, whatever the drive's LBA size). SMART media errors and wear (percent used) are not in sysfs: when
``nvme`` (nvme-cli) is installed the collector runs ``nvme smart-log -o json /dev/nvmeX``; otherwise
those fields stay ``None``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from velyrix.agent.collectors.base import Collector, NodeSample, NVMeReading, read_sysfs

DEFAULT_ROOT = "/sys/class/nvme"
SECTOR_BYTES = 512  # the block layer counts 512-byte sectors (Documentation/block/stat.rst)


def block_bytes(ctrl_dir: Path) -> tuple[int | None, int | None]:
    """(read_bytes, written_bytes) summed over the controller's namespaces; None when unreadable."""
    read = written = 0
    found = False
    for ns in sorted(ctrl_dir.glob(f"{ctrl_dir.name}n*")):
        stat = read_sysfs(ns / "stat")
        if not stat:
            continue
        fields = stat.split()
        if len(fields) < 7:
            continue
        read += int(fields[2]) * SECTOR_BYTES
        written += int(fields[6]) * SECTOR_BYTES
        found = True
    return (read, written) if found else (None, None)


def smart_log(device: str, nvme_cli: str | None) -> dict[str, float]:
    """``media_errors`` and ``percent_used`` from ``nvme smart-log -o json``; {} when unavailable."""
    if not nvme_cli:
        return {}
    try:
        out = subprocess.run(
            [nvme_cli, "smart-log", "-o", "json", device], capture_output=True, text=True, timeout=5, check=False
        )
        if out.returncode != 0:
            return {}
        data = json.loads(out.stdout)
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError):
        return {}
    result: dict[str, float] = {}
    if "media_errors" in data:
        result["media_errors"] = float(data["media_errors"])
    for key in ("percent_used", "percentage_used"):
        if key in data:
            result["percent_used"] = float(data[key])
    return result


class NvmeCollector(Collector):
    """Partial collector: the node's NVMe controllers (no GPUs)."""

    name = "nvme"

    def __init__(self, root: str | Path = DEFAULT_ROOT, hostname: str = "localhost", use_nvme_cli: bool = True):
        self.root = Path(root)
        self.hostname = hostname
        self.nvme_cli = shutil.which("nvme") if use_nvme_cli else None

    def collect(self) -> NodeSample:
        drives: list[NVMeReading] = []
        if self.root.is_dir():
            for ctrl in sorted(self.root.iterdir()):
                if not ctrl.name.startswith("nvme"):
                    continue
                read_b, written_b = block_bytes(ctrl)
                smart = smart_log(f"/dev/{ctrl.name}", self.nvme_cli)
                media = smart.get("media_errors")
                drives.append(
                    NVMeReading(
                        name=ctrl.name,
                        model=read_sysfs(ctrl / "model"),
                        media_errors=int(media) if media is not None else None,
                        percent_used=smart.get("percent_used"),
                        read_bytes=read_b,
                        written_bytes=written_b,
                    )
                )
        return NodeSample(hostname=self.hostname, nvme=drives)
