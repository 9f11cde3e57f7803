"""``velyrix noc incidents|show|ack|note|mitigate|resolve``, ``velyrix invoice list|show``,
``velyrix sla report`` (through the API of ``velyrix login``) and ``velyrix admin contract set`` (directly
in the database, like the other ``admin`` commands). HTML and PDF are rendered here from the API's JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from velyrix.cli import common

noc_app = typer.Typer(help="The NOC's incidents: list, show, acknowledge, update, resolve.", no_args_is_help=True)
invoice_app = typer.Typer(help="Invoices (JSON, HTML or PDF).", no_args_is_help=True)
sla_app = typer.Typer(help="Monthly SLA reports.", no_args_is_help=True)
contract_app = typer.Typer(help="Per-tenant SLA contracts (HCL).", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(noc_app, name="noc")
    app.add_typer(invoice_app, name="invoice")
    app.add_typer(sla_app, name="sla")


def _client() -> Any:
    from velyrix.cli import client as client_mod

    return client_mod.Client.from_login()


def _esc(text: Any) -> str:
    from rich.markup import escape

    return escape(str(text))


@noc_app.command("incidents")
def incidents(
    state: str = typer.Option(None, help="open, acknowledged, mitigated, resolved or postmortem"),
    priority: str = typer.Option(None, help="P1 .. P4"),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List incidents (tenants: their own)."""
    from rich.table import Table

    items = _client().list_all("/v1/incidents", state=state, priority=priority)
    if json_out:
        common.print_json(items)
        return
    table = Table(title="Incidents")
    for col in ("id", "number", "priority", "state", "opened", "title"):
        table.add_column(col, no_wrap=col in ("id", "number"))
    for i in items:
        table.add_row(i["id"], i["number"], i["priority"], i["state"], str(i["opened_at"])[:19], _esc(i["title"]))
    common.console().print(table)


@noc_app.command("show")
def show(
    incident_id: str = typer.Argument(..., help="incident id (inc_...)"), json_out: bool = typer.Option(False, "--json")
) -> None:
    """One incident with its timeline."""
    inc = _client().get(f"/v1/incidents/{incident_id}")
    if json_out:
        common.print_json(inc)
        return
    con = common.console()
    con.print(f"[bold]{inc['number']}[/] {inc['priority']} [bold]{inc['state']}[/]: {_esc(inc['title'])}")
    for e in inc["timeline"]:
        con.print(f"  {str(e['at'])[:19]}  {e['kind']:<7} {_esc(e['actor'])}: {_esc(e['text'])}")


def _act(incident_id: str, action: str, text: str) -> None:
    inc = _client().post(f"/v1/incidents/{incident_id}/actions", {"action": action, "text": text})
    common.console().print(f"{inc['number']} is {inc['state']}")


@noc_app.command("ack")
def ack(incident_id: str, text: str = typer.Option("acknowledged", "--text", "-m", help="first response")) -> None:
    """Acknowledge an incident (first response)."""
    _act(incident_id, "ack", text)


@noc_app.command("note")
def note(incident_id: str, text: str = typer.Argument(..., help="the update")) -> None:
    """Add an update to an incident's timeline (resets the update timer)."""
    _act(incident_id, "note", text)


@noc_app.command("mitigate")
def mitigate(incident_id: str, text: str = typer.Option("impact removed", "--text", "-m")) -> None:
    """Mark an incident mitigated."""
    _act(incident_id, "mitigate", text)


@noc_app.command("resolve")
def resolve(incident_id: str, text: str = typer.Option("resolved", "--text", "-m")) -> None:
    """Resolve an incident."""
    _act(incident_id, "resolve", text)


def _write(path: Path, data: str | bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data.encode() if isinstance(data, str) else data)
    tmp.replace(path)
    common.console(stderr=True).print(f"wrote {_esc(path)}")


@invoice_app.command("list")
def invoice_list(
    month: str = typer.Option(None, help="YYYY-MM"), json_out: bool = typer.Option(False, "--json")
) -> None:
    """Your invoices (roles owner and billing)."""
    from rich.table import Table

    items = _client().list_all("/v1/invoices", month=month)
    if json_out:
        common.print_json(items)
        return
    table = Table(title="Invoices")
    for col in ("id", "number", "month", "subtotal USD", "credits USD", "total USD"):
        table.add_column(col, no_wrap=True)
    for i in items:
        table.add_row(i["id"], i["number"], i["month"], i["subtotal_usd"], i["credits_applied_usd"], i["total_usd"])
    common.console().print(table)


@invoice_app.command("show")
def invoice_show(
    invoice_id: str,
    json_out: bool = typer.Option(False, "--json"),
    html: Path = typer.Option(None, "--html", help="write HTML to this file"),
    pdf: Path = typer.Option(None, "--pdf", help="write PDF to this file"),
) -> None:
    """One invoice: lines, credits applied, total."""
    from velyrix.ops.billing import rendering

    inv = _client().get(f"/v1/invoices/{invoice_id}")
    if html:
        _write(html, rendering.invoice_html(inv))
    if pdf:
        _write(pdf, rendering.invoice_pdf(inv))
    if json_out:
        common.print_json(inv)
    elif not (html or pdf):
        con = common.console()
        for row in rendering.invoice_rows(inv):
            con.print(f"{_esc(row[0]):<70} {row[4]:>14}")


@sla_app.command("report")
def sla_report(
    tenant: str = typer.Option(..., "--tenant", help="tenant id (ten_...)"),
    month: str = typer.Option(..., "--month", help="YYYY-MM"),
    json_out: bool = typer.Option(False, "--json"),
    html: Path = typer.Option(None, "--html", help="write HTML (with charts) to this file"),
    pdf: Path = typer.Option(None, "--pdf", help="write PDF to this file"),
) -> None:
    """A tenant's monthly SLA report: availability per cluster, incidents, capacity."""
    from velyrix.ops.billing import rendering, views

    views.check_month(month)
    rep = _client().get(f"/v1/sla-reports/{tenant}", month=month)
    if html:
        _write(html, rendering.report_html(rep))
    if pdf:
        _write(pdf, rendering.report_pdf(rep))
    if json_out:
        common.print_json(rep)
    elif not (html or pdf):
        con = common.console()
        for c in rep["clusters"]:
            verdict = "met" if c["met"] else f"missed: credit {c['credit_percent']}%"
            con.print(
                f"{_esc(c['cluster']):<30} {c['availability_percent']:>8}% (target {c['target_percent']}%) {verdict}"
            )


@contract_app.command("set")
def contract_set(
    tenant: str = typer.Argument(..., help="tenant name or id"),
    file: Path = typer.Argument(..., help="an HCL contract file", exists=True, dir_okay=False),
) -> None:
    """Set a tenant's SLA contract from an HCL file (every problem reported with file:line:column)."""
    from velyrix import errors
    from velyrix.cli import admin_audit
    from velyrix.controlplane import db
    from velyrix.controlplane.db.models import noc as models_noc
    from velyrix.ops.sla import contract_hcl

    terms = contract_hcl.loads(file.read_text(), str(file))
    db.upgrade()
    with db.session() as s:
        row = (
            s.query(db.models.Tenant)
            .filter((db.models.Tenant.name == tenant) | (db.models.Tenant.id == tenant))
            .first()
        )
        if row is None:
            raise errors.NotFoundError(kind="tenant", name=tenant, hint="velyrix admin create-tenant NAME")
        found = s.query(models_noc.SlaContract).filter_by(tenant_id=row.id).first()
        if found is None:
            found = models_noc.SlaContract(tenant_id=row.id, name=terms.name, terms={}, set_by="cli:velyrix-admin")
            s.add(found)
        found.name, found.terms, found.source = terms.name, terms.to_dict(), file.read_text()
        admin_audit.record(s, "contracts.set", f"contracts/{row.id}", row.id)
    typer.echo(f"contract {terms.name} set for tenant {row.name}: target {terms.availability_target_percent}%")
