"""``velyrix audit forward``: the audit log to a SIEM's syslog receiver over TLS (RFC 5425), in OCSF or
CEF, through a disk spool (``controlplane/audit/export.py`` states what is guaranteed). It reads the log
through the API with the logged-in key (an auditor key forwards every event; a tenant key its own)."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

import typer

from velyrix.cli import common

EXAMPLES = """

Examples:

  velyrix audit forward --to siem.example.com:6514 --ca-bundle siem-ca.pem

  velyrix audit forward --to 10.0.0.5:6514 --ca-bundle ca.pem --format cef --once
"""


def _address(to: str) -> tuple[str, int]:
    from velyrix import errors

    host, sep, port = to.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise errors.InvalidInputError(
            f"--to {to!r}: expected HOST:PORT", hint="for example --to siem.example.com:6514 (6514: RFC 5425)"
        )
    return host.strip("[]"), int(port)


def _spool_dir(given: Path | None, host: str, port: int, fmt: str) -> Path:
    if given is not None:
        return given
    from velyrix import settings

    tag = hashlib.sha256(f"{host}:{port}/{fmt}".encode()).hexdigest()[:12]
    return settings.load().paths.home / "audit" / "siem" / f"{host}-{port}-{fmt}-{tag}"


def forward(
    to: str | None = typer.Option(
        None, "--to", metavar="HOST:PORT", help="The syslog receiver (TLS, RFC 5425); env VELYRIX_SIEM_TO."
    ),
    ca_bundle: Path | None = typer.Option(
        None, "--ca-bundle", metavar="PEM", help="CAs that may sign its certificate; env VELYRIX_SIEM_CA_BUNDLE."
    ),
    server_name: str | None = typer.Option(None, "--server-name", help="Name to check in its certificate."),
    client_cert: Path | None = typer.Option(None, "--client-cert", metavar="PEM", help="Mutual TLS: our cert."),
    client_key: Path | None = typer.Option(None, "--client-key", metavar="PEM", help="Mutual TLS: its key."),
    fmt: str | None = typer.Option(
        None, "--format", help="ocsf (OCSF 1.3.0 JSON, the default) or cef (ArcSight CEF); env VELYRIX_SIEM_FORMAT."
    ),
    spool: Path | None = typer.Option(None, "--spool", help="Spool directory (default under $VELYRIX_HOME)."),
    batch_size: int = typer.Option(200, "--batch-size", min=1, max=1000, help="Events per TLS session."),
    interval_s: float = typer.Option(1.0, "--interval", min=0.05, help="Seconds between polls of the log."),
    once: bool = typer.Option(False, "--once", help="Deliver what the log holds now, then exit."),
) -> None:
    """Forward the audit log to a SIEM over syslog/TLS; resumes from the last confirmed event."""
    from velyrix import errors, settings
    from velyrix.cli import client as client_mod
    from velyrix.controlplane.audit import export

    configured = settings.load().siem
    to, fmt = to or configured.to, fmt or configured.format
    ca_bundle = ca_bundle or (Path(configured.ca_bundle) if configured.ca_bundle else None)
    if not to or ca_bundle is None:
        raise errors.InvalidInputError(
            "no SIEM receiver configured",
            hint="pass --to HOST:PORT and --ca-bundle PEM (or VELYRIX_SIEM_TO/_CA_BUNDLE)",
        )
    host, port = _address(to)
    for path in (ca_bundle, client_cert, client_key):
        if path is not None and not path.is_file():
            raise errors.InvalidInputError(f"{path}: no such file", hint="pass a readable PEM file")
    api = client_mod.Client.from_login()

    def source(start: int, limit: int) -> dict[str, Any]:
        return dict(api.get("/v1/audit-log/entries", start=start, limit=limit))

    dest = export.Destination(host, port, ca_bundle, server_name, client_cert, client_key)
    exporter = export.Exporter(source, dest, _spool_dir(spool, host, port, fmt), fmt=fmt, batch_size=batch_size)
    con = common.console(stderr=True)
    start = exporter.spool.position()
    if once:
        exporter.drain()
        con.print(
            f"forwarded {exporter.delivered} events to {host}:{port} ({fmt}); next leaf {exporter.spool.position()}"
        )
        return
    con.print(f"forwarding the audit log from leaf {start} to {host}:{port} ({fmt}); Ctrl-C stops")
    stop = threading.Event()
    try:
        exporter.follow(stop, interval_s=interval_s)
    except KeyboardInterrupt:
        stop.set()
    con.print(f"forwarded {exporter.delivered} events; next leaf {exporter.spool.position()}")


forward.__doc__ = (forward.__doc__ or "") + EXAMPLES
