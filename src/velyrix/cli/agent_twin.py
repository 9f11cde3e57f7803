"""``velyrix agent --collector twin``: the node agent of one node of a running ``velyrix up``, in its own
process: it reads its node's hardware through the twin's telemetry endpoint (``velyrix.agent.collectors.twin``)
with the node's token, judges it with its own health engine, serves ``/metrics`` and reports on its poll
cadence (``velyrix.agent.node_agent``)."""

from __future__ import annotations

import threading

import typer


def run(
    *,
    hostname: str | None,
    control_plane: str | None,
    node_token: str,
    listen: str,
    port: int,
    interval_s: float,
    once: bool,
    ca_bundle: str | None = None,
    allow_plaintext: bool = False,
) -> None:
    """Run the twin node's agent until interrupted (``once``: print one scrape and exit)."""
    from velyrix import errors
    from velyrix.agent import service
    from velyrix.agent.checks.monitor import HealthMonitor
    from velyrix.agent.collectors.twin import TwinCollector, http_reader
    from velyrix.agent.node_agent import NodeAgent
    from velyrix.agent.reporting import Reporter
    from velyrix.health.drains import InMemorySeam

    if not hostname:
        raise errors.InvalidInputError(
            "--collector twin needs --hostname: the twin node this agent is", hint="e.g. --hostname use1-h200-su00-n03"
        )
    if not control_plane:
        raise errors.InvalidInputError(
            "--collector twin reads its node from a running `velyrix up`", hint="pass --control-plane URL"
        )
    read, client = http_reader(control_plane, node_token, ca_bundle=ca_bundle)
    collector = TwinCollector(hostname, read, client.close)
    monitor = HealthMonitor(hostname, collector, InMemorySeam(), clock=None, poll_interval_s=interval_s)
    reporter = (
        None if once else Reporter(control_plane, node_token, ca_bundle=ca_bundle, allow_plaintext=allow_plaintext)
    )
    agent = NodeAgent(collector, monitor, reporter)
    first = agent.tick()
    if first is None:
        raise errors.InvalidInputError(agent.last_error or f"cannot read twin node {hostname}")
    source = service.MetricsSource(
        [service.NodeSource(collector)], min_interval_s=1.0, after_collect=[service.stamp_health(lambda: monitor.last)]
    )
    if once:
        typer.echo(source.render().decode(), nl=False)
        collector.close()
        return
    server = service.serve(source, listen, port)
    typer.echo(f"velyrix agent: twin node {hostname}, serving {server.url}, reporting to {control_plane}", err=True)
    stop = threading.Event()
    try:
        agent.run(stop, interval_s)
        if agent.stopped:
            typer.echo(f"velyrix agent: {agent.stopped}", err=True)
            raise typer.Exit(1)
    finally:
        server.close()
        collector.close()
        if reporter is not None:
            reporter.close()
