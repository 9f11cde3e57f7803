"""Goodput: how much of a training run's wall time turns into saved progress.

Job mean time to interrupt from a node failure rate (Kokolis et al. 2024: ``M = 1 / (N_nodes * r_f)``),
restart cost R (detect + reschedule + reload), Young's and Daly's (higher-order) optimal checkpoint
intervals, the first-order effective training time ratio
``ETTR ~= 1 - delta/(T + delta) - (R + T/2)/M`` (REFERENCE §2), and a vectorized, seeded Monte Carlo
simulation of the run that checks the formula with a confidence interval, and that run's expected ETTR in closed
form (``goodput_expected``: what the simulation's mean converges to, without numpy). Pure: numpy only for the
simulation, no clock.
"""

from __future__ import annotations

import math
from dataclasses import asdict, field
from typing import Any

from velyrix import catalog, errors, units
from velyrix.frozen import frozen
from velyrix.planners import goodput_expected
from velyrix.planners.goodput_sim import RUN_INTERVAL_PCT as RUN_INTERVAL_PCT  # re-exported: goodput.X as before
from velyrix.planners.goodput_sim import Z_95 as Z_95
from velyrix.planners.goodput_sim import Simulation as Simulation
from velyrix.planners.goodput_sim import percentile_linear as percentile_linear
from velyrix.planners.goodput_sim import positive as _positive
from velyrix.planners.goodput_sim import simulate_ettr as simulate_ettr

METHODS = ("closed form", "monte carlo")
"""``GoodputPlan.ettr_method``: the expected ETTR alone, or with the seeded simulation (its CI and spread)."""


def default_failure_rate() -> float:
    """The catalog's default node failure rate, failures per 1,000 node-days."""
    return catalog.failure_rates().default


def job_mtti_s(nodes: int, failure_rate_per_1000_node_days: float) -> float:
    """Mean time to interrupt of a job on ``nodes`` nodes, in seconds: 1 / (nodes x rate).

    The rate is in failures per 1,000 node-days (Meta RSC-1: 6.50; RSC-2: 2.34). Below ~32 GPUs the
    model overestimates MTTF (Kokolis et al.).
    """
    if not isinstance(nodes, int) or nodes < 1:
        raise errors.InvalidInputError(f"node count must be a whole number >= 1, got {nodes!r}")
    rate = _positive(
        "node failure rate",
        failure_rate_per_1000_node_days,
        hint="failures per 1,000 node-days, e.g. 6.5 (Meta RSC-1) or 2.34 (RSC-2)",
    )
    per_day = nodes * rate / 1000.0
    return units.SECONDS_PER_DAY / per_day


def young_interval_s(save_s: float, mtti_s: float) -> float:
    """Young (1974): T* = sqrt(2 * delta * M), seconds of compute between saves."""
    _positive("save seconds", save_s)
    _positive("MTTI", mtti_s)
    return math.sqrt(2.0 * save_s * mtti_s)


def daly_interval_s(save_s: float, mtti_s: float) -> float:
    """Daly (2006) higher order: sqrt(2dM)[1 + sqrt(d/2M)/3 + (d/2M)/9] - d for d < 2M, else M."""
    _positive("save seconds", save_s)
    _positive("MTTI", mtti_s)
    if save_s >= 2.0 * mtti_s:
        return mtti_s
    x = save_s / (2.0 * mtti_s)
    return math.sqrt(2.0 * save_s * mtti_s) * (1.0 + math.sqrt(x) / 3.0 + x / 9.0) - save_s


def ettr_first_order(interval_s: float, save_s: float, restart_s: float, mtti_s: float) -> float:
    """First-order ETTR = 1 - delta/(T + delta) - (R + T/2)/M, clamped to [0, 1]."""
    _positive("checkpoint interval", interval_s)
    _positive("save seconds", save_s, allow_zero=True)
    _positive("restart seconds", restart_s, allow_zero=True)
    _positive("MTTI", mtti_s)
    return ettr_first_order_checked(interval_s, save_s, restart_s, mtti_s)


def ettr_first_order_checked(interval_s: float, save_s: float, restart_s: float, mtti_s: float) -> float:
    """``ettr_first_order`` for inputs the caller has already checked (finite; interval and MTTI > 0,
    save and restart >= 0): the sizing grid evaluates it thousands of times per cluster."""
    value = 1.0 - save_s / (interval_s + save_s) - (restart_s + interval_s / 2.0) / mtti_s
    return min(1.0, max(0.0, value))


def proactive_share() -> float:
    """Share of a job's interruptions that proactive health turns into planned drains at a checkpoint: the
    catalog's precursor causes (failure_rates.toml) times the catch share of checkpointing.toml."""
    rates = catalog.failure_rates()
    precursor = sum(c.share for c in rates.causes if c.precursor) / (sum(c.share for c in rates.causes) or 1.0)
    return precursor * float(catalog.load_toml("checkpointing.toml")["proactive"]["catch_share"])


def ettr_first_order_proactive(
    interval_s: float, save_s: float, restart_s: float, mtti_s: float, caught: float, detect_s: float
) -> float:
    """First-order ETTR when a share ``caught`` of the interruptions is drained at a checkpoint before it
    fails: those lose no work and skip detection. ``1 - d/(T+d) - (R - caught*detect)/M - (1-caught)(T/2)/M``."""
    value = 1.0 - save_s / (interval_s + save_s) - (restart_s - caught * detect_s) / mtti_s
    value -= (1.0 - caught) * interval_s / 2.0 / mtti_s
    return min(1.0, max(0.0, value))


@frozen
class Sensitivity:
    """One row of the sensitivity table: a changed assumption and what it does to the interval and ETTR."""

    case: str
    mtti_h: float
    save_s: float
    restart_s: float
    interval_daly_s: float
    ettr_at_interval: float
    ettr_at_daly: float


@frozen
class GoodputPlan:
    """Goodput of a job: MTTI, optimal intervals, ETTR by formula and by simulation, and lost value."""

    gpus: int
    nodes: int
    node_type: str
    failure_rate_per_1000_node_days: float
    mttf_h: float
    """Job mean time to interrupt (failure), hours."""
    save_s: float
    restart_s: float
    interval_s: float
    interval_young_s: float
    interval_daly_s: float
    interval_is_auto: bool
    ettr: float
    ettr_simulated: float | None
    """``None`` unless simulated (``ettr_method`` "monte carlo")."""
    ettr_simulated_ci: tuple[float, float] | None
    ettr_at_daly: float
    simulation: Simulation | None
    lost_gpu_hours_per_week: float
    lost_usd_per_week: float
    lost_usd_per_month: float
    gpu_hour_usd: float
    causes: list[dict[str, Any]] = field(default_factory=list)
    sensitivity: list[Sensitivity] = field(default_factory=list)
    proactive: dict[str, Any] = field(default_factory=dict)
    """ETTR with proactive health (``proactive_share`` of the interruptions caught and drained at a
    checkpoint): first order, expected, simulated, and where a single run lands. The figures above assume every
    failure interrupts the job (reactive), and sizing uses them."""
    ettr_expected: float = 0.0
    """Expected ETTR of the simulated run model in closed form (``goodput_expected``)."""
    ettr_method: str = "monte carlo"
    """One of ``METHODS``: "closed form" (no simulation: its fields are ``None``) or "monte carlo"."""

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        sim = self.simulation
        out["ettr_simulated_ci"] = list(self.ettr_simulated_ci) if self.ettr_simulated_ci else None
        if sim is not None:
            out["simulation"]["ettr_ci"] = list(sim.ettr_ci)
            out["simulation"]["ettr_run_interval"] = list(sim.ettr_run_interval)
        out["ettr_run_interval"] = list(sim.ettr_run_interval) if sim else None
        out["mtti_s"] = self.mttf_h * units.SECONDS_PER_HOUR
        return out


def cause_breakdown(mtti_s: float, top: int = 6) -> list[dict[str, Any]]:
    """Split the job's interruption rate by cause with the Llama 3 mix (catalog), largest first."""
    rates = catalog.failure_rates()
    out = []
    for cause in sorted(rates.causes, key=lambda c: -c.share)[:top]:
        out.append(
            {
                "cause": cause.name,
                "share": cause.share,
                "mtti_h": mtti_s / cause.share / units.SECONDS_PER_HOUR,
                "precursor": cause.precursor,
            }
        )
    return out


def plan_goodput(
    *,
    gpus: int,
    node_type: str = "hgx-h200-8g",
    failure_rate: float | None = None,
    save_s: float,
    restart_s: float,
    interval_s: float | None = None,
    low_percentile_derate: float = 0.8,
    horizon_days: float = 30.0,
    replicas: int = 2000,
    seed: int = 0,
    simulate: bool = True,
) -> GoodputPlan:
    """Goodput of a ``gpus``-GPU job on ``node_type`` nodes.

    Inputs: failure rate per 1,000 node-days (catalog default when ``None``), blocking seconds per
    save, restart seconds (detect + reschedule + reload), interval in seconds between saves (``None``
    = Daly's optimum). ``low_percentile_derate`` scales bandwidth for the sensitivity row (save and
    reload take 1/derate as long). Returns a ``GoodputPlan`` with the formula ETTR, a simulated ETTR
    with its 95% interval over ``replicas`` runs of ``horizon_days`` (``simulate=False``: none, only the
    closed-form expected ETTR, which needs no numpy), and lost GPU-hours and USD.
    """
    if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1:
        raise errors.InvalidInputError(f"GPU count must be a whole number >= 1, got {gpus!r}", hint="e.g. 512")
    per_node = catalog.node_type(node_type).gpus_per_node
    nodes = -(-gpus // per_node)
    rate = default_failure_rate() if failure_rate is None else failure_rate
    mtti = job_mtti_s(nodes, rate)
    _positive("save seconds", save_s, hint="blocking seconds per checkpoint save")
    _positive("restart seconds", restart_s, allow_zero=True)
    _positive("horizon", horizon_days)
    if not 0 < low_percentile_derate <= 1:
        raise errors.InvalidInputError(f"derate must be in (0, 1], got {low_percentile_derate}")
    young, daly = young_interval_s(save_s, mtti), daly_interval_s(save_s, mtti)
    auto = interval_s is None
    interval = daly if interval_s is None else _positive("checkpoint interval", interval_s, hint="seconds, or auto")
    ettr = ettr_first_order(interval, save_s, restart_s, mtti)
    horizon_s = horizon_days * units.SECONDS_PER_DAY
    sim = (
        simulate_ettr(interval, save_s, restart_s, mtti, horizon_s=horizon_s, replicas=replicas, seed=seed)
        if simulate
        else None
    )
    price = catalog.gpu_hour_price_usd(node_type)
    lost_h = gpus * 168.0 * (1.0 - ettr)
    proactive = _proactive(interval, save_s, restart_s, mtti, horizon_days, replicas, seed, simulate)

    rows = sensitivity(interval, save_s, restart_s, mtti, low_percentile_derate)
    return GoodputPlan(
        gpus=gpus,
        nodes=nodes,
        node_type=node_type,
        failure_rate_per_1000_node_days=rate,
        mttf_h=mtti / units.SECONDS_PER_HOUR,
        save_s=save_s,
        restart_s=restart_s,
        interval_s=interval,
        interval_young_s=young,
        interval_daly_s=daly,
        interval_is_auto=auto,
        ettr=ettr,
        ettr_simulated=sim.ettr_mean if sim else None,
        ettr_simulated_ci=sim.ettr_ci if sim else None,
        ettr_at_daly=ettr_first_order(daly, save_s, restart_s, mtti),
        simulation=sim,
        lost_gpu_hours_per_week=lost_h,
        lost_usd_per_week=lost_h * price,
        lost_usd_per_month=lost_h * price * units.HOURS_PER_MONTH / 168.0,
        gpu_hour_usd=price,
        causes=cause_breakdown(mtti),
        sensitivity=rows,
        proactive=proactive,
        ettr_expected=goodput_expected.expected_ettr(interval, save_s, restart_s, mtti, horizon_s=horizon_s),
        ettr_method=METHODS[1] if simulate else METHODS[0],
    )


def _proactive(
    interval: float,
    save_s: float,
    restart_s: float,
    mtti: float,
    horizon_days: float,
    replicas: int,
    seed: int,
    simulate: bool,
) -> dict[str, Any]:
    caught = proactive_share()
    detect = min(restart_s, float(catalog.load_toml("checkpointing.toml")["restart"]["detect_s"]))
    horizon_s, planned_restart_s = horizon_days * units.SECONDS_PER_DAY, restart_s - detect
    sim = None
    if simulate:
        sim = simulate_ettr(
            interval,
            save_s,
            restart_s,
            mtti,
            horizon_s=horizon_s,
            replicas=replicas,
            seed=seed,
            planned_share=caught,
            planned_restart_s=planned_restart_s,
        )
    expected = goodput_expected.expected_ettr(
        interval,
        save_s,
        restart_s,
        mtti,
        horizon_s=horizon_s,
        planned_share=caught,
        planned_restart_s=planned_restart_s,
    )
    return {
        "caught_share": caught,
        "ettr": ettr_first_order_proactive(interval, save_s, restart_s, mtti, caught, detect),
        "ettr_simulated": sim.ettr_mean if sim else None,
        "ettr_simulated_ci": list(sim.ettr_ci) if sim else None,
        "ettr_run_interval": list(sim.ettr_run_interval) if sim else None,
        "ettr_expected": expected,
    }


def sensitivity(
    interval_s: float, save_s: float, restart_s: float, mtti_s: float, low_percentile_derate: float = 1.0
) -> list[Sensitivity]:
    """Rows: the baseline, the failure rate doubled, and (when ``low_percentile_derate`` < 1) save and
    reload at the low-percentile bandwidth (1/derate as long), each with Daly's interval and the ETTR."""

    rows = [
        sensitivity_row("baseline", interval_s, save_s, restart_s, mtti_s),
        sensitivity_row("failure rate x2", interval_s, save_s, restart_s, mtti_s / 2.0),
    ]
    if low_percentile_derate < 1.0:  # 1.0: the inputs are already low-percentile figures
        rows.append(
            sensitivity_row(
                "bandwidth at low percentile",
                interval_s,
                save_s / low_percentile_derate,
                restart_s / low_percentile_derate,
                mtti_s,
            )
        )
    return rows


def sensitivity_row(case: str, interval_s: float, save_s: float, restart_s: float, mtti_s: float) -> Sensitivity:
    """One sensitivity row: Daly's interval and the ETTR at ``interval_s`` and at Daly's, for these inputs."""
    t_daly = daly_interval_s(save_s, mtti_s)
    return Sensitivity(
        case=case,
        mtti_h=mtti_s / units.SECONDS_PER_HOUR,
        save_s=save_s,
        restart_s=restart_s,
        interval_daly_s=t_daly,
        ettr_at_interval=ettr_first_order(interval_s, save_s, restart_s, mtti_s),
        ettr_at_daly=ettr_first_order(t_daly, save_s, restart_s, mtti_s),
    )


def ettr_curve(save_s: float, restart_s: float, mtti_s: float, intervals_s: list[float]) -> list[float]:
    """First-order ETTR at each interval (for charts and tables)."""
    return [ettr_first_order(t, save_s, restart_s, mtti_s) for t in intervals_s]
