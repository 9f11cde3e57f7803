"""``velyrix network render FILE --out DIR``: deliver a configuration's private links and BGP sessions
as each cluster's edge configuration for BIRD 2, checked by the real parser (``bird -p``), as the twin
does (``ops.connectivity_delivery``)."""

from __future__ import annotations

from pathlib import Path

import typer

from velyrix.cli.network_config import network_group


def register(app: typer.Typer) -> None:
    """Join the ``network`` group of ``cli.network_config`` (registered before this module)."""
    network_group(app).command(name="render")(render)


def render(
    file: Path = typer.Argument(..., help="HCL file (or directory) with velyrix_private_link / velyrix_bgp_session"),
    out: Path = typer.Option(..., "--out", help="directory for <cluster>.bird.conf (0600: holds MD5 passwords)"),
    var: list[str] = typer.Option(None, "-var", "--var", metavar="NAME=VALUE", help="Set a variable (repeatable)."),
) -> None:
    """Write each cluster's BIRD 2 edge configuration and check it with ``bird -p``."""
    from velyrix.cli import common
    from velyrix.declarations import connectivity, loader
    from velyrix.ops import connectivity_delivery

    loader.load(file, variables=common.parse_vars(var))  # the clusters' own problems first
    conn = connectivity.load(file, variables=common.parse_vars(var))
    con = common.console()
    done = connectivity_delivery.deliver(conn, out)
    for item in done:
        con.print(f"{common.safe(str(item.path))}: {item.bgp_sessions} BGP sessions, accepted by bird -p")
    if not done:
        con.print("no private link or BGP session declared: nothing to render")
