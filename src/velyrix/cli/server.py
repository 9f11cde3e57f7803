"""``velyrix server``, ``velyrix db upgrade`` and ``velyrix admin ...`` (out-of-band bootstrap)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from velyrix.cli import admin_audit

db_app = typer.Typer(help="The control plane's database.", no_args_is_help=True)
admin_app = typer.Typer(help="Bootstrap tenants and provider keys directly in the database.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.command("server")(server)
    app.add_typer(db_app, name="db")
    app.add_typer(admin_app, name="admin")
    from velyrix.cli import noc

    admin_app.add_typer(noc.contract_app, name="contract")


def server(
    host: str = typer.Option("127.0.0.1", help="address to listen on"),
    port: int = typer.Option(8600, help="TCP port"),
    workers: int = typer.Option(1, help="uvicorn worker processes (PostgreSQL for more than one)"),
    tls_cert: Path = typer.Option(None, "--tls-cert", help="serve HTTPS with this PEM certificate (chain)"),
    tls_key: Path = typer.Option(None, "--tls-key", help="the certificate's PEM private key"),
    tls_min_version: str = typer.Option("1.3", "--tls-min-version", help="1.3 (default) or 1.2 to allow TLS 1.2"),
    fleet_driver: str = typer.Option(
        None, "--fleet-driver", help="Also reconcile, on the twin served at this URL (velyrix sim serve)."
    ),
    fleet_token_file: Path = typer.Option(None, "--fleet-token-file", help="The token file `sim serve` wrote."),
    region: str = typer.Option("us-east-1", "--region", help="With --fleet-driver: the region to reconcile."),
    lease_s: float = typer.Option(15.0, "--lease-s", help="With --fleet-driver on PostgreSQL: lease period (s)."),
    lease_shards: int = typer.Option(32, "--lease-shards", help="Shards of the region's clusters leased out."),
) -> None:
    """Run the control-plane API (migrates the database first). OpenAPI at /openapi.json, docs at /docs.

    With --tls-cert/--tls-key it serves HTTPS, TLS 1.3 only unless --tls-min-version 1.2, with HSTS.
    With --fleet-driver it also reconciles, as one replica of several on one PostgreSQL (docs/production.md)."""
    import logging

    import uvicorn

    from velyrix.controlplane.identity import tls
    from velyrix.ops.service import create_app

    tls_options = tls.uvicorn_options(tls_cert, tls_key, tls_min_version)

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("alembic").setLevel(logging.WARNING)
    from velyrix.cli import common, serving
    from velyrix.controlplane import status

    if fleet_driver:
        if workers > 1:
            from velyrix import errors

            raise errors.InvalidInputError("--fleet-driver runs one worker per replica", hint="run more replicas")
        return _replica(host, port, tls_options, fleet_driver, fleet_token_file, region, lease_s, lease_shards)
    common.console(stderr=True).print(
        f"velyrix server: API on http://{host}:{port}; [yellow]{status.NO_RECONCILER}[/]", highlight=False
    )
    if workers > 1:
        create_app()  # migrate once, before the workers start
        uvicorn.run(
            serving.WORKER_APP,  # each worker: the app as below, its start-up objects frozen (gc.freeze)
            factory=True,
            host=host,
            port=port,
            workers=workers,
            **serving.uvicorn_options(),  # uvloop accepting in batches, httptools, requests bounded: cli/serving.py
            **tls_options,
        )
    else:
        from velyrix import settings

        serving.serve(create_app(noc_sweep_s=settings.load().noc.sweep_s), host, port, **tls_options)


def _replica(
    host: str,
    port: int,
    tls_options: dict[str, Any],
    url: str,
    token_file: Path | None,
    region: str,
    lease_s: float,
    shards: int,
) -> None:
    """The API and a reconciler on the twin at ``url`` (``velyrix.cli.fleet_replica``), one process."""
    from velyrix import errors, settings
    from velyrix.cli import common, fleet_replica, serving
    from velyrix.ops.service import create_app

    if token_file is None:
        raise errors.InvalidInputError("--fleet-driver needs --fleet-token-file", hint="the file sim serve wrote")
    app = create_app(noc_sweep_s=settings.load().noc.sweep_s)
    runtime, held = fleet_replica.start(app, url, token_file, region, lease_s=lease_s, shards=shards)
    common.console(stderr=True).print(
        f"velyrix server: API on http://{host}:{port}; reconciling {region} on the twin at {url}"
        + (f" as replica {held.replica} ({shards} shards, {lease_s:g} s leases)" if held else " (SQLite: alone)"),
        highlight=False,
    )
    try:
        serving.serve(app, host, port, **tls_options)
    finally:
        fleet_replica.stop(runtime, held)


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Apply the database migrations (SQLite under $VELYRIX_HOME or VELYRIX_DATABASE_URL)."""
    from velyrix.controlplane import db

    revision = db.upgrade()
    typer.echo(f"database {_safe_url(db.database_url())} at revision {revision}")


def _safe_url(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


@admin_app.command("create-tenant")
def create_tenant(
    name: str = typer.Argument(..., help="short unique name, e.g. acme"),
    display_name: str = typer.Option("", help="human name"),
) -> None:
    """Create a tenant and print its first owner key (shown once: store it now)."""
    import re

    from velyrix import errors
    from velyrix.controlplane import db
    from velyrix.controlplane.auth import principals

    if not re.fullmatch(r"[a-z][a-z0-9-]{1,62}", name):
        raise errors.InvalidInputError(
            f"invalid tenant name '{name}'", hint="lowercase letters, digits and '-', starting with a letter"
        )
    db.upgrade()
    with db.session() as s:
        if s.query(db.models.Tenant).filter_by(name=name).first() is not None:
            raise errors.ConflictError(f"tenant '{name}' exists", hint="pick another name")
        tenant = db.models.Tenant(name=name, display_name=display_name or name)
        s.add(tenant)
        s.flush()
        key, secret = principals.issue_key(s, tenant_id=tenant.id, name=f"{name} owner (bootstrap)", role="owner")
        admin_audit.record(s, "tenants.create", f"tenants/{tenant.id}", tenant.id)
        admin_audit.record(s, "api_keys.create", f"api-keys/{key.id}", tenant.id)
    typer.echo(f"tenant {name} ({tenant.id}) created; owner key {key.id}:")
    typer.echo(secret)


@admin_app.command("create-provider-key")
def create_provider_key(
    name: str = typer.Argument(..., help="who holds it, e.g. noc-alice"),
    role: str = typer.Option("operator", help="operator, auditor or physical-access (badge and door systems)"),
) -> None:
    """Create a provider key (NOC operator or auditor) and print it once."""
    from velyrix.controlplane import db
    from velyrix.controlplane.auth import principals

    db.upgrade()
    with db.session() as s:
        key, secret = principals.issue_key(s, tenant_id=None, name=name, role=role)
        admin_audit.record(s, "api_keys.create", f"api-keys/{key.id}", None)
    typer.echo(f"provider key {key.id} ({role}):")
    typer.echo(secret)
