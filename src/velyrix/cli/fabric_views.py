"""Rendering of a fabric section (``fabric_section`` / ``FabricPlan.to_dict()`` + verification), shared by
``velyrix fabric`` and ``velyrix plan``, as a ``cli.tables.Table`` (printed by rich or the plain renderer)."""

from __future__ import annotations

from typing import Any

from velyrix.cli.tables import Table


def render_fabric(con: Any, fab: dict[str, Any]) -> None:
    """Print the three planes and the verification of a fabric section."""
    c = fab["compute"]
    sw, cab = c["switches"], c["cables"]
    table = Table(
        title=f"Network: {fab['fabric']} ({c['tiers']} tiers, rail-optimized)",
        show_header=False,
        title_justify="left",
        title_style="bold",
    )
    table.add_column("key", style="cyan")
    table.add_column("value")
    table.add_row(
        "Compute switches",
        f"{sw['leaf']} leaves + {sw['spine']} spines"
        + (f" + {sw['core']} cores" if sw["core"] else "")
        + f" = {sw['total']} x {c['switch_model']}"
        f" ({c['radix']} ports at {c['link_gbps']}G)",
    )
    table.add_row(
        "Scalable units",
        f"{c['scalable_units']} x {c['su_nodes']} nodes ({c['cabled_nodes']} cabled), "
        f"{c['rails']} rails; leaf {c['leaf_ports']['down']} down / {c['leaf_ports']['up']} up",
    )
    table.add_row(
        "Cables",
        f"node-leaf {cab['node_leaf']:,}, leaf-spine {cab['leaf_spine']:,}"
        + (f", spine-core {cab['spine_core']:,}" if cab["spine_core"] else "")
        + f"; transceivers {c['transceivers']['node_side']:,} node + "
        f"{c['transceivers']['switch_side']:,} switch",
    )
    table.add_row(
        "GPU link / bisection",
        f"{c['link_gbps']} Gb/s per GPU; {c['bisection_gbps'] / 1000:,.1f} Tb/s at {c['oversubscription']:g}:1",
    )
    sharp = c["sharp"]
    table.add_row(
        "SHARP",
        f"{sharp['trees_per_job']} trees per job (one per rail), up to "
        f"{sharp['concurrent_multi_rail_jobs_max']} concurrent jobs, aggregation manager on "
        f"{sharp['aggregation_manager']['hosts']} hosts"
        if sharp["enabled"]
        else f"off ({sharp.get('reason', '')})",
    )
    iso = c["isolation"]
    table.add_row(
        "Tenant isolation",
        f"PKeys {iso['range']} ({iso['usable']:,} usable, {iso['per_port_max']} per port)"
        if iso["mechanism"] == "pkey"
        else f"VLAN/VRF and a VXLAN VNI ({iso['vni_range']}) per tenant; RoCE port test on delivery",
    )
    ver = c.get("verification")
    if ver:
        state = "[green]verified[/]" if ver["ok"] else "[red]FAILED[/]"
        text = (
            f"{state}: non-blocking {ver['nonblocking']}, rail-aligned {ver['rail_aligned']}, max-flow "
            f"bisection {ver['bisection_gbps'] / 1000:,.1f} Tb/s, {ver['rails_checked']} rails, ECMP paths "
            f"{ver['ecmp_paths']['min']}-{ver['ecmp_paths']['max']}"
        )
        if ver["failures"]:
            text += "\n" + "\n".join(f"  - {f}" for f in ver["failures"])
        table.add_row("Graph verification", text)
    st = fab["storage_plane"]
    table.add_row(
        "Storage plane",
        f"{st['switches']} x {st['switch_model']} at {st['link_gbps']}G "
        f"({st['oversubscription']:g}:1 at the nodes); target {st['target_read_gb_s']:,.0f} GB/s read "
        f"({st['target_source']}), deliverable {st['deliverable_gb_s']:,.0f} GB/s"
        + "".join(f"\n[yellow]note:[/] {n}" for n in st["notes"]),
    )
    m = fab["management_plane"]
    table.add_row(
        "Management plane",
        f"OOB {m['out_of_band']['switches']} x {m['out_of_band']['switch_model']} "
        f"({m['out_of_band']['ports_used']} ports), in-band {m['in_band']['leaves']}+"
        f"{m['in_band']['spines']} x {m['in_band']['switch_model']}, {m['jump_hosts']} jump host, egress "
        f"{m['egress']['switches']} x {m['egress']['switch_model']} dual-homed "
        f"{'+'.join(str(g) for g in m['egress']['uplinks_gbps'])}G",
    )
    con.print(table)


RENDERERS = {"fabric_plan": render_fabric}
