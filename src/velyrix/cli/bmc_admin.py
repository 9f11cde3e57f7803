"""``velyrix admin bmc-credentials NODE``: where a node's BMC answers and how the Redfish driver logs in to
it, stored with the password sealed (``controlplane.bmc_credentials``); out-of-band, like the other
``velyrix admin`` commands, and audited. The password is read from a file (or standard input), never from
the command line, so that it stays out of shell history and process listings."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

MAX_PASSWORD_FILE_BYTES = 4096


def register(app: typer.Typer) -> None:
    from velyrix.cli.server import admin_app

    admin_app.command("bmc-credentials")(bmc_credentials)


def bmc_credentials(
    node: str = typer.Argument(..., help="Node hostname, e.g. use1-h200-su00-n07.", show_default=False),
    address: str = typer.Option(..., "--address", help="The BMC's base URL, e.g. https://10.0.7.21."),
    username: str = typer.Option(..., "--username", help="The BMC user the driver logs in as."),
    password_file: str = typer.Option(
        ..., "--password-file", help="File holding the password ('-': standard input); never on the command line."
    ),
    system_id: str = typer.Option(None, "--system-id", help="ComputerSystem Id (default: the node's hostname)."),
    region: str = typer.Option("us-east-1", "--region", help="Catalog region of the node."),
    node_type: str = typer.Option("", "--node-type", help="Catalog node type (e.g. hgx-h200-8g)."),
    insecure: bool = typer.Option(False, "--insecure", help="Do not verify the BMC's TLS certificate."),
) -> None:
    """Store (or replace) a node's BMC endpoint; prints what was stored, never the password."""
    from velyrix import errors
    from velyrix.cli import admin_audit
    from velyrix.controlplane import bmc_credentials as store
    from velyrix.controlplane import db
    from velyrix.fleet.drivers.redfish import Secret

    raw = sys.stdin.read(MAX_PASSWORD_FILE_BYTES + 1) if password_file == "-" else _read(Path(password_file))
    if len(raw) > MAX_PASSWORD_FILE_BYTES:
        raise errors.InvalidInputError(f"--password-file: over {MAX_PASSWORD_FILE_BYTES} bytes")
    password = raw.strip("\r\n")
    if not password:
        raise errors.InvalidInputError(f"--password-file {password_file} holds no password")
    db.upgrade()
    with db.session() as s:
        row = store.store(
            s,
            node,
            region=region,
            address=address,
            system_id=system_id or node,
            username=username,
            password=Secret(password),
            verify_tls=not insecure,
            node_type=node_type,
        )
        admin_audit.record(s, "bmc_credentials.set", f"bmc-credentials/{row.node_name}", None)
    typer.echo(
        f"BMC of {node}: {row.address} system {row.system_id}, user {username}, password sealed"
        + (" (TLS not verified)" if insecure else "")
    )


def _read(path: Path) -> str:
    from velyrix import errors

    try:
        with path.open(encoding="utf-8") as fh:
            return fh.read(MAX_PASSWORD_FILE_BYTES + 1)
    except OSError as exc:
        raise errors.InvalidInputError(f"--password-file {path}: {exc.strerror}") from exc
