"""Invoices, credit notes and SLA reports as HTML (escaped, self-contained, an SVG availability chart)
and PDF (reportlab). Inputs are the API's plain-data views; outputs are ``str`` (HTML) or ``bytes`` (PDF)."""

from __future__ import annotations

import html
import io
from typing import Any

_STYLE = (
    "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #999;padding:4px 8px}"
)


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def invoice_rows(inv: dict[str, Any]) -> list[list[Any]]:
    rows = [
        [ln["description"], ln["quantity"], ln["unit"], ln["unit_price_usd"], ln["amount_usd"]] for ln in inv["lines"]
    ]
    rows.append(["Subtotal", "", "", "", inv["subtotal_usd"]])
    for c in inv["credits"]:
        rows.append([f"SLA credit {c['number']}", "", "", "", f"-{c['amount_usd']}"])
    rows.append(["Total (USD, before tax)", "", "", "", inv["total_usd"]])
    return rows


HEADERS = ["Item", "Quantity", "Unit", "Unit price (USD)", "Amount (USD)"]


def invoice_html(inv: dict[str, Any]) -> str:
    """The invoice as a self-contained HTML page."""
    title = f"Invoice {inv['number']} - {inv['month']}"
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>"
        f"<p>Tenant {html.escape(inv['tenant_id'])}</p>{_table(HEADERS, invoice_rows(inv))}</body></html>"
    )


def _chart(cluster: dict[str, Any]) -> str:
    """An SVG strip of the month: healthy share per evidence run (green full, red less), excluded grey."""
    total = sum(r["minutes"] for r in cluster["evidence"]) or 1
    x, parts = 0.0, []
    for r in cluster["evidence"]:
        w = 600 * r["minutes"] / total
        share = r["healthy_nodes"] / max(1, cluster["committed_nodes"])
        color = "#bbb" if r["excluded"] else ("#2a2" if share >= 1 else "#d33")
        parts.append(f"<rect x='{x:.2f}' y='0' width='{w:.2f}' height='20' fill='{color}'/>")
        x += w
    return f"<svg width='600' height='20' xmlns='http://www.w3.org/2000/svg'>{''.join(parts)}</svg>"


def report_html(rep: dict[str, Any]) -> str:
    """The SLA report as a self-contained HTML page with one availability chart per cluster."""
    title = f"SLA report {rep['month']} - tenant {rep['tenant_id']}"
    rows = [
        [
            c["cluster"],
            c["availability_percent"],
            c["target_percent"],
            "met" if c["met"] else "missed",
            c["credit_percent"],
        ]
        for c in rep["clusters"]
    ]
    charts = "".join(f"<h3>{html.escape(c['cluster'])}</h3>{_chart(c)}" for c in rep["clusters"])
    inc = rep["incidents"]
    prio = [
        [p, d["count"], d["mean_minutes_to_acknowledge"], d["mean_minutes_to_resolve"]]
        for p, d in inc["by_priority"].items()
    ]
    cap = [[k, v] for k, v in rep["capacity"].items()]
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1><h2>Availability</h2>"
        + _table(["Cluster", "Availability %", "Target %", "", "Credit %"], rows)
        + charts
        + "<h2>Incidents</h2>"
        + _table(["Priority", "Count", "Mean min to ack", "Mean min to resolve"], prio)
        + f"<p>P1 first response: {html.escape(str(inc['p1_first_response']))}</p><h2>Capacity</h2>"
        + _table(["Figure", "Value"], cap)
        + "</body></html>"
    )


def _pdf(title: str, tables: list[tuple[list[str], list[list[Any]]]]) -> bytes:
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

    buf = io.BytesIO()
    doc = SimpleDocTemplate(buf, pagesize=A4, title=title)
    styles = getSampleStyleSheet()
    story: list[Any] = [Paragraph(html.escape(title), styles["Title"])]
    for headers, rows in tables:
        t = Table([headers, *[[str(c) for c in r] for r in rows]], repeatRows=1)
        t.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.grey), ("FONTSIZE", (0, 0), (-1, -1), 8)]))
        story += [t, Spacer(1, 12)]
    doc.build(story)
    return buf.getvalue()


def invoice_pdf(inv: dict[str, Any]) -> bytes:
    """The invoice as a PDF document."""
    return _pdf(f"Invoice {inv['number']} - {inv['month']}", [(HEADERS, invoice_rows(inv))])


def report_pdf(rep: dict[str, Any]) -> bytes:
    """The SLA report as a PDF document."""
    rows = [
        [c["cluster"], c["availability_percent"], c["target_percent"], c["credit_percent"]] for c in rep["clusters"]
    ]
    prio = [
        [p, d["count"], d["mean_minutes_to_acknowledge"], d["mean_minutes_to_resolve"]]
        for p, d in rep["incidents"]["by_priority"].items()
    ]
    return _pdf(
        f"SLA report {rep['month']} - tenant {rep['tenant_id']}",
        [
            (["Cluster", "Availability %", "Target %", "Credit %"], rows),
            (["Priority", "Count", "Mean min to ack", "Mean min to resolve"], prio),
            (["Capacity", "Value"], [[k, v] for k, v in rep["capacity"].items()]),
        ],
    )
