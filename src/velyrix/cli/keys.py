"""``velyrix keys create|list|revoke|rotate``: the API keys of the logged-in tenant (or provider).

A new key never has more rights than the key (or user) that creates it, and never outlives it: the
control plane narrows or refuses (``velyrix.controlplane.auth.principals.issue_key``). Secrets are printed
once, on their own line, so that ``velyrix keys create ... | tail -1`` captures one.
"""

from __future__ import annotations

import re
from typing import Any

import typer

from velyrix import errors

keys_app = typer.Typer(help="Create, list, revoke and rotate API keys.", no_args_is_help=True)
_DURATION = re.compile(r"(\d+)\s*([smhdw]?)")
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def register(app: typer.Typer) -> None:
    from velyrix.cli.customer_keys import cmk_app

    keys_app.add_typer(cmk_app, name="cmk")
    app.add_typer(keys_app, name="keys")


def parse_duration_s(text: str, flag: str) -> int:
    """``90d``, ``12h``, ``30m``, ``3600`` (seconds) into seconds; an input error (exit 2) otherwise."""
    match = _DURATION.fullmatch(text.strip().lower())
    if not match or int(match.group(1)) == 0:
        raise errors.InvalidInputError(
            f"{flag} {text!r} is not a duration", hint=f"a number with s, m, h, d or w, e.g. {flag} 90d"
        )
    return int(match.group(1)) * _UNIT_S[match.group(2)]


def _client() -> Any:
    from velyrix.cli import client

    return client.Client.from_login()


def _when(value: str | None) -> str:
    return value[:16].replace("T", " ") + " UTC" if value else "-"


def _last_use(key: dict[str, Any]) -> str:
    if not key.get("last_used_at"):
        return "never"
    where = key.get("last_used_address")
    return _when(key["last_used_at"]) + (f" from {where}" if where else "")


def _state(key: dict[str, Any]) -> str:
    if key.get("revoked_at"):
        return "revoked"
    return "active"


@keys_app.command("create")
def create(
    name: str = typer.Argument(..., help="who or what holds the key, e.g. ci-deploy"),
    role: str = typer.Option("viewer", "--role", help="owner, admin, member, viewer, billing (provider: operator)"),
    scope: list[str] = typer.Option(None, "--scope", help="narrow to these scopes (repeat the flag)"),
    expires_in: str = typer.Option(None, "--expires-in", help="lifetime: 90d, 12h, 30m (default: never)"),
    description: str = typer.Option("", "--description", help="what the key is for"),
    json_out: bool = typer.Option(False, "--json", help="print the created key as JSON"),
) -> None:
    """Create a key (its secret is shown once: store it now)."""
    from velyrix.cli import common

    body: dict[str, Any] = {"name": name, "role": role, "description": description}
    if scope:
        body["scopes"] = list(scope)
    if expires_in:
        body["expires_in_s"] = parse_duration_s(expires_in, "--expires-in")
    key = _client().post("/v1/api-keys", body)
    if json_out:
        common.print_json(key)
        return
    out = common.console()
    out.print(f"key {key['id']} ({key['role']}, expires {_when(key['expires_at'])}); the secret, shown once:")
    typer.echo(key["secret"])


@keys_app.command("list")
def list_keys(
    revoked: bool = typer.Option(False, "--revoked", help="include revoked keys"),
    json_out: bool = typer.Option(False, "--json", help="print the keys as JSON"),
) -> None:
    """The keys of your tenant: role, scopes, expiry, description and last use (to the minute)."""
    from rich.markup import escape
    from rich.table import Table

    from velyrix.cli import common

    items = [k for k in _client().list_all("/v1/api-keys") if revoked or not k.get("revoked_at")]
    if json_out:
        common.print_json(items)
        return
    table = Table(title=f"API keys ({len(items)})")
    for column in ("id", "name", "role", "prefix", "state", "expires", "last used", "description", "scopes"):
        table.add_column(column, overflow="fold")
    for k in items:
        cells = (k["id"], k["name"], k["role"], k["prefix"], _state(k), _when(k.get("expires_at")), _last_use(k))
        texts = (*(str(c) for c in cells), k.get("description") or "", " ".join(k["scopes"]))
        table.add_row(*(escape(t) for t in texts))  # names and descriptions are user text, not markup
    common.console().print(table)


@keys_app.command("revoke")
def revoke(key_id: str = typer.Argument(..., help="the key's id (key_...)")) -> None:
    """Revoke a key: its next request answers 401."""
    from velyrix.cli import common

    key = _client().request("DELETE", f"/v1/api-keys/{_checked_id(key_id)}")[0]
    common.console().print(f"key {key['id']} ({key['name']}) revoked at {_when(key['revoked_at'])}", markup=False)


@keys_app.command("rotate")
def rotate(
    key_id: str = typer.Argument(..., help="the key's id (key_...)"),
    grace: str = typer.Option(None, "--grace", help="let the old key work this long (e.g. 1h; default: none)"),
) -> None:
    """Replace a key by a new one with the same name, role, scopes, description and expiry."""
    from velyrix.cli import common

    body = {"grace_s": parse_duration_s(grace, "--grace")} if grace else {}
    key = _client().post(f"/v1/api-keys/{_checked_id(key_id)}/rotate", body)
    old = "keeps working for " + grace if grace else "is revoked"
    common.console().print(f"key {key_id} {old}; new key {key['id']}; the secret, shown once:", markup=False)
    typer.echo(key["secret"])


def _checked_id(key_id: str) -> str:
    if not re.fullmatch(r"key_[0-9a-f]{24}", key_id):
        raise errors.InvalidInputError(
            f"{key_id!r} is not a key id", hint="key ids look like key_018f3a2b4c5d9f8e7d6c5b4a (velyrix keys list)"
        )
    return key_id
