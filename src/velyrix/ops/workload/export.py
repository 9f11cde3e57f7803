"""A run of ``velyrix sim workload`` as files: JSON, an SVG chart, and Prometheus metrics with the job's label.

- ``to_json``: everything but the in-memory run (figures, comparison, plan, timeline).
- ``write_chart``: the job's useful work against wall time (a step down at each lost piece of work, a flat
  stretch at each restart), failures and drains marked, and the measured wall-time split beside the plan's.
- ``metrics_text``: the figures in the Prometheus text format (for node_exporter's textfile collector or
  any scrape), labelled ``training_job`` and ``cluster``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from velyrix import errors


def to_json(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` without its ``run`` object (JSON-able)."""
    return {k: v for k, v in result.items() if k != "run"}


def write_json(result: dict[str, Any], path: Path) -> Path:
    _write(path, json.dumps(to_json(result), indent=1, sort_keys=True))
    return path


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text)
        tmp.replace(path)  # never a half-written file
    except OSError as exc:
        raise errors.InvalidInputError(
            f"cannot write {path}: {exc.strerror}", hint="give a writable directory with --out"
        ) from None


def _work_curve(result: dict[str, Any]) -> tuple[list[float], list[float]]:
    """(wall days, useful work days) at each stop (before and after its lost work) and each restart's end;
    between them work grows with training."""
    xs, ys = [0.0], [0.0]
    for e in sorted(result["timeline"]["events"], key=lambda e: e["t_s"]):
        if e["kind"] == "stop":
            xs += [e["t_s"] / 86400.0] * 2
            ys += [(e["work_s"] + e["lost_work_s"]) / 86400.0, e["work_s"] / 86400.0]
        elif e["kind"] == "restart":
            xs.append((e["t_s"] + e["s"]) / 86400.0)
            ys.append(e["work_s"] / 86400.0)
    xs.append(result["measured"]["horizon_s"] / 86400.0)
    ys.append(result["measured"]["useful_work_s"] / 86400.0)
    return xs, ys


def write_chart(result: dict[str, Any], path: Path) -> Path:
    """SVG (or PNG, by ``path``'s suffix) of the run: useful work against wall time, and the wall-time split."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    m = result["measured"]
    fig, (ax, bars) = plt.subplots(1, 2, figsize=(11, 4.2), dpi=110, gridspec_kw={"width_ratios": [2.2, 1]})
    xs, ys = _work_curve(result)
    ax.plot(xs, ys, color="tab:blue", label="useful work (days)")
    ax.plot([0, xs[-1]], [0, xs[-1]], color="grey", linestyle=":", label="wall time")
    for f in result["timeline"]["failures"]:
        if f["in_job"] and f["kind"] == "fault":
            ax.axvline(f["t_s"] / 86400.0, color="tab:red", alpha=0.35, linewidth=0.8)
    for d in result["timeline"]["drains"]:
        if d["in_job"] and d["precursor"]:
            ax.axvline(d["t_s"] / 86400.0, color="tab:green", alpha=0.5, linewidth=0.8)
    ax.set_xlabel("wall time (days); red: failures, green: drained on a precursor")
    ax.set_ylabel("useful work (days)")
    ax.set_title(f"{result['training_job']}: ETTR {m['ettr']:.2%}, checkpoint stall {m['checkpoint_stall_share']:.2%}")
    ax.legend(loc="upper left")
    labels = ["checkpoint stall", "restart", "lost work"]
    ws = m["wall_shares"]
    measured = [
        ws["checkpoint_stall"],
        ws["restart"] + ws["spare_wait"],
        ws["lost_work"] + ws["slowdown"] + ws["data_stall"],
    ]
    pos = range(len(labels))
    bars.bar([p - 0.2 for p in pos], [100 * v for v in measured], width=0.4, label="measured")
    if "comparison" in result:
        from velyrix.ops.workload.measure import planned_shares

        plan = planned_shares(result["plan"]["goodput"], result["config"]["policy"])
        bars.bar(
            [p + 0.2 for p in pos],
            [100 * plan[k] for k in ("checkpoint_stall", "restart", "lost_work")],
            width=0.4,
            label="plan",
        )
    bars.set_xticks(list(pos), labels, rotation=15)
    bars.set_ylabel("% of wall time")
    bars.legend()
    fig.tight_layout()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, format="png" if path.suffix == ".png" else "svg")
    except OSError as exc:
        raise errors.InvalidInputError(f"cannot write the chart to {path}: {exc.strerror}") from None
    finally:
        plt.close(fig)
    return path


METRICS = (
    ("velyrix_training_ettr_ratio", "Measured effective training time ratio (useful work / wall time).", "ettr"),
    (
        "velyrix_training_checkpoint_stall_ratio",
        "Share of wall time checkpoint saves blocked training.",
        "checkpoint_stall_share",
    ),
    ("velyrix_training_data_stall_ratio", "Share of wall time the tier could not feed the job.", "data_stall_share"),
    ("velyrix_training_lost_work_seconds", "Work lost at interruptions (seconds of training).", "lost_work_s"),
    (
        "velyrix_training_steps_kept",
        "Training steps in the run's result (complete checkpoints, then the end).",
        "steps_kept",
    ),
    ("velyrix_training_steps_lost", "Training steps done and lost at interruptions.", "steps_lost"),
    ("velyrix_training_interruptions", "Interruptions of the job by failures.", "job_interruptions"),
    ("velyrix_training_restarts", "Restarts of the job from its last complete checkpoint.", "restarts"),
    ("velyrix_training_checkpoints", "Complete checkpoints.", "saves_complete"),
    ("velyrix_training_caught_before_failure", "Failing nodes drained on their precursors.", "caught_before_failure"),
    ("velyrix_training_wall_seconds", "Simulated wall time of the run (seconds).", "horizon_s"),
)


def metrics_text(result: dict[str, Any]) -> str:
    """The run's figures as Prometheus text exposition, labelled with the job and its cluster; the plan's
    prediction beside them (``velyrix_training_planned_*``) when there is one."""
    from prometheus_client import CollectorRegistry, Gauge, generate_latest

    reg = CollectorRegistry()
    labels = {"training_job": result["training_job"], "cluster": result["cluster"]}
    m = result["measured"]
    for name, doc, key in METRICS:
        Gauge(name, doc, list(labels), registry=reg).labels(**labels).set(float(m[key]))
    if "comparison" in result:
        c = result["comparison"]
        Gauge("velyrix_training_planned_ettr_ratio", "The plan's first-order ETTR.", list(labels), registry=reg).labels(
            **labels
        ).set(c["planned_ettr"])
        Gauge(
            "velyrix_training_planned_checkpoint_stall_ratio",
            "The plan's checkpoint stall share.",
            list(labels),
            registry=reg,
        ).labels(**labels).set(c["planned_checkpoint_stall_share"])
    return generate_latest(reg).decode()


def write_all(result: dict[str, Any], out: Path) -> dict[str, str]:
    """run.json, goodput.svg and metrics.prom in ``out``; their paths."""
    paths = {
        "json": write_json(result, out / "run.json"),
        "chart": write_chart(result, out / "goodput.svg"),
    }
    metrics = out / "metrics.prom"
    _write(metrics, metrics_text(result))
    paths["metrics"] = metrics
    return {k: str(v) for k, v in paths.items()}
