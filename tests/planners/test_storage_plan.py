"""The storage planner on whole clusters: what the seed's 800 TB tier delivers to a 405B job, whether
that meets the target, the cheapest change, retention, the data feed, and bad workloads."""

from __future__ import annotations

import dataclasses

import pytest

from velyrix import errors, units
from velyrix.declarations import loader, models
from velyrix.planners import checkpoints, plan, sizing, storage

from ..conftest import EXAMPLES


def cluster(nodes: int = 64, perf_tb: float = 800, object_tb: float = 2000, **workload: object) -> models.ClusterSpec:
    w = {"model_params": 405e9, "tp": 8, "pp": 16, "zero_stage": 1, "checkpoint_interval_s": 1800.0, **workload}
    return models.ClusterSpec(
        address="velyrix_cluster.t",
        name="t",
        region="us-east-1",
        node_type="hgx-h200-8g",
        node_count=nodes,
        fabric="infiniband-ndr",
        scheduler="slurm",
        storage=models.StorageSpec(parallel_fs_tb=perf_tb, object_tb=object_tb),
        workload=models.WorkloadSpec(**w),  # type: ignore[arg-type]
    )


def test_seed_tier_and_a_405b_save_every_30_minutes() -> None:
    p = storage.plan_storage(cluster())
    d = p.declared
    assert p.checkpoint.size_bytes == pytest.approx(405e9 * 14)
    assert (p.expected_write_gb_s, p.expected_read_gb_s) == (pytest.approx(480), pytest.approx(1200))
    assert d.write_gb_s == pytest.approx(384)
    # 5.67 TB at 384 GB/s = 14.77 s blocking per save; 14.77 / (1,800 + 14.77) = 0.81% of wall time.
    assert d.blocking_s == pytest.approx(5670 / 384)
    assert d.share_of_interval == pytest.approx(d.blocking_s / (1800 + d.blocking_s))
    assert d.meets and p.meets_target  # default target: saves block <= 5% of wall time
    assert p.cheapest is not None and p.cheapest.total_usd_per_month <= d.total_usd_per_month


def test_example_405b_file_says_whether_it_meets_and_the_cheapest_change() -> None:
    spec = loader.load(EXAMPLES / "acme-405b.tf").clusters[0]
    p = storage.plan_storage(spec)
    assert p.declared.capacity_tb == 800 and p.declared.interval_s == 1800
    assert p.declared.write_gb_s == pytest.approx(384)
    assert not p.meets_target  # the example asks for ETTR >= 99%
    assert any("goodput target" in r for r in p.declared.reasons)
    best = p.cheapest
    assert best is not None and best.meets and best.ettr >= 0.99
    assert best.total_usd_per_month < p.declared.total_usd_per_month
    assert p.change and all(("$" in line) or ("->" in line) for line in p.change)
    assert any(line.startswith("checkpoint_mode sync -> async") for line in p.change)
    data = p.to_dict()
    assert data["declared"]["blocking_s"] == pytest.approx(p.declared.blocking_s)
    assert data["cheapest"]["storage_usd_per_month"] > 0


def test_a_tier_too_small_for_the_stall_target_gets_more_capacity() -> None:
    p = storage.plan_storage(cluster(perf_tb=50, max_checkpoint_overhead=0.005))
    # 50 TB writes 24 GB/s: 236 s per save, 11.6% of a 30-min interval.
    assert not p.declared.meets and p.declared.blocking_s == pytest.approx(5670 / 24)
    assert p.cheapest is not None and p.cheapest.share_of_interval <= 0.005


def test_sync_only_search_grows_capacity_to_meet_the_stall_target() -> None:
    p = storage.plan_storage(cluster(perf_tb=50, max_checkpoint_overhead=0.005))
    ctx = sizing.Context(
        ckpt=p.checkpoint,
        node_type="hgx-h200-8g",
        nodes=64,
        gpus=512,
        mtti_s=2e5,
        step_time_s=None,
        max_overhead=0.005,
        goodput_target=None,
        keep=3,
        promote_every=10,
        archive_after_days=None,
        dataset_perf_tb=0,
    )
    grid = sizing.capacity_grid("parallel_fs", 50)
    first = next(tb for tb in grid if sizing.evaluate(ctx, "parallel_fs", tb, "sync", 1800.0).meets)
    # blocking <= 0.005 x 1800 / 0.995 = 9.05 s -> >= 626.6 GB/s planned -> 1,305.5 TB -> 1,350 TB
    assert first == 1350


def test_async_saves_block_for_the_staging_copy_and_need_host_ram() -> None:
    p = storage.plan_storage(cluster(checkpoint_mode="async"))
    d = p.declared
    # busiest rank 15.82 GB over 25 GB/s D2H + 1 s = 1.63 s
    assert d.staging_s == pytest.approx(p.checkpoint.per_rank_bytes / units.GB / 25 + 1)
    assert d.blocking_s == d.staging_s and d.drain_ok and d.host_ram_ok
    assert d.host_ram_needed_gb == pytest.approx(p.checkpoint.per_node_bytes / units.GB)


def test_async_drain_longer_than_the_interval_fails() -> None:
    ctx = sizing.Context(
        ckpt=storage.plan_storage(cluster()).checkpoint,
        node_type="hgx-h200-8g",
        nodes=64,
        gpus=512,
        mtti_s=2e5,
        step_time_s=None,
        max_overhead=0.05,
        goodput_target=None,
        keep=3,
        promote_every=10,
        archive_after_days=None,
        dataset_perf_tb=0,
    )
    opt = sizing.evaluate(ctx, "parallel_fs", 50, "async", 120.0)  # 236 s drain, 120 s interval
    assert not opt.drain_ok and not opt.meets and any("drain" in r for r in opt.reasons)


def test_async_staging_that_does_not_fit_host_ram_fails() -> None:
    par = checkpoints.resolve_parallelism(8, tp=8)
    big = checkpoints.checkpoint_size(1e12, par)  # 14 TB on one node
    ctx = sizing.Context(
        ckpt=big,
        node_type="hgx-h200-8g",
        nodes=1,
        gpus=8,
        mtti_s=1e7,
        step_time_s=None,
        max_overhead=0.05,
        goodput_target=None,
        keep=1,
        promote_every=10,
        archive_after_days=None,
        dataset_perf_tb=0,
    )
    opt = sizing.evaluate(ctx, "parallel_fs", 100, "async", None)
    assert not opt.host_ram_ok and any("host RAM" in r for r in opt.reasons)


def test_retention_keeps_k_on_perf_and_promotes_every_nth() -> None:
    p = storage.plan_storage(cluster(keep_checkpoints=2, promote_every=4, archive_after_days=7))
    r = p.retention
    size_tb = 405e9 * 14 / units.TB
    assert r.perf_tb == pytest.approx(3 * size_tb)
    cycle = 1800 + p.declared.blocking_s
    assert r.promoted_per_day == pytest.approx(86400 / cycle / 4)
    assert r.object_tb == pytest.approx(size_tb * r.promoted_per_day * 7)
    assert r.archive_tb_per_month == pytest.approx(size_tb * r.promoted_per_day * 730 / 24)
    assert r.object_usd_per_month == pytest.approx(r.object_tb * 20)
    assert r.archive_usd_per_month == pytest.approx(r.archive_tb_per_month * 6)


def test_unet3d_data_feed_needs_about_3_gb_s_per_gpu() -> None:
    # REFERENCE §2: 146.6 MB samples, batch 7, 0.323 s per step on H100 -> 3.18 GB/s per GPU at full speed.
    p = storage.plan_storage(
        cluster(dataset_tb=500, sample_mb=146.6, batch_per_gpu=7, step_time_s=0.323, read_pattern="random")
    )
    feed = p.data_feed
    assert feed is not None
    assert feed.per_gpu_read_gb_s == pytest.approx(146.6e-3 * 7 / 0.323, rel=1e-9)
    assert feed.required_read_gb_s == pytest.approx(512 * 3.1771 * 0.9, rel=1e-3)
    assert not feed.fits_local_nvme and feed.tier == "parallel_fs"
    assert feed.tier_read_p10_gb_s == pytest.approx(960 * 0.8)  # random reads derated
    assert feed.meets_au_target is False and p.warnings


def test_a_small_dataset_is_cached_on_local_nvme() -> None:
    p = storage.plan_storage(cluster(dataset_tb=10, sample_mb=146.6, samples_per_s_per_gpu=21.7))
    assert p.data_feed is not None and p.data_feed.fits_local_nvme and p.data_feed.tier == "local_scratch"
    assert p.data_feed.meets_au_target


@pytest.mark.parametrize(
    ("workload", "text"),
    [
        ({"model_params": -5.0}, "parameter count must be > 0"),
        ({"tp": 8, "pp": 16, "dp": 3}, "does not divide the 512 GPUs"),
        ({"bytes_per_param": 0.0}, "bytes per parameter"),
        ({"max_checkpoint_overhead": 1.5}, "max_checkpoint_overhead"),
        ({"checkpoint_mode": "lazy"}, "checkpoint_mode"),
        ({"checkpoint_interval_s": -10.0}, "checkpoint_interval_s"),
        ({"keep_checkpoints": 0}, "keep_checkpoints"),
        ({"dataset_tb": -1.0}, "dataset size"),
        ({"node_failure_rate": 0.0}, "node_failure_rate"),
        ({"zero_stage": 3}, "ZeRO stage 3 cannot be combined"),
    ],
)
def test_bad_workloads_are_rejected(workload: dict, text: str) -> None:
    with pytest.raises(errors.InvalidInputError, match=text):
        storage.plan_storage(cluster(**workload))


def test_plan_cluster_adds_storage_and_goodput_sections_only_with_a_workload() -> None:
    with_w = plan.plan_cluster(cluster())
    assert with_w["storage_plan"]["expected_write_gb_s"] == pytest.approx(480)
    assert with_w["goodput"]["interval_s"] == 1800
    assert with_w["goodput"]["save_s"] == pytest.approx(with_w["storage_plan"]["declared"]["blocking_s"])
    without = plan.plan_cluster(dataclasses.replace(cluster(), workload=None))
    assert "storage_plan" not in without and "goodput" not in without


def test_no_performance_tier_still_plans_and_recommends_one() -> None:
    out = plan.plan_cluster(cluster(perf_tb=0))
    sp = out["storage_plan"]
    assert sp["declared"]["blocking_s"] is None and not sp["meets_target"]
    assert sp["cheapest"]["capacity_tb"] >= 50 and out["goodput"] is None
    assert any("no performance tier" in w for w in sp["warnings"])


def test_a_dataset_on_the_performance_tier_keeps_its_read_bandwidth_in_the_recommendation() -> None:
    # unet3d-like feed at AU 90%: 1,464 GB/s; random reads get 0.8 of the p10 read (1.5 x 0.8 x 0.8 per TB)
    p = storage.plan_storage(
        cluster(dataset_tb=500, sample_mb=146.6, batch_per_gpu=7, step_time_s=0.323, read_pattern="random")
    )
    assert any("data feed needs" in r for r in p.declared.reasons)
    best = p.cheapest
    assert best is not None and best.read_gb_s * 0.8 >= p.data_feed.required_read_gb_s  # type: ignore[union-attr]
    assert best.capacity_tb >= 1464 / (1.5 * 0.8 * 0.8)
