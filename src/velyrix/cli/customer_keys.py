"""``velyrix keys cmk register|list|rotate|destroy|grant|revoke-grant``: the tenant's customer-managed keys.

A customer key lives in the tenant's own HSM (PKCS#11 token) or key manager (KMIP); Velyrix keeps where it
is and a sealed grant to use it, never the key. The credential of a grant (a PIN, a client certificate) is
read from files, never from the command line, and is never printed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer

from velyrix import errors

cmk_app = typer.Typer(help="Customer-managed keys in your HSM (PKCS#11) or key manager (KMIP).", no_args_is_help=True)
SOFTHSM2 = "/usr/lib/softhsm/libsofthsm2.so"
_ENDPOINT = re.compile(r"^([A-Za-z0-9.-]{1,253}):(\d{1,5})$")


def _client() -> Any:
    from velyrix.cli import client

    return client.Client.from_login()


def read_text(path: str, flag: str) -> str:
    """The text of ``path`` (an input error naming ``flag`` when it cannot be read)."""
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise errors.InvalidInputError(
            f"{flag} {path}: {exc.strerror or exc}", hint=f"pass a readable file to {flag}"
        ) from None


def credential(pin_file: str | None, client_cert: str | None, client_key: str | None) -> dict[str, str]:
    """The grant's credential from files: a PIN (first line), or a KMIP client certificate and its key."""
    if pin_file:
        lines = read_text(pin_file, "--pin-file").splitlines()
        if not lines or not lines[0].strip():
            raise errors.InvalidInputError(
                f"--pin-file {pin_file} is empty", hint="write the token's user PIN on its first line"
            )
        return {"pin": lines[0].strip()}
    if client_cert and client_key:
        return {
            "client_cert_pem": read_text(client_cert, "--client-cert"),
            "client_key_pem": read_text(client_key, "--client-key"),
        }
    raise errors.InvalidInputError(
        "no credential given", hint="PKCS#11: --pin-file FILE; KMIP: --client-cert FILE --client-key FILE"
    )


def resolve(name_or_id: str) -> dict[str, Any]:
    """The customer key called or numbered ``name_or_id``."""
    keys = _client().list_all("/v1/customer-keys")
    for key in keys:
        if name_or_id in (key["id"], key["name"]):
            return dict(key)
    known = ", ".join(k["name"] for k in keys) or "(none)"
    raise errors.InvalidInputError(
        f"no customer key {name_or_id!r}", hint=f"your keys: {known} (velyrix keys cmk list)"
    )


def _show(key: dict[str, Any], what: str) -> None:
    where = f"{key['reference']}, version {key['key_version']}, {key['state']}"
    typer.echo(f"customer key {key['id']} ({key['name']}) {what}: {where}")  # one line, never wrapped


@cmk_app.command("register")
def register(
    name: str = typer.Argument(..., help="a name for the key in Velyrix, e.g. training-data"),
    pkcs11_token: str = typer.Option(None, "--pkcs11-token", help="PKCS#11: the token's label"),
    key_label: str = typer.Option(None, "--key-label", help="PKCS#11: the AES-256 key's label"),
    pkcs11_module: str = typer.Option(
        SOFTHSM2, "--pkcs11-module", help="PKCS#11: the HSM's library (one the region allows)"
    ),
    pin_file: str = typer.Option(None, "--pin-file", help="PKCS#11: file holding the token's user PIN"),
    kmip: str = typer.Option(None, "--kmip", help="KMIP: the key manager as HOST:PORT"),
    key_id: str = typer.Option(None, "--key-id", help="KMIP: the AES-256 key's Unique Identifier"),
    ca: str = typer.Option(None, "--ca", help="KMIP: the key manager's CA certificate (PEM file)"),
    client_cert: str = typer.Option(None, "--client-cert", help="KMIP: the client certificate you issued to Velyrix"),
    client_key: str = typer.Option(None, "--client-key", help="KMIP: that certificate's private key (PEM file)"),
) -> None:
    """Register a key that stays in your HSM or key manager (Velyrix wraps and unwraps through it)."""
    body: dict[str, Any] = {"name": name}
    if kmip:
        match = _ENDPOINT.fullmatch(kmip)
        if not match or not key_id or not ca:
            raise errors.InvalidInputError(
                f"--kmip {kmip!r} needs HOST:PORT, --key-id and --ca",
                hint="e.g. --kmip kms.example.com:5696 --key-id 42 --ca ca.pem",
            )
        body["provider"] = "kmip"
        body["kmip"] = {"host": match[1], "port": int(match[2]), "key_id": key_id, "ca_pem": read_text(ca, "--ca")}
    elif pkcs11_token and key_label:
        body["provider"] = "pkcs11"
        body["pkcs11"] = {"module": pkcs11_module, "token_label": pkcs11_token, "key_label": key_label}
    else:
        raise errors.InvalidInputError(
            "say where the key lives",
            hint="--pkcs11-token T --key-label L --pin-file F, or --kmip HOST:PORT --key-id ID --ca F ...",
        )
    body["credential"] = credential(pin_file, client_cert, client_key)
    _show(_client().post("/v1/customer-keys", body), "registered")


@cmk_app.command("list")
def list_keys(json_out: bool = typer.Option(False, "--json", help="print the keys as JSON")) -> None:
    """Your customer keys: where each lives, its version and state, and how many volumes it wraps."""
    from rich.markup import escape
    from rich.table import Table

    from velyrix.cli import common

    items = _client().list_all("/v1/customer-keys")
    if json_out:
        common.print_json(items)
        return
    table = Table(title=f"customer keys ({len(items)})")
    for column in ("id", "name", "reference", "version", "state", "volumes"):
        table.add_column(column, overflow="fold")
    for k in items:
        cells = (k["id"], k["name"], k["reference"], k["key_version"], k["state"], k["volumes"])
        table.add_row(*(escape(str(c)) for c in cells))
    common.console().print(table)


@cmk_app.command("rotate")
def rotate(
    key: str = typer.Argument(..., help="the customer key (name or cmk_ id)"),
    key_label: str = typer.Option(None, "--key-label", help="PKCS#11: the new key's label in the same token"),
    key_id: str = typer.Option(None, "--key-id", help="KMIP: the new key's Unique Identifier"),
) -> None:
    """Rewrap every volume's data key with your new key (no data is rewritten); then you may destroy the old one."""
    if not key_label and not key_id:
        raise errors.InvalidInputError("name the new key", hint="--key-label LABEL (PKCS#11) or --key-id ID (KMIP)")
    row = resolve(key)
    body = {"key_label": key_label} if key_label else {"key_id": key_id}
    _show(
        _client().post(f"/v1/customer-keys/{row['id']}/rotate", body), f"rotated ({row['volumes']} data keys rewrapped)"
    )


@cmk_app.command("destroy")
def destroy(
    key: str = typer.Argument(..., help="the customer key (name or cmk_ id)"),
    yes: bool = typer.Option(False, "--yes", help="confirm: every volume under the key becomes unreadable for good"),
) -> None:
    """Destroy the key in your HSM or key manager: its volumes can never be read again (crypto-shredding)."""
    if not yes:
        raise errors.InvalidInputError("destroying a key shreds every volume under it", hint="add --yes to confirm")
    row = resolve(key)
    _show(_client().post(f"/v1/customer-keys/{row['id']}/destroy", {}), "destroyed")


@cmk_app.command("grant")
def grant(
    key: str = typer.Argument(..., help="the customer key (name or cmk_ id)"),
    pin_file: str = typer.Option(None, "--pin-file", help="PKCS#11: file holding the token's user PIN"),
    client_cert: str = typer.Option(None, "--client-cert", help="KMIP: client certificate (PEM file)"),
    client_key: str = typer.Option(None, "--client-key", help="KMIP: its private key (PEM file)"),
) -> None:
    """Grant Velyrix the use of the key again (a new PIN or client certificate), after a probe."""
    row = resolve(key)
    body = {"credential": credential(pin_file, client_cert, client_key)}
    _show(_client().request("PUT", f"/v1/customer-keys/{row['id']}/grant", json_body=body)[0], "granted")


@cmk_app.command("revoke-grant")
def revoke_grant(key: str = typer.Argument(..., help="the customer key (name or cmk_ id)")) -> None:
    """Withdraw Velyrix's grant: nothing under the key can be read until you grant again."""
    row = resolve(key)
    _show(_client().request("DELETE", f"/v1/customer-keys/{row['id']}/grant")[0], "grant revoked")
