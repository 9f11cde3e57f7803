"""``velyrix agent check --quick|--deep|--acceptance`` (also ``velyrix health check``): run a health check
suite on this node (or a twin node).

Exit codes: 0 every check passed (or was skipped by configuration: ``--prober none``, verdict warn), 1 a check
failed or could not run (a check that could not run is a failure), 2 bad input.
"""

from __future__ import annotations

import typer

CHECK_HELP = """Run a health check suite on this node and print the results and the health verdict.

--quick (default): between jobs, under 60 s: GPU count and state, ECC, row remaps, NVLink, IB ports,
short GEMM and memory tests. --deep: idle nodes only: adds long GEMM/memory tests and NVMe.
--acceptance: the delivery check. Exit 1 when a check fails or could not run.

The GEMM/memory tests run through --prober: dcgm (default on a real node: NVIDIA DCGM's `dcgmi diag`,
run level 1 for quick, 3 for deep), sim (the twin) or none (the tests are recorded as skipped by
configuration: level warn, exit 0, neither a pass nor a drain).

Examples:

  velyrix agent check --quick --collector sim

  velyrix agent check --deep --collector sim --sim-fault slow_gpu:3 --json

  velyrix agent check --quick --prober none
"""


def check(
    quick: bool = typer.Option(False, "--quick", help="Quick suite (default)."),
    deep: bool = typer.Option(False, "--deep", help="Deep suite (idle nodes only)."),
    acceptance: bool = typer.Option(False, "--acceptance", help="Acceptance suite."),
    collector: str = typer.Option("nvml", "--collector", help="nvml (this node) or sim (a twin node)."),
    node_type: str = typer.Option("hgx-h200-8g", "--node-type", help="Catalog node type of this node."),
    sim_fault: str | None = typer.Option(
        None,
        "--sim-fault",
        metavar="KIND[:GPU]",
        help="With --collector sim: inject a fault first (e.g. xid79:2, ecc_dbe:1).",
    ),
    prober: str | None = typer.Option(
        None,
        "--prober",
        metavar="dcgm|sim|none",
        help="Active tests: dcgm (dcgmi diag), sim (twin) or none (skipped by "
        "configuration). Default: dcgm with --collector nvml, sim with sim.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    from velyrix import catalog, errors
    from velyrix.agent.checks import suites
    from velyrix.agent.checks.runner import CheckContext
    from velyrix.agent.collectors import dcgm
    from velyrix.cli import common
    from velyrix.health.engine import Engine
    from velyrix.health.evidence import Evidence

    chosen = [name for name, on in (("quick", quick), ("deep", deep), ("acceptance", acceptance)) if on]
    if len(chosen) > 1:
        raise errors.InvalidInputError("choose one of --quick, --deep, --acceptance", hint="e.g. --quick")
    tier = chosen[0] if chosen else "quick"
    nt = catalog.node_type(node_type)
    prober_name = prober or ("sim" if collector == "sim" else "dcgm")
    if prober_name not in dcgm.PROBERS:
        raise errors.UnknownNameError("prober", prober_name, dcgm.PROBERS)
    if collector == "sim":
        from velyrix.agent.collectors.sim import SimCollector
        from velyrix.fleet.drivers.sim import Fault, SimRegion

        region = SimRegion.build("us-east-1", {node_type: 1}, seed=0)
        node = next(iter(region.nodes.values()))
        region.advance(60.0)
        if sim_fault:
            kind, _, gpu = sim_fault.partition(":")
            xid = int(kind[3:]) if kind.startswith("xid") and kind[3:].isdigit() else None
            region.inject(node.hostname, Fault("xid" if xid else kind, gpu=int(gpu) if gpu else None, xid=xid))
        ctx = CheckContext(SimCollector(node, region), dcgm.create(prober_name, node), nt, clock=region.clock.now)
        hostname = node.hostname
    elif collector == "nvml":
        import os

        from velyrix.agent.collectors import base

        hostname = os.uname().nodename
        host = base.HostCollector(
            [
                base.create("nvml", hostname=hostname),
                base.create("infiniband", hostname=hostname),
                base.create("nvme", hostname=hostname),
            ],
            hostname=hostname,
        )
        if prober_name == "sim":
            raise errors.InvalidInputError(
                "--prober sim needs --collector sim", hint="on a real node use --prober dcgm (or none)"
            )
        ctx = CheckContext(host, dcgm.create(prober_name), nt)
    else:
        raise errors.UnknownNameError("collector", collector, ["nvml", "sim"])
    results = suites.run_tier(tier, ctx)
    verdict = Engine().evaluate(Evidence.build(hostname, ctx.clock(), checks=results))
    if as_json:
        common.print_json(
            {
                "node": hostname,
                "tier": tier,
                "prober": prober_name,
                "checks": [r.__dict__ for r in results],
                "verdict": verdict.to_dict(),
            }
        )
    else:
        out = common.console()
        for r in results:
            color = "green" if r.passed else "yellow" if r.status == "skipped" else "red"
            out.print(f"[{color}]{r.status:>7}[/] {r.name:<14} {r.duration_s:6.2f} s  {r.detail}")
        out.print(f"verdict: {verdict.level} -> {verdict.action.name}")
    if not all(r.passed or r.status == "skipped" for r in results):
        raise typer.Exit(1)


def attach(agent_app: typer.Typer) -> None:
    """Add ``check`` under the ``agent`` command group."""
    agent_app.command("check", help=CHECK_HELP)(check)
