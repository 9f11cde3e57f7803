"""``sizing.best`` ranks the grid without building every option; it must pick exactly the options
``cheapest(search(...))`` and ``cheapest_storage(search(...))`` pick, for any job."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from velyrix.planners import checkpoints, sizing


@st.composite
def contexts(draw: st.DrawFn) -> tuple[sizing.Context, float, float | None]:
    nodes = draw(st.sampled_from([1, 4, 16, 64, 256]))
    params = draw(st.sampled_from([7e9, 70e9, 405e9, 1e12]))
    par = checkpoints.resolve_parallelism(nodes * 8, tp=8)
    ckpt = checkpoints.checkpoint_size(params, par)
    ctx = sizing.Context(
        ckpt=ckpt,
        node_type="hgx-h200-8g",
        nodes=nodes,
        gpus=nodes * 8,
        mtti_s=draw(st.floats(min_value=3600, max_value=1e7)),
        step_time_s=draw(st.none() | st.floats(min_value=1, max_value=30)),
        max_overhead=draw(st.floats(min_value=0.001, max_value=0.2)),
        goodput_target=draw(st.none() | st.floats(min_value=0.5, max_value=0.999)),
        keep=draw(st.integers(1, 5)),
        promote_every=draw(st.integers(1, 10)),
        archive_after_days=draw(st.none() | st.floats(min_value=1, max_value=60)),
        dataset_perf_tb=draw(st.sampled_from([0.0, 60.0, 2000.0])),
        feed_read_gb_s=draw(st.sampled_from([0.0, 100.0, 5000.0])),
        feed_read_factor=draw(st.sampled_from([1.0, 0.5])),
    )
    declared_tb = draw(st.sampled_from([0.0, 50.0, 800.0, 1234.0]))
    interval = draw(st.none() | st.sampled_from([300.0, 1800.0, 1000.0]))
    return ctx, declared_tb, interval


@settings(max_examples=40, deadline=None)
@given(contexts())
def test_best_picks_what_ranking_every_option_picks(case: tuple[sizing.Context, float, float | None]) -> None:
    ctx, declared_tb, interval = case
    options = sizing.search(ctx, "parallel_fs", declared_tb=declared_tb, declared_interval_s=interval)
    cheapest, cheapest_storage = sizing.best(ctx, "parallel_fs", declared_tb=declared_tb, declared_interval_s=interval)
    assert cheapest == sizing.cheapest(options)
    assert cheapest_storage == sizing.cheapest_storage(options)


def test_a_job_that_nothing_fits_gets_no_option() -> None:
    par = checkpoints.resolve_parallelism(8, tp=8)
    ctx = sizing.Context(
        ckpt=checkpoints.checkpoint_size(1e12, par),
        node_type="hgx-h200-8g",
        nodes=1,
        gpus=8,
        mtti_s=3600.0,
        step_time_s=None,
        max_overhead=0.0001,
        goodput_target=0.999,
        keep=1,
        promote_every=1,
        archive_after_days=None,
        dataset_perf_tb=0.0,
    )
    assert sizing.best(ctx, "parallel_fs", declared_tb=50.0, declared_interval_s=None) == (None, None)
    assert sizing.search(ctx, "parallel_fs", declared_tb=50.0, declared_interval_s=None) == []
