"""The catalog holds the product page's figures, typed, with sources; unknown names get suggestions."""

from __future__ import annotations

import dataclasses

import pytest

from velyrix import catalog, errors


@pytest.mark.parametrize("name", ["hgx-h200-8g", "hgx-h100-8g", "hgx-b200-8g"])
def test_node_types_are_complete_and_sourced(name: str) -> None:
    nt = catalog.node_type(name)
    assert nt.gpus_per_node == 8 and nt.compute_nics == 8
    assert nt.compute_nic_gbps == 400
    assert nt.gpu_memory_gb > 0 and nt.hbm_bandwidth_gb_s > 0 and nt.bf16_dense_tflops > 0
    assert nt.local_nvme_tb > 0 and nt.local_nvme_read_gb_s > 0 and nt.power_kw > 0
    assert nt.local_nvme_drives > 0 and nt.cpu_cores > 0
    assert nt.source
    assert set(nt.fabrics) <= set(catalog.fabric_names())
    assert catalog.gpu_hour_price_usd(name) > 0


def test_records_are_frozen() -> None:
    nt = catalog.node_type("hgx-h200-8g")
    with pytest.raises(dataclasses.FrozenInstanceError):
        nt.gpus_per_node = 4  # type: ignore[misc]


def test_switches_of_the_issue() -> None:
    assert (catalog.switch("qm9700").ports, catalog.switch("qm9700").port_gbps) == (64, 400)
    assert (catalog.switch("q3400").ports, catalog.switch("q3400").port_gbps) == (144, 800)
    sn = catalog.switch("sn5600")
    assert (sn.ports, sn.port_gbps, sn.radix_at(400), sn.radix_at(800)) == (64, 800, 128, 64)


def test_fabrics_name_their_switch() -> None:
    for name in ("infiniband-ndr", "infiniband-xdr", "spectrum-x"):
        fab = catalog.fabric(name)
        assert catalog.switch(fab.switch).protocol == fab.protocol
    assert catalog.fabric("infiniband-ndr").sharp and not catalog.fabric("spectrum-x").sharp


def test_storage_tier_prices_are_the_product_pages() -> None:
    prices = {n: catalog.storage_tier(n).price_usd_per_tb_month for n in catalog.storage_tier_names()}
    assert prices["parallel_fs"] == 42 and prices["parallel_fs_capacity"] == 22 and prices["block"] == 101
    assert prices["object"] == 20 and prices["archive"] == 6 and prices["local_scratch"] == 0
    assert len(prices) == 6
    assert catalog.storage_tier_by_hcl_key("object_tb").name == "object"


def test_regions_have_capacity_and_baseline() -> None:
    region = catalog.region("us-east-1")
    assert region.capacity["hgx-h200-8g"] >= 64
    assert region.firmware_baseline and region.scalable_unit_nodes == 32


def test_failure_rates_and_cause_mix() -> None:
    rates = catalog.failure_rates()
    assert rates.rates_per_1000_node_days["meta_rsc1"] == 6.50
    assert rates.rates_per_1000_node_days["meta_rsc2"] == 2.34
    assert sum(c.count for c in rates.causes) == 419
    assert abs(sum(c.share for c in rates.causes) - 1.0) < 1e-9


@pytest.mark.parametrize(
    ("lookup", "wrong", "right"),
    [
        (catalog.node_type, "hgx-h200", "hgx-h200-8g"),
        (catalog.fabric, "infiniband-nrd", "infiniband-ndr"),
        (catalog.switch, "qm970", "qm9700"),
        (catalog.region, "us-east1", "us-east-1"),
        (catalog.storage_tier, "paralel_fs", "parallel_fs"),
    ],
)
def test_unknown_names_suggest_the_closest(lookup, wrong: str, right: str) -> None:
    with pytest.raises(errors.UnknownNameError) as info:
        lookup(wrong)
    assert info.value.suggestion == right
    assert right in (info.value.hint or "")


def test_every_node_type_names_a_sourced_gpu_model() -> None:
    for name in catalog.node_type_names():
        gpu = catalog.gpu_model(catalog.node_type(name).gpu_model)
        assert 0 < gpu.idle_w < gpu.tdp_w and gpu.idle_sm_clock_mhz < gpu.max_sm_clock_mhz
        assert gpu.nvlink_links > 0 and gpu.source
    assert catalog.gpu_model("H200-SXM5-141GB").tdp_w == 700.0
    with pytest.raises(errors.UnknownNameError) as info:
        catalog.gpu_model("H200-SXM5-141")
    assert info.value.suggestion == "H200-SXM5-141GB"
