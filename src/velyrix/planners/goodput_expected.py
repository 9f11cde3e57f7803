"""The expected ETTR of the run that ``goodput.simulate_ettr`` simulates, in closed form (pure Python, no numpy).

The model is the simulation's: interruptions arrive as a Poisson process of mean gap M (rate l = 1/M) over a
horizon of H wall seconds; a run computes T seconds and saves for d (cycle c = T + d); after an interruption it
restarts for R (R' after a planned drain, which a share p of the interruptions is) and resumes from the last
completed save; a segment ended by the horizon or by a planned drain keeps its in-progress compute.

By the Mecke formula of Poisson processes, the expected useful compute is that of the first segment plus the
rate-weighted integral, over the start times s of later segments, of the expected useful compute of a segment
that starts at s (memorylessness: its length is a fresh exponential, cut at H - s):

    E[U] = F_0(H) + l * integral_0^H [(1 - p) F_R(h) + p F_R'(h)] dh,

    F_r(h) = exp(-l r) [(1 - p) Q_phi(h - r) + p Q_W(h - r)] + exp(-l h) W(h - r)    (0 when h <= r)

where W(y) is the useful compute of y seconds of uninterrupted computing (completed cycles plus the cut one),
phi(y) = T floor(y / c) that of completed saves only, and Q_B(y) = integral_0^y l exp(-l x) B(x) dx. Every
integral is a geometric sum over the cycles, summed in closed form, so the cost does not grow with H / c.
ETTR = E[U] / H. ``tests/planners/test_goodput_expected.py`` checks it against a direct numerical integration
and against the simulation (inside its 95% confidence interval).
"""

from __future__ import annotations

import math


class _Cycles:
    """Per-run constants: the rate ``lam`` (1/s), interval ``t`` and cycle ``c`` (s), ``q = exp(-lam c)``, and
    ``phase_share`` = (1 - exp(-lam t)) / lam, the integral of exp(-lam u) over one compute phase from u = 0. A
    plain class: a dataclass costs ~1 ms to create at import, on the path of ``velyrix plan``."""

    __slots__ = ("lam", "t", "c", "q", "one_minus_q", "phase_share")

    def __init__(self, *, lam: float, t: float, c: float, q: float, one_minus_q: float, phase_share: float) -> None:
        self.lam, self.t, self.c, self.q, self.one_minus_q, self.phase_share = lam, t, c, q, one_minus_q, phase_share

    def z0(self, n: int) -> float:
        """sum_{j=0}^{n-1} q^j."""
        if n <= 0:
            return 0.0
        return -math.expm1(-self.lam * self.c * n) / self.one_minus_q

    def z1(self, n: int) -> float:
        """sum_{j=0}^{n-1} j q^j."""
        if n <= 1:
            return 0.0
        if n <= 32 or self.one_minus_q * n < 1e-3:  # few terms, or q so close to 1 that the closed form cancels
            return _z1_series(self.q, n)
        # sum_{j=1}^{n-1} j q^j = [q (1 - q^(n-1)) / (1 - q) - (n - 1) q^n] / (1 - q); relative error 2 eps/((1-q) n)
        return (self.q * self.z0(n - 1) - (n - 1) * self.q**n) / self.one_minus_q

    def w(self, y: float) -> float:
        """W(y): useful compute of ``y`` seconds of uninterrupted computing, seconds."""
        if y <= 0.0:
            return 0.0
        n = math.floor(y / self.c)
        return n * self.t + min(y - n * self.c, self.t)

    def q_phi(self, y: float) -> float:
        """Q_phi(y) = T sum_{j=1}^{J} (q^j - exp(-lam y)), J = floor(y / c)."""
        if y <= 0.0:
            return 0.0
        n = math.floor(y / self.c)
        return self.t * (self.q * self.z0(n) - n * math.exp(-self.lam * y))

    def omega(self, y: float) -> float:
        """integral_0^y exp(-lam u) du over the compute phases (not the saves) of [0, y]."""
        if y <= 0.0:
            return 0.0
        n = math.floor(y / self.c)
        tau = min(y - n * self.c, self.t)
        return self.phase_share * self.z0(n) + self.q**n * -math.expm1(-self.lam * tau) / self.lam

    def q_w(self, y: float) -> float:
        """Q_W(y) = Omega(y) - exp(-lam y) W(y)."""
        return self.omega(y) - math.exp(-self.lam * y) * self.w(y)

    def int_q_phi(self, y: float) -> float:
        """integral_0^y Q_phi = T [y s0 - c s1 - s0 / lam + J exp(-lam y) / lam], sums over j = 1..J."""
        if y <= 0.0:
            return 0.0
        n = math.floor(y / self.c)
        s0 = self.q * self.z0(n)
        s1 = self.z1(n + 1)
        lam = self.lam
        return self.t * (y * s0 - self.c * s1 - (s0 - n * math.exp(-lam * y)) / lam)

    def int_omega(self, y: float) -> float:
        """integral_0^y Omega = sum over the compute phases [a, b] of [0, y] of integral_a^b exp(-lam u)(y - u) du."""
        if y <= 0.0:
            return 0.0
        n = math.floor(y / self.c)
        lam, t = self.lam, self.t
        full = _phase(lam, t)  # a whole phase at distance D = y - jc: q^j (full + D * slope)
        slope = -math.expm1(-lam * t) / lam
        whole = full * self.z0(n) + slope * (y * self.z0(n) - self.c * self.z1(n))
        tau = min(y - n * self.c, t)
        cut = self.q**n * (_phase(lam, tau) + (y - n * self.c) * -math.expm1(-lam * tau) / lam)
        return whole + cut


def _z1_series(q: float, n: int) -> float:
    total, power = 0.0, 1.0
    for j in range(n):
        total += j * power
        power *= q
    return total


def _phase(lam: float, tau: float) -> float:
    """Minus integral_0^tau u exp(-lam u) du = (exp(-lam tau)(1 + lam tau) - 1) / lam^2 (by its series where the
    closed form would cancel)."""
    k = lam * tau
    if k < 1e-4:
        return -(tau * tau) * (0.5 - k / 3.0 + k * k / 8.0)
    return (math.exp(-k) * (1.0 + k) - 1.0) / (lam * lam)


def _segments_integral(cyc: _Cycles, restart_s: float, horizon_s: float, p: float) -> float:
    """integral_0^H F_r(h) dh for restart ``restart_s``: exp(-lam r)[(1-p) IQ_phi + p IntOmega + (1-p) Q_W/lam]."""
    y = horizon_s - restart_s
    if y <= 0.0:
        return 0.0
    body = (1.0 - p) * (cyc.int_q_phi(y) + cyc.q_w(y) / cyc.lam) + p * cyc.int_omega(y)
    return math.exp(-cyc.lam * restart_s) * body


def expected_ettr(
    interval_s: float,
    save_s: float,
    restart_s: float,
    mtti_s: float,
    *,
    horizon_s: float,
    planned_share: float = 0.0,
    planned_restart_s: float | None = None,
) -> float:
    """Expected ETTR (useful compute / wall time) of the run ``goodput.simulate_ettr`` simulates, with the same
    inputs (seconds; ``planned_share`` in [0, 1]; callers check them as ``simulate_ettr`` does): the value its
    mean converges to as the replicas grow."""
    lam = 1.0 / mtti_s
    c = interval_s + save_s
    cyc = _Cycles(
        lam=lam,
        t=interval_s,
        c=c,
        q=math.exp(-lam * c),
        one_minus_q=-math.expm1(-lam * c),
        phase_share=-math.expm1(-lam * interval_s) / lam,
    )
    p = planned_share
    first = (1.0 - p) * cyc.q_phi(horizon_s) + p * cyc.q_w(horizon_s) + math.exp(-lam * horizon_s) * cyc.w(horizon_s)
    later = (1.0 - p) * _segments_integral(cyc, restart_s, horizon_s, p)
    if p > 0.0:
        r_planned = restart_s if planned_restart_s is None else planned_restart_s
        later += p * _segments_integral(cyc, r_planned, horizon_s, p)
    return (first + lam * later) / horizon_s
