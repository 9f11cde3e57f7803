"""Faults of the twin are catalog data (catalog/data/faults.toml, the XID effects in xids.toml), and the
health engine holds no XID number of its own."""

from __future__ import annotations

import ast
from pathlib import Path

from velyrix.catalog import faults as catalog_faults
from velyrix.catalog import health as catalog_health
from velyrix.catalog import reader
from velyrix.fleet.drivers.sim import Fault, SimRegion, faults

SRC = Path(__file__).resolve().parents[2] / "src" / "velyrix"


def _node():  # type: ignore[no-untyped-def]
    sim = SimRegion.build("us-east-1", {"hgx-h200-8g": 32}, seed=1)
    return sim.nodes[sorted(sim.nodes)[0]]


def test_every_cause_of_the_failure_rates_has_a_fault_and_every_xid_raised_is_catalogued() -> None:
    causes = {c.name for c in reader.failure_rates().causes}
    assert set(catalog_faults.cause_faults()) == causes
    for kind in catalog_faults.fault_kinds().values():
        assert set(kind.xids) <= set(catalog_health.xid_codes())
    assert set(faults.KINDS) == set(catalog_faults.fault_kinds())


def test_an_injected_dbe_counts_raises_its_xids_and_marks_the_remap_as_the_catalog_says() -> None:
    node = _node()
    faults.apply(node, Fault(kind="ecc_dbe", gpu=2), 10.0)
    gpu = node.gpus[2]
    assert (gpu.ecc_dbe_volatile, gpu.remap_pending, gpu.remap_bank_max) == (1, True, 1)
    assert [x for _, x in gpu.xid_events] == list(catalog_faults.fault_kinds()["ecc_dbe"].xids) == [48, 63]


def test_an_xid_fault_takes_its_twin_effect_from_the_xid_catalog() -> None:
    node = _node()
    faults.apply(node, Fault(kind="xid", xid=79, gpu=0), 1.0)
    assert node.gpus[0].responsive is False and catalog_health.xid(79).twin_set == {"responsive": False}
    faults.apply(node, Fault(kind="xid", xid=95, gpu=1), 1.0)
    assert node.gpus[1].ecc_dbe_volatile == catalog_health.xid(95).twin_add["ecc_dbe_volatile"] == 1
    faults.apply(node, Fault(kind="xid", xid=13, gpu=3), 1.0)
    assert node.gpus[3].responsive and node.gpus[3].ecc_dbe_volatile == 0


def test_a_slow_disk_runs_at_the_fault_factor_of_its_healthy_speed() -> None:
    node = _node()
    faults.apply(node, Fault(kind="slow_disk", drive=1, factor=0.25), 1.0)
    drive = node.nvme[1]
    assert drive.read_gb_s_measured == drive.healthy_read_gb_s * 0.25
    assert node.nvme[0].read_gb_s_measured == node.nvme[0].healthy_read_gb_s


def test_the_health_engine_compares_no_xid_code_with_a_number() -> None:
    tree = ast.parse((SRC / "health" / "engine.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
                n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
            }
            numbers = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and type(n.value) is int]
            assert not ({"code", "xid"} & names and numbers), f"engine.py:{node.lineno} compares an XID with a number"
