"""Rich views of a training job's run on the twin (``velyrix sim workload``, ``velyrix report goodput``)."""

from __future__ import annotations

from typing import Any

from rich.table import Table


def _pct(x: float, digits: int = 2) -> str:
    return f"{100.0 * x:.{digits}f}%"


def _targets(body: dict[str, Any]) -> dict[str, Any]:
    return (body.get("plan") or {}).get("target") or {}


def _meets(body: dict[str, Any]) -> str:
    t, m = _targets(body), body["measured"]
    if not t:
        return "no targets declared"
    misses = []
    if m["checkpoint_stall_share"] > t.get("max_checkpoint_overhead", 1.0):
        misses.append(f"stall {_pct(m['checkpoint_stall_share'])} > {_pct(t['max_checkpoint_overhead'], 1)}")
    if t.get("goodput_target") and m["ettr"] < t["goodput_target"]:
        misses.append(f"ETTR {_pct(m['ettr'])} < {_pct(t['goodput_target'], 1)}")
    return "yes" if not misses else "no: " + "; ".join(misses)


def measured_table(body: dict[str, Any]) -> Table:
    m, c = body["measured"], body.get("comparison")
    t = Table(
        title=f"{body['training_job']} on the twin ({body['config']['days']:g} days, {body['config']['policy']} health)"
    )
    t.add_column("")
    t.add_column("measured", justify="right")
    t.add_column("plan", justify="right")
    plan_ettr = "-"
    if c:
        lo, hi = c["planned_run_interval"]
        plan_ettr = f"{_pct(c['planned_ettr'])} (99% of runs {_pct(lo)}-{_pct(hi)}; {c['planned_model']})"
    t.add_row("ETTR", _pct(m["ettr"]), plan_ettr)
    t.add_row(
        "checkpoint stall",
        _pct(m["checkpoint_stall_share"], 3),
        _pct(c["planned_checkpoint_stall_share"], 3) if c else "-",
    )
    t.add_row("data stall", _pct(m["data_stall_share"], 3), "-")
    t.add_row("interruptions", f"{m['job_interruptions']}", "")
    t.add_row("caught on precursors", f"{m['caught_before_failure']}", "")
    t.add_row("steps kept / lost", f"{m['steps_kept']:,} / {m['steps_lost']:,}", "")
    t.add_row("lost work", f"{m['lost_work_s'] / 3600:,.1f} h", "")
    t.add_row("restarts", f"{m['restarts']} ({m['restart_s_mean']:,.0f} s each)", "")
    t.add_row("saves", f"{m['saves_complete']} ({m['save_blocked_s_mean']:.1f} s blocking)", "")
    t.add_row("meets the targets", _meets(body), "")
    return t


def render_run(con: Any, body: dict[str, Any]) -> None:
    con.print(f"placed on: {body.get('placed_on', body.get('scheduler'))}", highlight=False)
    if body.get("changes"):
        con.print("changed: " + ", ".join(body["changes"]), highlight=False)
    con.print(measured_table(body))
    _explain(con, body)
    if body.get("what_if"):
        render_what_if(con, body["what_if"])
    files = body.get("files") or {}
    if files:
        con.print("written: " + ", ".join(files.values()), highlight=False)


def _inside(c: dict[str, Any]) -> str:
    if c["inside_run_interval"] is None:
        return f"the plan's per-run interval is for {c['plan_run_days']:g}-day runs"
    return ("inside" if c["inside_run_interval"] else "OUTSIDE") + " the plan's per-run interval"


def _explain(con: Any, body: dict[str, Any]) -> None:
    c = body.get("comparison")
    if not c:
        return
    con.print(
        f"difference: ETTR {c['ettr_difference_points']:+.2f} points, stall {c['stall_difference_points']:+.3f} points "
        f"({_inside(c)})",
        highlight=False,
    )
    causes = ", ".join(f"{k.replace('_', ' ')} {v:+.3f}" for k, v in c["by_cause_points"].items())
    con.print(f"by cause (points of wall time the twin lost less than planned): {causes}", highlight=False)
    for line in c["explanation"]:
        con.print(f"  - {line}", highlight=False)


def render_what_if(con: Any, w: dict[str, Any]) -> None:
    d = w["difference"]
    usd = d["usd_per_month"]
    con.print(f"what-if, same seed: {', '.join(w['changes'])}", highlight=False)
    con.print(
        f"  measured ETTR {_pct(w['measured']['ettr'])} ({d['ettr_points']:+.2f} points), "
        f"checkpoint stall {_pct(w['measured']['checkpoint_stall_share'], 3)} "
        f"({d['checkpoint_stall_points']:+.3f} points)",
        highlight=False,
    )
    con.print(
        f"  price: performance tier {usd['performance_tier']:+,.0f} $/month, lost GPU time "
        f"{usd['lost_gpu_time']:+,.0f} $/month, together {usd['total']:+,.0f} $/month",
        highlight=False,
    )
    planned = w.get("planned") or {}
    if planned:
        con.print(
            f"  the plan for it: ETTR {_pct(planned['planned_ettr'])}, "
            f"stall {_pct(planned['planned_checkpoint_stall_share'], 3)}",
            highlight=False,
        )


def render_report(con: Any, body: dict[str, Any]) -> None:
    render_run(con, body)
