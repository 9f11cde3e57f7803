"""``velyrix plan``'s connectivity section: each private link, BGP session, VPN and DDoS protection
line with its monthly price, and the clouds' own port-hour estimate apart."""

from __future__ import annotations

from typing import Any

from velyrix.cli import plain_layout
from velyrix.cli.tables import Table


def render(con: Any, section: dict[str, Any]) -> None:
    """Print ``planners.connectivity.plan``'s result as one table."""
    table = Table(title="Connectivity (monthly, USD)", title_justify="left", title_style="bold")
    for col, justify in (("Resource", "left"), ("What", "left"), ("Velyrix", "right"), ("Cloud (estimate)", "right")):
        table.add_column(col, justify=justify)
    for item in section["items"]:
        cloud = item.get("cloud_estimate")
        table.add_row(
            plain_layout.escape(item["address"]),
            plain_layout.escape(item["summary"]),
            f"${item['cost']['monthly_usd']:,.2f}",
            f"${cloud['monthly_usd']:,.2f}" if cloud else "",
        )
    table.add_row(
        "[bold]Total[/]",
        "",
        f"[bold]${section['monthly_usd']:,.2f}[/]",
        f"${section['cloud_estimate_monthly_usd']:,.2f}",
    )
    con.print(table)
