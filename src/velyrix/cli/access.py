"""``velyrix ssh certificate|approve|operator``: short-lived SSH certificates for a cluster's nodes
(through the jump host: docs/access.md), a tenant's approval of a provider action on a self-operated
cluster, and an operator's certificate behind that approval or a break-glass."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from velyrix import errors

ssh_app = typer.Typer(
    help="SSH certificates for your nodes, through the jump host (docs/access.md).", no_args_is_help=True
)


def register(app: typer.Typer) -> None:
    app.add_typer(ssh_app, name="ssh")


def _client() -> Any:
    from velyrix.cli import client

    return client.Client.from_login()


def _public_key(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError as exc:
        raise errors.InvalidInputError(
            f"--public-key {path}: {exc.strerror or exc}", hint="pass your .pub file"
        ) from None


def _cert_path(public_key: Path, out: Path | None) -> Path:
    """Where OpenSSH looks for the certificate of ``id_x.pub``: ``id_x-cert.pub``."""
    if out is not None:
        return out
    return public_key.with_name(public_key.name.removesuffix(".pub") + "-cert.pub")


def _write(answer: dict[str, Any], path: Path, json_out: bool) -> None:
    from velyrix.cli import common

    path.write_text(answer["certificate"] + "\n")
    if json_out:
        common.print_json({k: v for k, v in answer.items() if k != "certificate"} | {"path": str(path)})
        return
    con = common.console()
    con.print(
        f"Wrote {common.safe(str(path))}: principals {', '.join(answer['principals'])}, until {answer['expires_at']}"
    )


@ssh_app.command("certificate")
def certificate(
    cluster: str = typer.Argument(..., help="cluster name or id"),
    user: str = typer.Option(..., "--user", help="the tenant's user id the certificate is for"),
    public_key: Path = typer.Option(..., "--public-key", help="your OpenSSH public key file (id_ed25519.pub)"),
    root: bool = typer.Option(False, "--root", help="the root login (self-operated clusters; owners and admins)"),
    valid_for_s: int = typer.Option(3600, "--valid-for-s", help="seconds the certificate lives (60 to 43200)"),
    out: Path = typer.Option(None, "--out", help="where to write it (default: next to the key, as OpenSSH expects)"),
    json_out: bool = typer.Option(False, "--json", help="print the answer as JSON"),
) -> None:
    """Get a certificate for CLUSTER's nodes and write it next to your key."""
    api = _client()
    found = api.find_cluster(cluster)
    body = {
        "cluster_id": found["id"] if found else cluster,
        "user_id": user,
        "public_key": _public_key(public_key),
        "root": root,
        "valid_for_s": valid_for_s,
    }
    _write(api.post("/v1/ssh-certificates", body), _cert_path(public_key, out), json_out)


@ssh_app.command("approve")
def approve(
    cluster: str = typer.Argument(..., help="cluster name or id"),
    action: str = typer.Option("ssh", "--action", help="ssh, bmc, reboot, reimage, drain or labels"),
    valid_for_s: int = typer.Option(3600, "--valid-for-s", help="seconds the approval stays usable"),
    reason: str = typer.Option("", "--reason", help="why (kept with the approval)"),
) -> None:
    """Approve one provider action on a self-operated cluster; prints the approval id to hand over."""
    from velyrix.cli import common

    api = _client()
    found = api.find_cluster(cluster)
    cid = found["id"] if found else cluster
    answer = api.post(
        f"/v1/clusters/{cid}/access-approvals", {"action": action, "valid_for_s": valid_for_s, "reason": reason}
    )
    common.console().print(f"{answer['id']}  ({answer['action']} on {cid} until {answer['expires_at']})")


@ssh_app.command("operator")
def operator(
    node_id: str = typer.Argument(..., help="the node's id"),
    public_key: Path = typer.Option(..., "--public-key", help="your OpenSSH public key file"),
    approval: str = typer.Option(None, "--approval", help="the tenant's approval id"),
    break_glass: str = typer.Option(None, "--break-glass", help="the reason, when there is no approval"),
    out: Path = typer.Option(None, "--out", help="where to write the certificate"),
    json_out: bool = typer.Option(False, "--json", help="print the answer as JSON"),
) -> None:
    """An operator's certificate to a node (provider keys; self-operated clusters need --approval or --break-glass)."""
    body: dict[str, Any] = {"public_key": _public_key(public_key)}
    if approval:
        body["approval_id"] = approval
    if break_glass:
        body["break_glass_reason"] = break_glass
    _write(_client().post(f"/v1/nodes/{node_id}/operator-certificates", body), _cert_path(public_key, out), json_out)
