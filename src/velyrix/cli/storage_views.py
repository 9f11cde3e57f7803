"""Rendering of checkpoint, storage and goodput results, shared by ``velyrix plan``, ``velyrix checkpoint`` and
``velyrix goodput``. Takes the ``to_dict()`` data; builds ``cli.tables.Table``s, which rich or the plain
renderer prints."""

from __future__ import annotations

from typing import Any

from velyrix.cli.tables import Table


def _table(title: str, *columns: tuple[str, str]) -> Table:
    table = Table(title=title, title_justify="left", title_style="bold")
    for name, justify in columns:
        table.add_column(name, justify=justify)
    return table


def _kv(title: str) -> Table:
    table = Table(title=title, show_header=False, title_justify="left", title_style="bold")
    table.add_column("key", style="cyan")
    table.add_column("value")
    return table


def _s(x: float | None) -> str:
    if x is None:
        return "n/a"
    if x >= 3600:
        return f"{x:,.0f} s ({x / 3600:.1f} h)"
    return f"{x:,.1f} s"


def _rate(gb_s: float) -> str:
    return f"{gb_s:,.1f} GB/s" if abs(gb_s) >= 1 else f"{gb_s * 1000:,.1f} MB/s"


def _usd(x: float) -> str:
    return f"${x:,.0f}"


def checkpoint_rows(table: Any, ckpt: dict[str, Any]) -> None:
    """Size rows (GB and GiB) of a ``CheckpointSize.to_dict()``."""
    table.add_row("Model", f"{ckpt['params'] / 1e9:,.1f} B parameters x {ckpt['bytes_per_param']:g} bytes")
    table.add_row(
        "Parallelism",
        f"TP {ckpt['tp']} x PP {ckpt['pp']} x DP {ckpt['dp']} = {ckpt['ranks']:,} ranks "
        f"on {ckpt['job_nodes']:,} nodes, ZeRO {ckpt['zero_stage']}",
    )
    table.add_row("Checkpoint", f"{ckpt['size_gb']:,.1f} GB ({ckpt['size_gib']:,.1f} GiB)")
    table.add_row("Busiest rank", f"{ckpt['per_rank_gb']:,.2f} GB ({ckpt['per_rank_gib']:,.2f} GiB)")
    table.add_row("Busiest node", f"{ckpt['per_node_gb']:,.1f} GB ({ckpt['per_node_gib']:,.1f} GiB)")


def option_rows(table: Any, opt: dict[str, Any], step_time: bool = True) -> None:
    """Rows of one sizing option (``sizing.Option.to_dict()``)."""
    table.add_row(
        "Tier",
        f"{opt['tier']} {opt['capacity_tb']:,g} TB: writes {opt['write_gb_s']:,.0f} GB/s (low "
        f"percentile; mean {opt['expected_write_gb_s']:,.0f}), reads {opt['read_gb_s']:,.0f} GB/s",
    )
    save = f"{opt['mode']}: blocks {_s(opt['blocking_s'])} per save"
    if opt["mode"] == "async":
        save += (
            f" (then drains in {_s(opt['write_s'])}; stages {opt['host_ram_needed_gb']:,.0f} GB of "
            f"{opt['host_ram_free_gb']:,.0f} GB free host RAM per node)"
        )
    table.add_row("Save", save)
    share = opt["share_of_interval"]
    table.add_row(
        "Interval",
        f"{_s(opt['interval_s'])}{' (auto: Daly)' if opt['interval_auto'] else ''}; saves take {share:.2%} of wall time"
        if share is not None
        else "n/a",
    )
    if step_time and opt.get("blocking_steps") is not None:
        table.add_row("Per save", f"{opt['blocking_steps']:,.2f} steps of training time")
    table.add_row("Restart", f"{_s(opt['restart_s'])} (detect + reschedule + reload)")
    table.add_row("ETTR", f"{opt['ettr']:.2%} (first order)")
    table.add_row(
        "Price",
        f"storage {_usd(opt['storage_usd_per_month'])}/month (this tier + retention); lost GPU time "
        f"{_usd(opt['lost_usd_per_month'])}/month",
    )


def render_storage_plan(con: Any, sp: dict[str, Any]) -> None:
    """The ``storage_plan`` section of ``velyrix plan``."""
    d = sp["declared"]
    t = _kv("Checkpoints and storage")
    checkpoint_rows(t, sp["checkpoint"])
    option_rows(t, d)
    target = sp["target"]
    goal = f"saves <= {target['max_checkpoint_overhead']:.1%} of wall time"
    if target.get("goodput_target") is not None:
        goal += f", ETTR >= {target['goodput_target']:.1%}"
    verdict = "[green]yes[/]" if sp["meets_target"] else "[red]no[/]: " + "; ".join(d["reasons"])
    t.add_row("Target", goal)
    t.add_row("Meets target", verdict)
    con.print(t)
    best = sp.get("cheapest")
    if sp["change"]:
        head = "Cheapest change that meets the target" if not sp["meets_target"] else "Cheaper configuration"
        c = _kv(head)
        for line in sp["change"]:
            c.add_row("change", line)
        if best:
            c.add_row(
                "result",
                f"blocks {_s(best['blocking_s'])} per save, {best['share_of_interval']:.2%} of "
                f"wall time, ETTR {best['ettr']:.2%}",
            )
            c.add_row(
                "price",
                f"storage {_usd(best['storage_usd_per_month'])}/month (now "
                f"{_usd(d['storage_usd_per_month'])}); storage + lost GPU time "
                f"{_usd(best['total_usd_per_month'])}/month (now {_usd(d['total_usd_per_month'])})",
            )
        con.print(c)
    r = sp["retention"]
    ret = _kv("Retention")
    with_data = " + dataset" if sp.get("data_feed") and sp["data_feed"]["tier"] == "parallel_fs" else ""
    ret.add_row(
        "Performance tier", f"{r['perf_tb']:,.1f} TB ({r['keep_on_perf']} checkpoints + 1 in flight{with_data})"
    )
    ret.add_row(
        "Object",
        f"{r['object_tb']:,.0f} TB (every {r['promote_every']}th save, "
        f"{r['promoted_per_day']:,.1f}/day) {_usd(r['object_usd_per_month'])}/month",
    )
    if r["archive_after_days"] is not None:
        ret.add_row(
            "Archive",
            f"+{r['archive_tb_per_month']:,.0f} TB/month after {r['archive_after_days']:g} days "
            f"({_usd(r['archive_usd_per_month'])} the first month)",
        )
    rs = sp.get("restore") or {}
    restore = [
        f"{tier} {_s(rs[key])}"
        for tier, key in (("performance tier", "parallel_fs_s"), ("object", "object_s"))
        if rs.get(key) is not None
    ]
    if rs.get("archive_h"):
        restore.append(f"archive {rs['archive_h'][0]:,.1f}-{rs['archive_h'][1]:,.1f} h")
    if restore:
        ret.add_row("Restore one", "; ".join(restore))
    con.print(ret)
    feed = sp.get("data_feed")
    if feed:
        f = _kv("Data feed")
        f.add_row(
            "Dataset",
            f"{feed['dataset_tb']:,g} TB, {feed['read_pattern']} reads -> {feed['tier']}"
            f"{' (fits local NVMe)' if feed['fits_local_nvme'] else ''}",
        )
        if feed["required_read_gb_s"] is not None:
            ok = "[green]meets[/]" if feed["meets_au_target"] else "[red]short[/]"
            f.add_row(
                "Needs",
                f"{_rate(feed['required_read_gb_s'])} for AU {feed['au_target']:.0%} "
                f"({_rate(feed['per_gpu_read_gb_s'])} per GPU): {ok}",
            )
            f.add_row(
                "Tier reads",
                f"{_rate(feed['tier_read_p10_gb_s'])} (low percentile); headroom during "
                f"checkpoints {_rate(feed['headroom_during_checkpoint_gb_s'])}",
            )
        for note in feed["notes"]:
            f.add_row("note", note)
        con.print(f)
    for w in sp.get("warnings", []):
        con.print(f"[yellow]warning:[/] {w}")


def render_goodput(con: Any, gp: dict[str, Any]) -> None:
    """The ``goodput`` section of ``velyrix plan`` and the output of ``velyrix goodput``."""
    t = _kv("Goodput")
    t.add_row(
        "Job MTTI",
        f"{gp['mttf_h']:,.1f} h ({gp['nodes']:,} nodes at "
        f"{gp['failure_rate_per_1000_node_days']:g} failures per 1,000 node-days)",
    )
    t.add_row("Save / restart", f"{_s(gp['save_s'])} blocking / {_s(gp['restart_s'])}")
    t.add_row(
        "Interval",
        f"{_s(gp['interval_s'])}{' (auto)' if gp['interval_is_auto'] else ''}; "
        f"Young {_s(gp['interval_young_s'])}, Daly {_s(gp['interval_daly_s'])}",
    )
    if gp.get("simulation"):
        _simulated_rows(t, gp)
    else:  # ettr_method "closed form": ``velyrix plan`` without --simulate
        t.add_row(
            "ETTR",
            f"{gp['ettr']:.2%} first order; expected {gp['ettr_expected']:.2%} (closed form of the simulated run; "
            "--simulate for the Monte Carlo and where one run lands)",
        )
        pro = gp.get("proactive") or {}
        if pro:
            t.add_row(
                "Proactive health",
                f"{pro['ettr']:.2%} first order, expected {pro['ettr_expected']:.2%} (closed form): "
                f"{pro['caught_share']:.0%} of interruptions caught on precursors and drained at a checkpoint",
            )
    t.add_row(
        "Lost",
        f"{gp['lost_gpu_hours_per_week']:,.0f} GPU-hours/week = {_usd(gp['lost_usd_per_week'])}/week "
        f"({_usd(gp['lost_usd_per_month'])}/month at ${gp['gpu_hour_usd']:.2f}/GPU-h)",
    )
    con.print(t)
    s = sensitivity_table(gp["sensitivity"], with_daly=True)
    con.print(s)
    causes = _table("Interruptions by cause (Llama 3 mix)", ("Cause", "left"), ("Share", "right"), ("MTTI", "right"))
    for c in gp["causes"]:
        causes.add_row(c["cause"], f"{c['share']:.1%}", f"{c['mtti_h']:,.0f} h")
    con.print(causes)


def _simulated_rows(t: Any, gp: dict[str, Any]) -> None:
    """The ETTR rows of a goodput section with its seeded Monte Carlo (``ettr_method`` "monte carlo")."""
    lo, hi = gp["ettr_simulated_ci"]
    t.add_row(
        "ETTR",
        f"{gp['ettr']:.2%} first order; simulated {gp['ettr_simulated']:.2%} "
        f"(95% CI {lo:.2%}-{hi:.2%}, {gp['simulation']['replicas']:,} runs of "
        f"{gp['simulation']['horizon_s'] / 86400:g} days)",
    )
    if "ettr_run_interval" in gp:
        run_lo, run_hi = gp["ettr_run_interval"]
        t.add_row(
            "One run", f"99% of single {gp['simulation']['horizon_s'] / 86400:g}-day runs: {run_lo:.2%}-{run_hi:.2%}"
        )
    pro = gp.get("proactive") or {}
    if pro:
        plo, phi = pro["ettr_run_interval"]
        t.add_row(
            "Proactive health",
            f"{pro['ettr']:.2%} first order, simulated {pro['ettr_simulated']:.2%} (one run {plo:.2%}-{phi:.2%}): "
            f"{pro['caught_share']:.0%} of interruptions caught on precursors and drained at a checkpoint",
        )


def sensitivity_table(rows: list[dict[str, Any]], with_daly: bool) -> Any:
    """The sensitivity rows (``goodput.Sensitivity``) as a compact table."""
    cols = [
        ("Case", "left"),
        ("MTTI h", "right"),
        ("Save s", "right"),
        ("Restart s", "right"),
        ("Daly s", "right"),
        ("ETTR", "right"),
    ]
    if with_daly:
        cols.append(("ETTR at Daly", "right"))
    t = _table("Sensitivity", *cols)
    for row in rows:
        cells = [
            row["case"],
            f"{row['mtti_h']:,.1f}",
            f"{row['save_s']:,.1f}",
            f"{row['restart_s']:,.0f}",
            f"{row['interval_daly_s']:,.0f}",
            f"{row['ettr_at_interval']:.2%}",
        ]
        if with_daly:
            cells.append(f"{row['ettr_at_daly']:.2%}")
        t.add_row(*cells)
    return t


def render_plan_goodput(con: Any, gp: dict[str, Any]) -> None:
    render_goodput(con, gp)


RENDERERS = {"storage_plan": render_storage_plan, "goodput": render_plan_goodput}
"""Section renderers for ``cli.plan.SECTION_RENDERERS``."""
