"""``velyrix login``: check an API key against a control plane and store both (file mode 0600)."""

from __future__ import annotations

import typer

from velyrix import settings


def register(app: typer.Typer) -> None:
    app.command("login")(login)


def login(
    endpoint: str = typer.Option("http://127.0.0.1:8600", "--endpoint", help="URL of the control plane"),
    api_key: str = typer.Option(None, "--api-key", help="vlx_... key (asked for when omitted; or VELYRIX_API_KEY)"),
    ca_bundle: str | None = typer.Option(
        None, "--ca-bundle", help="PEM CA file that signed an https endpoint's certificate (or VELYRIX_CA_BUNDLE)"
    ),
    sso: bool = typer.Option(False, "--sso", help="sign in through your tenant's identity provider (browser)"),
    tenant: str = typer.Option(None, "--tenant", help="with --sso: your tenant's name"),
    no_browser: bool = typer.Option(False, "--no-browser", help="with --sso: print the sign-in URL only"),
) -> None:
    """Store the control plane's endpoint and your API key (or, with --sso, a key from your sign-in)."""
    from rich.console import Console

    from velyrix import errors
    from velyrix.cli import client

    ca_bundle = ca_bundle or settings.load().client.ca_bundle or None
    if sso:
        from velyrix.cli import login_sso

        if not tenant:
            raise errors.InvalidInputError("--sso needs --tenant", hint="e.g. velyrix login --sso --tenant acme")
        err = Console(stderr=True, highlight=False, soft_wrap=True)
        got = login_sso.sso_login(
            endpoint, tenant, ca_bundle=ca_bundle, open_browser=not no_browser, say=lambda t: err.print(t, markup=False)
        )
        path = client.save_credentials(endpoint, got["api_key"], ca_bundle)
        Console().print(
            f"Signed in to {endpoint} as {got['user']} ({got['role']}); key {got['key_id']} expires "
            f"{got['expires_at']}; credentials in {path} (mode 0600)",
            markup=False,
        )
        return
    key = api_key or settings.load().client.api_key or typer.prompt("API key", hide_input=True)
    if not key.startswith("vlx_"):
        raise errors.InvalidInputError("an API key starts with 'vlx_'", hint="copy the key printed when it was created")
    logged = client.Client(endpoint=endpoint.rstrip("/"), api_key=key, ca_bundle=ca_bundle)
    who = logged.get("/v1/tenants", limit=1)
    pinned = _pin_keys(logged)  # a changed key refuses the login before anything is stored
    path = client.save_credentials(endpoint, key, ca_bundle)
    tenants = ", ".join(t["name"] for t in who.get("items", [])) or "(provider)"
    Console().print(f"Logged in to {endpoint} as tenant {tenants}; credentials in {path} (mode 0600)")
    Console(soft_wrap=True).print(pinned, markup=False)


def _pin_keys(logged: object) -> str:
    """Pin the acceptance-signing key of every region of the control plane (``cli.known_keys``); the line
    saying so. ``KeyChangedError`` (exit 2) when one differs from the key pinned before."""
    from velyrix import errors
    from velyrix.cli import known_keys

    try:
        got = known_keys.pin_all(logged)
    except errors.RemoteError as exc:  # a key without regions:read: verify pins on first use instead
        if exc.http_status not in (401, 403, 404):
            raise
        return f"Region signing keys not pinned ({exc.message}); velyrix verify acceptance pins them on first use"
    return "Region signing keys: " + ", ".join(
        f"{region} {kid} ({'pinned now' if new else 'as pinned'})" for region, kid, new in got
    )
