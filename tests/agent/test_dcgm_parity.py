"""Parity with dcgm-exporter's default counter set (release 4.5.3-4.8.2, vendored in fixtures/): a scrape
of a real ``velyrix agent --collector sim`` process has every field the file enables, with the file's
Prometheus type, on every GPU, with dcgm-exporter's GPU labels; ``label`` fields appear as labels."""

from __future__ import annotations

import csv
import re
import subprocess
import sys
from pathlib import Path

import pytest

from velyrix.agent import dcgm_fields

FIXTURE = Path(__file__).parent / "fixtures" / f"dcgm-exporter-{dcgm_fields.DCGM_EXPORTER_RELEASE}-default-counters.csv"
GPU_LABELS = {"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname"}
SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)\{(.*)\} (\S+)$")
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def default_counters() -> list[tuple[str, str]]:
    """(field, type) of every enabled line of the vendored file."""
    out = []
    with FIXTURE.open(encoding="utf-8") as fh:
        for row in csv.reader(fh):
            if not row or row[0].lstrip().startswith("#") or len(row) < 2:
                continue
            out.append((row[0].strip(), row[1].strip()))
    return out


@pytest.fixture(scope="module")
def scrape() -> tuple[dict[str, str], dict[str, list[dict[str, str]]]]:
    """(TYPE per metric, label sets per metric) of one scrape of the agent on a busy twin node."""
    exe = Path(sys.executable).parent / "velyrix"
    body = subprocess.run(
        [str(exe), "agent", "--collector", "sim", "--once", "--sim-load", "80", "--no-health"],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    types: dict[str, str] = {}
    series: dict[str, list[dict[str, str]]] = {}
    for line in body.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ", 3)
            types[name] = typ
        elif m := SAMPLE.match(line):
            series.setdefault(m.group(1), []).append(dict(LABEL.findall(m.group(2))) | {"__value__": m.group(3)})
    return types, series


def test_the_vendored_file_is_the_named_release() -> None:
    fields = dict(default_counters())
    assert len(fields) == 26
    assert fields["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"] == "gauge" and fields["DCGM_FI_DRIVER_VERSION"] == "label"


def test_every_default_field_is_scraped_with_its_type_and_labels(scrape) -> None:
    types, series = scrape
    missing = []
    for field, typ in default_counters():
        if typ == "label":
            gpu_series = series["DCGM_FI_DEV_GPU_UTIL"]
            assert all(s.get(field) for s in gpu_series), f"label {field} missing or empty"
            continue
        if field not in series:
            missing.append(field)
            continue
        assert types[field] == typ, f"{field}: type {types[field]}, dcgm-exporter says {typ}"
        rows = series[field]
        assert sorted(int(s["gpu"]) for s in rows) == list(range(8)), f"{field}: not on every GPU"
        for s in rows:
            assert GPU_LABELS <= set(s), f"{field}: labels {sorted(s)}"
            assert re.fullmatch(r"[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-7]", s["pci_bus_id"])
            assert s["device"] == f"nvidia{s['gpu']}" and "hpc_job" in s
    assert missing == []


def test_a_busy_twin_gpu_shows_tensor_work_and_nvlink_traffic(scrape) -> None:
    _, series = scrape

    def values(name: str) -> list[float]:
        return [float(s["__value__"]) for s in series[name]]

    assert all(v == pytest.approx(0.8) for v in values("DCGM_FI_PROF_GR_ENGINE_ACTIVE"))  # 80% load
    assert all(0 < v < 0.8 for v in values("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"))
    assert all(v > 0 for v in values("DCGM_FI_PROF_PCIE_TX_BYTES") + values("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"))
    assert all(v > 0 for v in values("DCGM_FI_DEV_FB_RESERVED"))
    assert "DCGM_FI_DEV_CLOCKS_EVENT_REASONS" in series and "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" not in series
