"""``velyrix agent``: the node agent (serves /metrics, reports to the control plane)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import typer

from velyrix import settings

AGENT_HELP = """Run the node agent: collect GPU (NVML), InfiniBand and NVMe readings, serve them on \
/metrics with DCGM-compatible names and per-job labels, and report the node's state to the control plane.

Examples:

  velyrix agent   (on a Slurm node: NVML, jobs from /run/velyrix/jobs, which the generated prolog writes)

  velyrix agent --collector sim --port 9402 --once

  velyrix agent --control-plane https://velyrix.example.com --node-token "$TOKEN"

  velyrix agent --collector twin --hostname use1-h200-su00-n03 --control-plane http://127.0.0.1:8600 \
--node-token "$TOKEN"   (a node of a running `velyrix up`)
"""


def register(app: typer.Typer) -> None:
    from velyrix.cli import agent_check

    # a group: ``velyrix agent [OPTIONS]`` runs the agent, ``velyrix agent check`` runs a check suite
    agent_app = typer.Typer(name="agent", help=AGENT_HELP, invoke_without_command=True)
    agent_app.callback(invoke_without_command=True)(agent)
    agent_check.attach(agent_app)
    app.add_typer(agent_app)


def agent(
    ctx: typer.Context,
    collector: str = typer.Option(
        "nvml",
        "--collector",
        help="Where GPU readings come from: nvml, sim (a one-node twin of its own) or twin (--hostname of a "
        "running `velyrix up`, read through its API with --node-token).",
    ),
    listen: str = typer.Option("0.0.0.0", "--listen", help="Address to serve /metrics on."),
    port: int = typer.Option(9402, "--port", help="Port to serve /metrics on (0 picks a free one)."),
    job_map_dir: Path | None = typer.Option(
        None,
        "--job-map-dir",
        help="Directory the scheduler prolog writes: one file per GPU index (default with --collector nvml and "
        "no --k8s-pod-resources: /run/velyrix/jobs, where `velyrix scheduler config`'s prolog writes).",
        show_default=False,
    ),
    k8s_pod_resources: str | None = typer.Option(
        None,
        "--k8s-pod-resources",
        metavar="SOCKET",
        help="Attribute GPUs to pods via the kubelet pod-resources socket (e.g. "
        "/var/lib/kubelet/pod-resources/kubelet.sock) and their labels, instead of --job-map-dir.",
    ),
    k8s_api: str = typer.Option("https://kubernetes.default.svc", "--k8s-api", help="Kubernetes API server URL."),
    k8s_job_label: str = typer.Option("velyrix.io/job", "--k8s-job-label", help="Pod label holding the job id."),
    ib_root: Path = typer.Option(Path("/sys/class/infiniband"), "--ib-root", help="sysfs InfiniBand root."),
    nvme_root: Path = typer.Option(Path("/sys/class/nvme"), "--nvme-root", help="sysfs NVMe root."),
    hostname: str | None = typer.Option(None, "--hostname", help="Node name to report (default: this host's)."),
    control_plane: str | None = typer.Option(
        None, "--control-plane", metavar="URL", help="Control plane base URL to report node state to."
    ),
    node_token: str | None = typer.Option(
        None, "--node-token", metavar="T", help="This node's credential (or env VELYRIX_NODE_TOKEN)."
    ),
    ca_bundle: str | None = typer.Option(
        None, "--ca-bundle", metavar="PEM", help="CA file that signed an https control plane's certificate."
    ),
    allow_plaintext: bool = typer.Option(
        False, "--allow-plaintext", help="Allow an http:// control plane on another host (token in clear text)."
    ),
    report_interval_s: float = typer.Option(30.0, "--report-interval", help="Seconds between reports."),
    sim_region: str = typer.Option("us-east-1", "--sim-region", help="With --collector sim: catalog region."),
    sim_node_type: str = typer.Option("hgx-h200-8g", "--sim-node-type", help="With --collector sim: node type."),
    sim_load_pct: float = typer.Option(0.0, "--sim-load", help="With --collector sim: GPU load (%)."),
    ib_metrics: str = typer.Option(
        "velyrix",
        "--ib-metrics",
        metavar="velyrix|node_exporter|off",
        help="InfiniBand counter names: Velyrix's, node_exporter's infiniband collector's, or none "
        "(off: where node_exporter already exports them).",
    ),
    sim_speed: float = typer.Option(1.0, "--sim-speed", help="With --collector sim: simulated s per wall s."),
    min_interval_s: float = typer.Option(
        1.0, "--min-interval", help="Scrapes closer than this (s) reuse the last collection."
    ),
    health: bool = typer.Option(
        True, "--health/--no-health", help="Run the passive health checks (verdict exported and reported)."
    ),
    health_interval_s: float = typer.Option(60.0, "--health-interval", help="Seconds between health polls."),
    prober: str | None = typer.Option(
        None,
        "--prober",
        metavar="dcgm|sim|none",
        help="Active GEMM/memory tests of the between-job checks: dcgm (dcgmi diag; default on a real node), "
        "sim (default with --collector sim) or none: the verdict then records them as skipped by "
        "configuration (level warn, exported as velyrix_node_health_level 1, never a drain).",
    ),
    once: bool = typer.Option(False, "--once", help="Print one scrape to stdout and exit."),
) -> None:
    if ctx.invoked_subcommand is not None:
        return
    from velyrix import errors
    from velyrix.agent import service
    from velyrix.agent.collectors import base

    names = ["nvml", "sim", "twin"]
    if collector not in names:
        raise errors.UnknownNameError("collector", collector, names)
    from velyrix.agent import ib_names

    if ib_metrics not in ib_names.IB_METRICS_MODES:
        raise errors.UnknownNameError("InfiniBand metric naming", ib_metrics, ib_names.IB_METRICS_MODES)
    if collector == "twin":
        from velyrix.cli import agent_twin

        agent_twin.run(
            hostname=hostname,
            control_plane=control_plane,
            node_token=node_token or settings.load().agent.node_token,
            listen=listen,
            port=port,
            interval_s=report_interval_s,
            once=once,
            ca_bundle=ca_bundle or settings.load().agent.ca_bundle or None,
            allow_plaintext=allow_plaintext,
        )
        return
    from velyrix.agent.collectors import dcgm

    prober_name = prober or ("sim" if collector == "sim" else "dcgm")
    if prober_name not in dcgm.PROBERS:
        raise errors.UnknownNameError("prober", prober_name, dcgm.PROBERS)
    if prober_name == "sim" and collector != "sim":
        raise errors.InvalidInputError("--prober sim needs --collector sim", hint="on a real node: --prober dcgm")
    if prober_name == "dcgm":
        import shutil

        if shutil.which("dcgmi") is None:
            typer.echo(
                "velyrix agent: dcgmi not found: install DCGM or choose --prober none "
                "(between-job checks will fail their GEMM/memory tests)",
                err=True,
            )
    if collector == "sim":
        from velyrix.agent.collectors.sim import SimCollector
        from velyrix.fleet.drivers.sim import SimClock, SimRegion

        region = SimRegion.build(sim_region, {sim_node_type: 1}, clock=SimClock(speed=sim_speed))
        node = next(iter(region.nodes.values()))
        node.load_pct = sim_load_pct
        region.advance(1.0)
        gpu_collector: base.Collector = SimCollector(node, region)
        clock = region.clock.now
    else:
        clock = time.time
        name = hostname or os.uname().nodename
        gpu_collector = base.HostCollector(
            [
                base.create("nvml", hostname=name),
                base.create("infiniband", root=ib_root, hostname=name),
                base.create("nvme", root=nvme_root, hostname=name),
            ],
            hostname=name,
        )
    job_source = None
    if k8s_pod_resources:
        if job_map_dir is not None:
            raise errors.InvalidInputError(
                "--job-map-dir and --k8s-pod-resources exclude each other",
                hint="Slurm nodes use --job-map-dir; Kubernetes nodes --k8s-pod-resources",
            )
        from velyrix.agent.k8s import PodLabelSource

        job_source = PodLabelSource(k8s_pod_resources, api_url=k8s_api, job_label=k8s_job_label)
    after = []
    monitor = None
    if health:
        from velyrix.agent.checks.monitor import HealthMonitor
        from velyrix.health.drains import InMemorySeam

        # On the node the verdict is exported and reported; drains go through the control plane and the
        # scheduler (ops), so the monitor's seam here only records what it would do.
        node_name = getattr(gpu_collector, "hostname", None) or gpu_collector.collect().hostname
        monitor = HealthMonitor(
            node_name, gpu_collector, InMemorySeam(), poll_interval_s=health_interval_s, clock=clock
        )
        if prober_name == "none":
            from velyrix.agent.checks import suites

            monitor.add_checks(suites.skipped_active("quick", clock()))
        monitor.poll()
        after.append(service.stamp_health(lambda: monitor.last))
    source = service.MetricsSource(
        [service.NodeSource(gpu_collector, job_map_dir_for(collector, job_map_dir, k8s_pod_resources), job_source)],
        min_interval_s=min_interval_s,
        after_collect=after,
        ib_metrics=ib_metrics,
    )
    if once:
        typer.echo(source.render().decode(), nl=False)
        gpu_collector.close()
        return
    reporter = None
    if control_plane:
        from velyrix.agent.reporting import Reporter

        agent_settings = settings.load().agent
        reporter = Reporter(
            control_plane,
            node_token or agent_settings.node_token,
            ca_bundle=ca_bundle or agent_settings.ca_bundle or None,
            allow_plaintext=allow_plaintext,
        )
    if monitor is not None:
        threading.Thread(target=monitor.run, name="health", daemon=True).start()
    server = service.serve(source, listen, port)
    typer.echo(
        f"velyrix agent: serving {server.url}" + (f", reporting to {control_plane}" if reporter else ""), err=True
    )
    svc = service.AgentService(source, server, reporter, report_interval_s)
    try:
        svc.run_forever()
    finally:
        gpu_collector.close()


def job_map_dir_for(collector: str, given: Path | None, k8s_pod_resources: str | None) -> Path | None:
    """The job-mapping directory the agent reads: ``given``, else on a real node (``nvml``) outside
    Kubernetes the directory the generated prolog writes (``velyrix.agent.jobs.JOB_MAP_DIR``), else none."""
    if given is not None or k8s_pod_resources or collector != "nvml":
        return given
    from velyrix.agent import jobs

    return Path(jobs.JOB_MAP_DIR)
