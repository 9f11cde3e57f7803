"""``velyrix report sanitization CLUSTER`` (download the signed certificates) and ``velyrix verify
sanitization FILE`` (check one offline)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from velyrix.cli import common
from velyrix.cli.fleet import _group


def register(app: typer.Typer) -> None:
    _group(app, "report", "Reports: acceptance, ...").command(name="sanitization")(report_sanitization)
    _group(app, "verify", "Verify signed documents.").command(name="sanitization")(verify_sanitization)


def _find_cluster(client: Any, name: str) -> dict[str, Any] | None:
    """The live cluster ``name``, else the newest deleted one that carried it (``NAME~deleted-...``)."""
    live = client.find_cluster(name)
    if live is not None:
        return dict(live)
    gone = [c for c in client.list_all("/v1/clusters") if str(c["name"]).startswith(f"{name}~deleted-")]
    return dict(max(gone, key=lambda c: c["id"])) if gone else None


def report_sanitization(
    cluster: str = typer.Argument(..., help="Cluster name (also a destroyed one).", show_default=False),
    out: Path = typer.Option(None, "--out", help="Write each certificate to DIR/<subject>.json."),
    json_out: bool = typer.Option(False, "--json", help="Print the certificates as a JSON list."),
) -> None:
    """List the signed sanitization certificates of a cluster's released nodes and deleted volumes."""
    from rich.table import Table

    from velyrix import errors
    from velyrix.cli import client as client_mod

    client = client_mod.Client.from_login()
    found = _find_cluster(client, cluster)
    if found is None:
        raise errors.NotFoundError(kind="cluster", name=cluster)
    certs = client.get(f"/v1/clusters/{found['id']}/sanitization-certificates")["items"]
    if json_out:
        common.print_json(certs)
        return
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        for cert in certs:
            subject = cert["report"]["subject"]
            (out / f"{subject['kind']}-{subject['name']}.json").write_text(json.dumps(cert, indent=2, sort_keys=True))
    table = Table("subject", "name", "method", "technique", "verified", "when", "certificate")
    for cert in certs:
        rep = cert["report"]
        technique = rep["sanitization"]["technique"]
        table.add_row(
            rep["subject"]["kind"],
            rep["subject"]["name"],
            rep["sanitization"]["method"],
            technique if isinstance(technique, str) else ", ".join(technique),
            "passed" if rep["verification"]["passed"] else "FAILED",
            rep["performed_at"],
            rep["certificate_id"],
        )
    con = common.console()
    con.print(table)
    con.print(
        f"{len(certs)} certificates"
        + (f" written to {out}" if out else "")
        + "; check: velyrix verify sanitization FILE"
    )


def verify_sanitization(
    file: Path = typer.Argument(
        ..., help="A certificate from `velyrix report sanitization --out DIR`.", show_default=False
    ),
    public_key: str = typer.Option(
        None,
        "--public-key",
        help="Check against this key (base64, from GET /v1/acceptance/keys/REGION), offline. Default: the "
        "region's key pinned at login (velyrix login), like SSH's known_hosts.",
    ),
) -> None:
    """Verify a sanitization certificate's Ed25519 signature against its region's pinned key (or --public-key),
    offline; exit 0 when valid, 1 when not (a certificate signed by any other key is INVALID)."""
    from velyrix.cli import region_signed
    from velyrix.controlplane.evidence import sanitization
    from velyrix.controlplane.reconcile import signing

    region_signed.check_public_key(public_key)
    con = common.console()
    con.soft_wrap = True
    try:
        signed = region_signed.read(file, "download certificates with: velyrix report sanitization NAME --out DIR")
    except region_signed.DuplicateKeyError as dup:
        con.print(f"[red]INVALID[/]: {common.safe(dup)}")
        raise typer.Exit(1) from None
    if not (isinstance(signed, dict) and isinstance(signed.get("report"), dict) and "signature" in signed):
        signing.verify(signed if isinstance(signed, dict) else {})  # raises: not a signed document (exit 2)
    rep = signed["report"]
    if rep.get("kind") != sanitization.KIND:
        con.print("[red]INVALID[/]: not a sanitization certificate")
        raise typer.Exit(1)
    key, source = region_signed.trusted(rep.get("region"), public_key, "report.region")
    if key is None:
        con.print(f"[red]INVALID[/]: cannot tell who signed it: {common.safe(source)}")
        raise typer.Exit(1)
    result = signing.verify(signed, key)
    if not result.valid:
        con.print(f"[red]INVALID[/]: {common.safe(result.reason)} ({common.safe(source)})")
        raise typer.Exit(1)
    con.print(
        f"[green]valid[/]: {result.reason} ({result.key_id}, {common.safe(source)}); {rep['subject']['kind']} "
        f"{rep['subject']['name']} {rep['sanitization']['method']}d at {rep['performed_at']}, verification "
        + ("passed" if rep["verification"]["passed"] else "FAILED")
    )
