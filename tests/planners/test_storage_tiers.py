"""Tier models from the catalog: bandwidth grows with capacity up to the tier's ceiling and the clients'
NICs, and the planner uses the low percentile."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from velyrix import errors
from velyrix.planners import tiers

H200 = "hgx-h200-8g"  # 2 x 200G storage NICs = 50 GB/s per node


def test_seed_performance_tier_delivers_per_capacity_at_its_low_percentile() -> None:
    perf = tiers.tier_performance("parallel_fs", 800, nodes=64, node_type=H200)
    # 800 TB x 0.6 GB/s/TB = 480 GB/s mean write; x 0.8 = 384 GB/s planned. Read 1,200 -> 960.
    assert perf.expected_write_gb_s == pytest.approx(480)
    assert perf.p10_write_gb_s == pytest.approx(384)
    assert perf.expected_read_gb_s == pytest.approx(1200)
    assert perf.p10_read_gb_s == pytest.approx(960)
    assert perf.client_cap_gb_s == pytest.approx(64 * 50)
    assert perf.write_limited_by == "capacity"
    assert perf.price_usd_per_month == pytest.approx(800 * 42)


def test_few_clients_cap_a_large_tier() -> None:
    perf = tiers.tier_performance("parallel_fs", 2000, nodes=4, node_type=H200)
    assert perf.tier_write_gb_s == pytest.approx(1200)
    assert perf.expected_write_gb_s == pytest.approx(4 * 50)
    assert perf.write_limited_by == "clients"


def test_tier_ceiling_caps_bandwidth() -> None:
    perf = tiers.tier_performance("parallel_fs", 10000, nodes=512, node_type=H200)
    assert perf.expected_write_gb_s == pytest.approx(4000)
    assert perf.expected_read_gb_s == pytest.approx(10000)
    assert perf.write_limited_by == "tier_max"


def test_local_nvme_comes_with_the_nodes() -> None:
    local = tiers.tier_performance("local_scratch", 0, nodes=64, node_type=H200)
    assert local.capacity_tb == pytest.approx(64 * 30.72)
    assert local.expected_read_gb_s == pytest.approx(64 * 50)
    assert local.to_dict()["client_cap_gb_s"] is None
    assert local.price_usd_per_month == 0


def test_object_has_a_floor_and_a_per_client_ceiling() -> None:
    small = tiers.tier_performance("object", 10, nodes=64, node_type=H200)
    assert small.expected_read_gb_s == pytest.approx(5)  # floor
    big = tiers.tier_performance("object", 2000, nodes=2, node_type=H200)
    assert big.tier_read_gb_s == pytest.approx(100) and big.expected_read_gb_s == pytest.approx(2 * 3)


def test_archive_reports_retrieval_hours() -> None:
    archive = tiers.tier_performance("archive", 100, nodes=8, node_type=H200)
    assert archive.retrieval_h == (0.1, 12.0)
    assert archive.p10_read_gb_s == pytest.approx(0.5)


def test_capacity_for_a_write_target_rounds_up_to_the_step() -> None:
    # 300 GB/s planned = 300 / (0.8 x 0.6) = 625 TB -> 650 TB.
    assert tiers.capacity_for_write_tb("parallel_fs", 300, nodes=64, node_type=H200) == 650
    assert tiers.capacity_for_write_tb("parallel_fs", 1, nodes=64, node_type=H200) == 50  # the tier's floor
    assert tiers.capacity_for_write_tb("parallel_fs", 5000, nodes=64, node_type=H200) is None


@pytest.mark.parametrize("tb", [-1.0, float("nan"), float("inf")])
def test_negative_or_non_finite_capacity_is_rejected(tb: float) -> None:
    with pytest.raises(errors.InvalidInputError):
        tiers.tier_performance("parallel_fs", tb, nodes=8, node_type=H200)


def test_unknown_tier_suggests_the_closest() -> None:
    with pytest.raises(errors.UnknownNameError) as info:
        tiers.tier_performance("parallel-fs", 100, nodes=8, node_type=H200)
    assert "parallel_fs" in (info.value.hint or "")


@settings(max_examples=60, deadline=None)
@given(
    tier=st.sampled_from(["parallel_fs", "parallel_fs_capacity", "object", "block"]),
    a=st.floats(0, 20000),
    b=st.floats(0, 20000),
    nodes=st.integers(1, 2048),
)
def test_more_capacity_never_lowers_bandwidth_and_p10_never_exceeds_the_mean(
    tier: str, a: float, b: float, nodes: int
) -> None:
    small, large = sorted((a, b))
    lo = tiers.tier_performance(tier, small, nodes=nodes, node_type=H200)
    hi = tiers.tier_performance(tier, large, nodes=nodes, node_type=H200)
    assert hi.expected_write_gb_s >= lo.expected_write_gb_s and hi.expected_read_gb_s >= lo.expected_read_gb_s
    assert hi.p10_write_gb_s <= hi.expected_write_gb_s <= hi.client_cap_gb_s
