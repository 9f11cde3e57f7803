"""The body of ``velyrix demo``: an embedded control plane (SQLite, temporary home), a twin region sized for
the declared clusters, a real HTTP server on a free loopback port, and the same ``apply`` a user runs."""

from __future__ import annotations

import math
import os
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from velyrix.cli import common


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def twin_counts(spec_file: object) -> dict[str, int]:
    """Twin nodes per node type: whole scalable units covering the clusters plus the spare reserve and one
    node to replace, in whole SUs of 32."""
    from velyrix import catalog

    need: dict[str, int] = {}
    for c in spec_file.clusters:  # type: ignore[attr-defined]
        need[c.node_type] = need.get(c.node_type, 0) + c.node_count
    out = {}
    for node_type, n in need.items():
        region = catalog.region(spec_file.region)  # type: ignore[attr-defined]
        su = region.scalable_unit_nodes
        total = math.ceil(n * (1 + region.spare_fraction) + 1)
        out[node_type] = max(su, math.ceil(total / su) * su + su)
    return out


def slurm_job(con: Any, client: Any, live: dict[str, Any]) -> None:
    """After Ready: a job through the Slurm delivered with ``live`` (``GET /v1/clusters/{id}/scheduler``):
    ``sinfo``, ``srun -N 4 hostname``, then a batch job on 8 GPUs of one node and its accounting record."""
    import subprocess

    got = client.get(f"/v1/clusters/{live['id']}/scheduler")
    con.print(f"{got['message']}")
    env = {**os.environ, **got["env"]}

    def run(*argv: str) -> str:
        con.print(f"[bold]$ {' '.join(argv)}[/]")
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
        text = (proc.stdout + proc.stderr).rstrip()
        print(text, flush=True)  # the tool's own columns, not re-wrapped
        return proc.stdout

    run("sinfo", "-s")
    run("srun", "-N", str(min(4, len(got["nodes"]))), "hostname")
    job = run("sbatch", "--parsable", "--gpus=8", "-N", "1", "-o", "/dev/null", "--wrap", "sleep 2")
    job_id = job.strip().split(";")[0]
    deadline = time.monotonic() + 60
    while (
        time.monotonic() < deadline
        and subprocess.run(
            ["squeue", "-h", "-j", job_id], env=env, capture_output=True, text=True, check=False
        ).stdout.strip()
    ):
        time.sleep(0.5)
    run("sacct", "-j", job_id, "-X", "-o", "JobID,Account,AllocTRES%40,NodeList,State,Elapsed")


def run(file: Path, *, speed: float, faults: bool, seed: int, slurm: bool = True) -> None:
    started = time.monotonic()
    home = tempfile.mkdtemp(prefix="velyrix-demo-")
    os.environ["VELYRIX_HOME"] = home
    os.environ.pop("VELYRIX_DATABASE_URL", None)
    import uvicorn

    from velyrix.cli import apply as apply_cmd
    from velyrix.cli import client as client_mod
    from velyrix.cli import plan as plan_cmd
    from velyrix.cli.acceptance_report import render_report
    from velyrix.controlplane.auth import principals
    from velyrix.controlplane.db import models
    from velyrix.controlplane.reconcile import signing
    from velyrix.controlplane.reconcile.runtime import FleetRuntime
    from velyrix.declarations import loader
    from velyrix.fleet.drivers.sim import Fault
    from velyrix.ops.service import create_app
    from velyrix.planners import plan as planner

    con = common.console()
    spec_file = loader.load(file)
    con.rule(f"[bold]1. Plan[/] ({file})")
    plan_cmd.render(planner.plan_file(spec_file))

    app = create_app(f"sqlite:///{home}/velyrix.db")
    counts = twin_counts(spec_file)
    runtime = FleetRuntime.twin(
        app.state.sessionmaker, spec_file.region, node_counts=counts, seed=seed, delays=True, speed=speed
    )
    runtime.attach(app)
    schedulers = None
    from velyrix.ops.scheduler import local_slurm

    if slurm and local_slurm.missing_binaries():
        con.print(f"[yellow]No Slurm delivered:[/] needs {', '.join(local_slurm.missing_binaries())} (bootstrap).")
    elif slurm:
        from velyrix.ops.scheduler import twin_delivery

        schedulers = twin_delivery.install(app, runtime)  # what `velyrix up --slurm` runs
    runtime.start()
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    with app.state.sessionmaker() as s:
        tenant = models.Tenant(name="acme", display_name="ACME AI")
        s.add(tenant)
        s.flush()
        _, key = principals.issue_key(s, tenant_id=tenant.id, name="demo owner", role="owner")
        s.commit()
    os.environ["VELYRIX_ENDPOINT"] = f"http://127.0.0.1:{port}"
    os.environ["VELYRIX_API_KEY"] = key
    nodes = sum(counts.values())
    con.rule("[bold]2. Apply[/]")
    con.print(
        f"Embedded control plane on http://127.0.0.1:{port} (SQLite in {home}); twin of {spec_file.region}: "
        f"{nodes} nodes, clock x{speed:g} (1 wall second = {speed / 60:g} simulated minutes)."
    )
    if faults and runtime.sim is not None:
        victim = sorted(runtime.sim.nodes)[7]
        runtime.sim.inject(victim, Fault("slow_gpu", gpu=3, factor=0.55))
        con.print(f"[yellow]Fault injected:[/] GPU 3 of {victim} runs at 55% (a node the cluster will get).")
    try:
        # every option given: a typer default left out would be its (truthy) OptionInfo, not its value
        apply_cmd.apply(file, auto_approve=True, var=[], var_file=[], timeout_s=600.0, target=[], refresh_only=False)
    finally:
        client = client_mod.Client.from_login()
        for c in spec_file.clusters:
            live = client.find_cluster(c.name)
            if live is None:
                continue
            con.rule(f"[bold]3. Delivered cluster[/] {c.name}")
            apply_cmd.render_cluster(con, live, client.list_all("/v1/nodes", cluster_id=live["id"]))
            con.rule(f"[bold]4. Acceptance report[/] {c.name}")
            try:
                signed = client.get(f"/v1/clusters/{live['id']}/acceptance")
            except Exception as exc:  # the report is missing when the apply failed; say so, don't crash
                con.print(f"[red]no acceptance report: {exc}[/]")
                continue
            render_report(con, signed)
            check = signing.verify(signed, signing.public_key_b64(spec_file.region))
            con.print(
                f"Signature check against the {spec_file.region} key: "
                + ("[green]valid[/]" if check.valid else f"[red]{check.reason}[/]")
            )
            if schedulers is not None and c.scheduler == "slurm" and live["status"]["phase"] == "Ready":
                con.rule(f"[bold]5. A job through the delivered Slurm[/] {c.name}")
                slurm_job(con, client, live)
        server.should_exit = True
        thread.join(5)
        runtime.stop()
        if schedulers is not None:
            schedulers.close()
        app.state.engine.dispose()
        shutil.rmtree(home, ignore_errors=True)
        os.environ.pop("VELYRIX_HOME", None)
        con.print(f"\nDemo finished in {time.monotonic() - started:.1f} s wall (temporary home {home} removed).")
