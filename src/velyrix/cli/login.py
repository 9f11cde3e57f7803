"""``velyrix login``: check an API key against a control plane and store both (file mode 0600)."""

from __future__ import annotations

import typer

from velyrix import settings


def register(app: typer.Typer) -> None:
    app.command("login")(login)


def login(
    endpoint: str = typer.Option("http://127.0.0.1:8600", "--endpoint", help="URL of the control plane"),
    api_key: str = typer.Option(None, "--api-key", help="vlx_... key (asked for when omitted; or VELYRIX_API_KEY)"),
    ca_bundle: str = typer.Option(
        None, "--ca-bundle", help="PEM CA file that signed an https endpoint's certificate (or VELYRIX_CA_BUNDLE)"
    ),
) -> None:
    """Store the control plane's endpoint and your API key for later commands."""
    from rich.console import Console

    from velyrix import errors
    from velyrix.cli import client

    key = api_key or settings.load().client.api_key or typer.prompt("API key", hide_input=True)
    if not key.startswith("vlx_"):
        raise errors.InvalidInputError("an API key starts with 'vlx_'", hint="copy the key printed when it was created")
    bundle = ca_bundle or settings.load().client.ca_bundle or None
    who = client.Client(endpoint=endpoint.rstrip("/"), api_key=key, ca_bundle=bundle).get("/v1/tenants", limit=1)
    path = client.save_credentials(endpoint, key, bundle)
    tenants = ", ".join(t["name"] for t in who.get("items", [])) or "(provider)"
    Console().print(f"Logged in to {endpoint} as tenant {tenants}; credentials in {path} (mode 0600)")
