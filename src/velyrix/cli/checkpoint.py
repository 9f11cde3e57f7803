"""``velyrix checkpoint``: how big a checkpoint is, what a storage tier delivers, how long a save blocks."""

from __future__ import annotations

import re
from dataclasses import asdict
from typing import Any

import typer

from velyrix import errors
from velyrix.cli import common

HELP = """Size one checkpoint from a parameter count or an architecture (DLIO formula, 14 bytes per \
parameter by default), split it over TP x PP x DP ranks, and say what a storage tier delivers: write \
GB/s at its low percentile, seconds each save blocks, share of the interval, ETTR, the cheapest \
configuration that meets the stall target, and a sensitivity table.

Examples:

  velyrix checkpoint --params 405e9 --tp 8 --pp 16 --zero 1 --gpus 512 --tier-tb 800 --interval 1800

  velyrix checkpoint --hidden 4096 --ffn 14336 --layers 32 --heads 32 --kv-heads 8 --vocab 128256 \
--zero 3 --gpus 8 --json
"""

_SUFFIX = {"": 1.0, "K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}


def parse_count(text: str | None) -> float | None:
    """``405e9``, ``405B``, ``1.2T``, ``8b`` -> a float; ``None`` passes through."""
    if text is None:
        return None
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMbBgGtT]?)\s*", text)
    if not m:
        raise errors.InvalidInputError(f"'{text}' is not a parameter count", hint="e.g. 405e9, 405B or 1.2T")
    return float(m.group(1)) * _SUFFIX[m.group(2).upper()]


def parse_interval(text: str) -> float | None:
    """``auto`` -> ``None`` (Daly's optimum); a number of seconds > 0 otherwise."""
    if text.strip().lower() == "auto":
        return None
    try:
        value = float(text)
    except ValueError:
        raise errors.InvalidInputError(
            f"interval '{text}' is neither a number of seconds nor 'auto'",
            hint="e.g. --interval 1800 or --interval auto",
        ) from None
    if not value > 0:
        raise errors.InvalidInputError(f"interval must be > 0 seconds, got {text}", hint="e.g. 1800, or auto")
    return value


def register(app: typer.Typer) -> None:
    app.command(name="checkpoint", help=HELP)(checkpoint)


def checkpoint(
    params: str = typer.Option(None, "--params", help="Parameter count: 405e9, 405B, 1.2T."),
    hidden: int = typer.Option(None, "--hidden", help="Hidden size (with --ffn --layers --heads --vocab)."),
    ffn: int = typer.Option(None, "--ffn", help="FFN (intermediate) size."),
    layers: int = typer.Option(None, "--layers", help="Transformer layers."),
    heads: int = typer.Option(None, "--heads", help="Attention heads."),
    kv_heads: int = typer.Option(None, "--kv-heads", help="KV heads (grouped-query attention); default: heads."),
    vocab: int = typer.Option(None, "--vocab", help="Vocabulary size."),
    tp: int = typer.Option(1, "--tp", help="Tensor parallel degree."),
    pp: int = typer.Option(1, "--pp", help="Pipeline parallel degree."),
    dp: int = typer.Option(None, "--dp", help="Data parallel degree (default: GPUs / (TP x PP))."),
    zero: int = typer.Option(0, "--zero", help="ZeRO stage 0-3."),
    bytes_per_param: float = typer.Option(14.0, "--bytes-per-param", help="2 (bf16 weights) + 12 (fp32 Adam)."),
    gpus: int = typer.Option(..., "--gpus", help="GPUs of the job."),
    node_type: str = typer.Option("hgx-h200-8g", "--node-type", help="Catalog node type."),
    tier: str = typer.Option("parallel_fs", "--tier", help="Storage tier the checkpoints go to."),
    tier_tb: float = typer.Option(
        None, "--tier-tb", help="Tier capacity, decimal TB (default: the smallest that meets --max-overhead)."
    ),
    mode: str = typer.Option("sync", "--mode", help="sync or async saves."),
    interval: str = typer.Option("auto", "--interval", help="Seconds between saves, or auto (Daly)."),
    failure_rate: float = typer.Option(None, "--node-failure-rate", help="Failures per 1,000 node-days."),
    step_time: float = typer.Option(None, "--step-time", help="Seconds per training step."),
    max_overhead: float = typer.Option(0.05, "--max-overhead", help="Share of wall time a save may block."),
    goodput_target: float = typer.Option(None, "--goodput-target", help="Minimum ETTR, e.g. 0.95."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    result = compute(
        params=params,
        arch={"hidden": hidden, "ffn": ffn, "layers": layers, "heads": heads, "kv_heads": kv_heads, "vocab": vocab},
        tp=tp,
        pp=pp,
        dp=dp,
        zero=zero,
        bytes_per_param=bytes_per_param,
        gpus=gpus,
        node_type=node_type,
        tier=tier,
        tier_tb=tier_tb,
        mode=mode,
        interval=interval,
        failure_rate=failure_rate,
        step_time=step_time,
        max_overhead=max_overhead,
        goodput_target=goodput_target,
    )
    if json_out:
        common.print_json(result)
        return
    render(result)


def compute(
    *,
    params: str | None,
    arch: dict[str, int | None],
    tp: int,
    pp: int,
    dp: int | None,
    zero: int,
    bytes_per_param: float,
    gpus: int,
    node_type: str,
    tier: str,
    tier_tb: float | None,
    mode: str,
    interval: str,
    failure_rate: float | None,
    step_time: float | None,
    max_overhead: float,
    goodput_target: float | None,
) -> dict[str, Any]:
    """Validate the flags and compute the JSON result (see ``HELP``)."""
    from velyrix import catalog, units
    from velyrix.planners import checkpoints, goodput, sizing, sizing_advice

    node = catalog.node_type(node_type)
    tier_rec = catalog.storage_tier(tier)
    if mode not in ("sync", "async"):
        raise errors.InvalidInputError(f"--mode must be sync or async, got '{mode}'")
    if not 0 < max_overhead < 1:
        raise errors.InvalidInputError(f"--max-overhead must be in (0, 1), got {max_overhead}", hint="e.g. 0.05")
    if goodput_target is not None and not 0 < goodput_target < 1:
        raise errors.InvalidInputError(f"--goodput-target must be in (0, 1), got {goodput_target}", hint="e.g. 0.95")
    if step_time is not None and not step_time > 0:
        raise errors.InvalidInputError(f"--step-time must be > 0 seconds, got {step_time}")
    interval_s = parse_interval(interval)
    architecture = checkpoints.architecture_from(arch)
    n_params = checkpoints.params_from(parse_count(params), architecture)
    par = checkpoints.resolve_parallelism(
        gpus, tp=tp, pp=pp, dp=dp, zero_stage=zero, layers=architecture.layers if architecture else None
    )
    ckpt = checkpoints.checkpoint_size(n_params, par, bytes_per_param=bytes_per_param, gpus_per_node=node.gpus_per_node)
    rate = goodput.default_failure_rate() if failure_rate is None else failure_rate
    mtti = goodput.job_mtti_s(ckpt.job_nodes, rate)
    ctx = sizing.Context(
        ckpt=ckpt,
        node_type=node_type,
        nodes=ckpt.job_nodes,
        gpus=par.ranks,
        mtti_s=mtti,
        step_time_s=step_time,
        max_overhead=max_overhead,
        goodput_target=goodput_target,
        keep=3,
        promote_every=10,
        archive_after_days=None,
        dataset_perf_tb=0.0,
    )
    scalable = tier_rec.model == "per_capacity"
    chosen_by = "declared"
    if tier_tb is None:
        if not scalable:
            if tier_rec.model != "per_node":
                raise errors.InvalidInputError(
                    f"give --tier-tb for tier '{tier}'", hint="its bandwidth does not follow from a stall target"
                )
            tier_tb = 0.0
        else:
            grid = sizing.capacity_grid(tier, 0.0)
            tier_tb = next((tb for tb in grid if sizing.evaluate(ctx, tier, tb, mode, interval_s).meets), grid[-1])
            chosen_by = "smallest capacity that meets the target"
    opt = sizing.evaluate(ctx, tier, tier_tb, mode, interval_s)
    options = sizing.search(ctx, tier, declared_tb=tier_tb, declared_interval_s=interval_s) if scalable else []
    best = sizing.cheapest(options)
    # Sensitivity: mean bandwidth, the planned low percentile, and the failure rate doubled.
    cfg = catalog.load_toml("checkpointing.toml")["restart"]
    fixed = float(cfg["detect_s"]) + float(cfg["reschedule_s"])
    derate = tier_rec.p10_derate
    rows = []
    if opt.blocking_s < float("inf") and opt.interval_s < float("inf"):
        save_mean = opt.blocking_s * derate if mode == "sync" else opt.blocking_s
        restart_mean = fixed + (opt.restart_s - fixed) * derate
        rows = [
            asdict(goodput.sensitivity_row("mean bandwidth", opt.interval_s, save_mean, restart_mean, mtti)),
            asdict(
                goodput.sensitivity_row(
                    "bandwidth at low percentile (planned)", opt.interval_s, opt.blocking_s, opt.restart_s, mtti
                )
            ),
            asdict(
                goodput.sensitivity_row("failure rate x2", opt.interval_s, opt.blocking_s, opt.restart_s, mtti / 2.0)
            ),
        ]
    out: dict[str, Any] = ckpt.to_dict()
    out.update(
        {
            "architecture": asdict(architecture) if architecture else None,
            "node_type": node_type,
            "tier": tier,
            "tier_tb": tier_tb,
            "tier_tb_chosen_by": chosen_by,
            "mode": mode,
            "write_gb_s": opt.write_gb_s,
            "write_gbps": units.gb_s_to_gbps(opt.write_gb_s),
            "expected_write_gb_s": opt.expected_write_gb_s,
            "read_gb_s": opt.read_gb_s,
            "blocking_s": opt.to_dict()["blocking_s"],
            "write_s": opt.to_dict()["write_s"],
            "interval_s": opt.to_dict()["interval_s"],
            "interval_auto": interval_s is None,
            "share_of_interval": opt.to_dict()["share_of_interval"],
            "blocking_steps": opt.blocking_steps,
            "restart_s": opt.to_dict()["restart_s"],
            "ettr": opt.ettr,
            "meets": opt.meets,
            "reasons": list(opt.reasons),
            "mttf_h": mtti / units.SECONDS_PER_HOUR,
            "failure_rate_per_1000_node_days": rate,
            "option": opt.to_dict(),
            "cheapest": best.to_dict() if best else None,
            "change": sizing_advice.describe_change(opt, best) if scalable else [],
            "sensitivity": rows,
        }
    )
    return out


def render(r: dict[str, Any]) -> None:
    """Tables for a ``compute()`` result."""
    from velyrix.cli import storage_views as views

    con = common.console()
    t = views._kv("Checkpoint")
    views.checkpoint_rows(t, r)
    views.option_rows(t, r["option"])
    if r["tier_tb_chosen_by"] != "declared":
        t.add_row("Capacity", f"{r['tier_tb']:,g} TB: {r['tier_tb_chosen_by']}")
    t.add_row("Meets target", "[green]yes[/]" if r["meets"] else "[red]no[/]: " + "; ".join(r["reasons"]))
    con.print(t)
    if r["change"] and r["cheapest"]:
        c = views._kv("Cheapest configuration (storage + lost GPU time)")
        for line in r["change"]:
            c.add_row("change", line)
        b = r["cheapest"]
        c.add_row(
            "result",
            f"blocks {views._s(b['blocking_s'])}, ETTR {b['ettr']:.2%}, storage "
            f"{views._usd(b['storage_usd_per_month'])}/month, total "
            f"{views._usd(b['total_usd_per_month'])}/month",
        )
        con.print(c)
    if r["sensitivity"]:
        con.print(views.sensitivity_table(r["sensitivity"], with_daly=False))
