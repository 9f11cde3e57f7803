"""Running checks: each under a hard timeout, a crash or a timeout reported as a failure.

A ``Check`` is a name, a tier, the action and level its failure asks for, and a function of a
``CheckContext`` that returns ``(passed, detail)``. ``run_checks`` runs them in order, each in a worker
thread joined with its timeout, and never lets one that could not run pass.
"""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from velyrix import errors
from velyrix.agent.collectors.base import Collector, NodeSample, Prober, ProbeSkipped
from velyrix.catalog import records
from velyrix.health import evidence as ev


@dataclass
class CheckContext:
    """What a check may use: the collector, the prober, the node type, and a clock for result times.

    ``sample()`` collects once per run and caches it (a quick check reads the node once)."""

    collector: Collector
    prober: Prober | None
    node_type: records.NodeType
    clock: Callable[[], float] = time.time
    short_test_s: float = 2.0
    _sample: NodeSample | None = field(default=None, repr=False)

    def sample(self) -> NodeSample:
        if self._sample is None:
            self._sample = self.collector.collect()
        return self._sample

    def need_prober(self) -> Prober:
        if self.prober is None:
            raise errors.InvalidInputError("this check needs a prober (GEMM / memory test) and none is configured")
        return self.prober


@dataclass(frozen=True)
class Check:
    """One health check. ``fn`` returns (passed, detail) or raises; ``gpu`` None for node-wide."""

    name: str
    tier: str
    fn: Callable[[CheckContext], tuple[bool, str]]
    action: str = "DRAIN_AFTER_JOB"
    level: str = "degraded"
    timeout_s: float = 30.0


def run_check(check: Check, ctx: CheckContext, timeout_s: float | None = None) -> ev.CheckResult:
    """Run ``check`` with a hard timeout. Returns status pass/fail, error/timeout when it could not run (a
    failure), or skipped (level warn, action IGNORE) when its prober was turned off by configuration."""
    limit = min(check.timeout_s, timeout_s) if timeout_s is not None else check.timeout_s
    start = time.monotonic()
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"check-{check.name}")
    future = pool.submit(check.fn, ctx)
    action, level = check.action, check.level
    try:
        passed, detail = future.result(timeout=max(limit, 0.0))
        status = "pass" if passed else "fail"
    except ProbeSkipped as exc:  # the operator turned active tests off: recorded, warn, never a pass or a drain
        status, detail, action, level = "skipped", str(exc), "IGNORE", "warn"
    except concurrent.futures.TimeoutError:
        status, detail = "timeout", f"no answer within {limit:g} s"
    except Exception as exc:  # a check that crashed could not run: a failure, never a pass
        msg = exc.message if isinstance(exc, errors.VelyrixError) else f"{type(exc).__name__}: {exc}"
        status, detail = "error", msg
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return ev.CheckResult(
        check.name, status, ctx.clock(), action=action, level=level, detail=detail, duration_s=time.monotonic() - start
    )


def run_checks(checks: list[Check], ctx: CheckContext, budget_s: float) -> list[ev.CheckResult]:
    """Run ``checks`` in order within ``budget_s`` seconds in total; checks left when the budget is spent
    are reported as ``timeout`` (they could not run, so they fail)."""
    deadline = time.monotonic() + budget_s
    out = []
    for check in checks:
        left = deadline - time.monotonic()
        if left <= 0:
            out.append(
                ev.CheckResult(
                    check.name,
                    "timeout",
                    ctx.clock(),
                    action=check.action,
                    level=check.level,
                    detail=f"suite budget of {budget_s:g} s spent before it started",
                )
            )
            continue
        out.append(run_check(check, ctx, left))
    return out
