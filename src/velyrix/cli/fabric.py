"""``velyrix fabric``: plan and verify the network of a pod, and export its topology."""

from __future__ import annotations

from pathlib import Path

import typer

from velyrix import errors
from velyrix.cli import common

FABRIC_HELP = """Plan the three network planes of a pod (compute, storage, management), prove the compute \
fabric on its graph (rail map, port budgets, max-flow bisection, per rail, ECMP paths) and export it.

Examples:

  velyrix fabric --node-type hgx-h200-8g --nodes 64 --fabric infiniband-ndr

  velyrix fabric --node-type hgx-h200-8g --gpus 4096 --fabric infiniband-ndr --json

  velyrix fabric --node-type hgx-b200-8g --nodes 72 --fabric spectrum-x --picture pod.svg \\
      --topology-out topology.json --slurm-topology topology.conf
"""


def register(app: typer.Typer) -> None:
    app.command(name="fabric", help=FABRIC_HELP)(fabric)


def fabric(
    node_type: str = typer.Option(..., "--node-type", help="Node type from the catalog, e.g. hgx-h200-8g."),
    nodes: int = typer.Option(None, "--nodes", help="Number of nodes (or give --gpus).", show_default=False),
    gpus: int = typer.Option(
        None, "--gpus", help="Number of GPUs, a multiple of the GPUs per node.", show_default=False
    ),
    fabric_name: str = typer.Option(..., "--fabric", help="infiniband-ndr, infiniband-xdr or spectrum-x."),
    oversubscription: float = typer.Option(1.0, "--oversubscription", help="Leaf down:up ratio; 1 = non-blocking."),
    no_sharp: bool = typer.Option(False, "--no-sharp", help="Plan without SHARP in-network reduction."),
    storage_gb_s: float = typer.Option(
        None,
        "--storage-gb-s",
        show_default=False,
        help="Storage read target in GB/s (default: SuperPOD 'better' guidance).",
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the plan and its verification as JSON."),
    picture: Path = typer.Option(None, "--picture", help="Write an SVG picture of the pod.", show_default=False),
    topology_out: Path = typer.Option(
        None, "--topology-out", show_default=False, help="Write every switch and cable as JSON."
    ),
    slurm_topology: Path = typer.Option(
        None, "--slurm-topology", show_default=False, help="Write a Slurm topology.conf (tree plugin)."
    ),
    node_prefix: str = typer.Option("node-", "--node-prefix", help="Host name prefix for the Slurm file."),
) -> None:
    from velyrix import catalog
    from velyrix.planners import fabric as planner
    from velyrix.planners import fabric_export, fabric_verify

    nt = catalog.node_type(node_type)
    node_count = _node_count(nodes, gpus, nt.gpus_per_node)
    if picture is not None and picture.suffix.lower() != ".svg":
        raise errors.InvalidInputError(
            f"--picture {picture}: only SVG pictures are written", hint=f"use {picture.with_suffix('.svg')}"
        )
    plan = planner.plan_fabric(
        node_type,
        node_count,
        fabric_name,
        oversubscription=oversubscription,
        sharp=not no_sharp,
        storage_target_gb_s=storage_gb_s,
    )
    verification = fabric_verify.verify(plan)
    section = plan.to_dict()
    section["compute"]["verification"] = verification.to_dict()
    written = []
    if picture is not None:
        picture.write_text(fabric_export.pod_svg(plan), encoding="utf-8")
        written.append(str(picture))
    if topology_out is not None:
        topology_out.write_text(fabric_export.topology_json(plan), encoding="utf-8")
        written.append(str(topology_out))
    if slurm_topology is not None:
        names = [f"{node_prefix}{i:04d}" for i in range(node_count)]
        slurm_topology.write_text(fabric_export.slurm_topology(plan, names), encoding="utf-8")
        written.append(str(slurm_topology))
    if json_out:
        common.print_json(section)
    else:
        from velyrix.cli import fabric_views

        con = common.console()
        fabric_views.render_fabric(con, section)
        for path in written:
            con.print(f"wrote {path}")
    if not verification.ok:
        raise typer.Exit(1)


def _node_count(nodes: int | None, gpus: int | None, gpus_per_node: int) -> int:
    if (nodes is None) == (gpus is None):
        raise errors.InvalidInputError(
            "give exactly one of --nodes or --gpus", hint="example: --nodes 64, or --gpus 512"
        )
    if nodes is not None:
        if nodes < 1:
            raise errors.InvalidInputError(f"--nodes must be >= 1, got {nodes}")
        return nodes
    assert gpus is not None
    if gpus < 1 or gpus % gpus_per_node:
        up = max(1, -(-gpus // gpus_per_node))
        raise errors.InvalidInputError(
            f"--gpus {gpus} is not a whole number of {gpus_per_node}-GPU nodes",
            hint=f"closest valid: --gpus {up * gpus_per_node} (--nodes {up})",
        )
    return gpus // gpus_per_node
