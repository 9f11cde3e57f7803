"""``velyrix network config CLUSTER``: the cluster's fabric configuration as delivered (OpenSM
partitions.conf, UFM REST calls, NVUE YAML and SONiC config_db per switch), from ``GET /v1/clusters/{id}/fabric``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from velyrix.cli import common

FORMATS = ("summary", "partitions", "ufm", "nvue", "sonic", "json")


def network_group(app: typer.Typer) -> typer.Typer:
    """The ``network`` Typer group of ``app``, created when no module has added it yet (``cli.network``
    joins it with ``render``)."""
    for info in app.registered_groups:
        if info.name == "network" and info.typer_instance is not None:
            return info.typer_instance
    group = typer.Typer(
        name="network",
        help="Tenant networks of clusters: fabric configuration, private links and BGP sessions.",
        no_args_is_help=True,
    )
    app.add_typer(group, name="network")
    return group


def register(app: typer.Typer) -> None:
    network_group(app).command(name="config")(config)


def config(
    cluster: str = typer.Argument(..., help="Cluster name.", show_default=False),
    fmt: str = typer.Option(
        "summary", "--format", help="summary, partitions (OpenSM), ufm (REST calls), nvue, sonic or json."
    ),
    plane: str = typer.Option("storage", "--plane", help="Ethernet plane for nvue/sonic: storage or compute."),
    out: Path = typer.Option(None, "--out", help="Write one file per switch (nvue, sonic) or the file into DIR."),
) -> None:
    """Print (or write) the cluster's InfiniBand partition and Ethernet VLAN/VRF configuration."""
    from velyrix import errors
    from velyrix.cli import client as client_mod

    if fmt not in FORMATS:
        raise errors.UnknownNameError("format", fmt, FORMATS)
    client = client_mod.Client.from_login()
    live = client.find_cluster(cluster)
    if live is None:
        raise errors.NotFoundError(kind="cluster", name=cluster)
    body = client.get(f"/v1/clusters/{live['id']}/fabric")
    files = _files(body, fmt, plane, cluster)
    if out is None:
        for name, text in files.items():
            if len(files) > 1:
                typer.echo(f"# --- {name}")
            typer.echo(text.rstrip("\n"))
        return
    out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (out / name).write_text(text)
    common.console(stderr=True).print(f"wrote {len(files)} file(s) to {out}")


def _files(body: dict[str, Any], fmt: str, plane: str, cluster: str) -> dict[str, str]:
    """File name -> content of the chosen format (a missing artifact is a clear error)."""
    from velyrix import errors

    if fmt == "json":
        return {f"{cluster}-fabric.json": json.dumps(body, indent=2) + "\n"}
    if fmt == "summary":
        s, applied = body["summary"], body.get("applied")
        state = "not applied" if applied is None else ("applied" if applied["matches"] else "applied differs")
        lines = [f"{k}: {v}" for k, v in s.items()] + [f"configuration: {body['digest'][:16]} ({state})"]
        return {"summary": "\n".join(lines) + "\n"}
    if fmt in ("partitions", "ufm"):
        ib = body.get("infiniband")
        if ib is None:
            raise errors.InvalidInputError(
                f"cluster '{cluster}' has no InfiniBand partition (its compute fabric is Ethernet)",
                hint="use --format nvue --plane compute for its VNI",
            )
        if fmt == "partitions":
            return {"partitions.conf": ib["partitions_conf"]}
        return {"ufm-calls.json": json.dumps(ib["ufm"], indent=2) + "\n"}
    planes = body.get("ethernet") or {}
    if plane not in planes:
        raise errors.UnknownNameError("Ethernet plane of this cluster", plane, list(planes))
    switches = planes[plane][fmt]
    ext = "yaml" if fmt == "nvue" else "json"
    return {
        f"{switch}.{ext}": text if fmt == "nvue" else json.dumps(text, indent=2) + "\n"
        for switch, text in switches.items()
    }
