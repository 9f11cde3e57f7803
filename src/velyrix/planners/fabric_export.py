"""Exports of a fabric plan, as text: topology JSON (for as-built comparison), Slurm ``topology.conf``
(tree plugin) and an SVG picture of the pod. Pure functions; the CLI writes the files.
"""

from __future__ import annotations

import json
import re
from xml.sax.saxutils import escape

from velyrix import errors
from velyrix.planners.fabric import FabricPlan
from velyrix.planners.fabric_topology import Topology, build_topology

TOPOLOGY_SCHEMA = "velyrix.fabric.topology/1"
RAIL_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")


def default_node_names(count: int) -> list[str]:
    """``node-0000`` ... for plans without real host names."""
    return [f"node-{i:04d}" for i in range(count)]


def topology_json(plan: FabricPlan, topology: Topology | None = None, node_names: list[str] | None = None) -> str:
    """Every switch and cable of the compute plane as JSON (schema ``velyrix.fabric.topology/1``).

    ``nic_links`` name the node, its NIC (``mlx5_<rail>``), the leaf and the 1-based leaf port;
    ``links`` carry switch-to-switch cable counts.
    """
    topo = topology if topology is not None else build_topology(plan)
    names = _names(plan, node_names)
    ports: dict[int, int] = {}
    nic_links = []
    for node, rail, leaf in sorted(topo.nic_links):
        port = node % plan.su_nodes + 1 if topo.switches[leaf].su == node // plan.su_nodes else None
        if port is None:  # a mis-cabled NIC: give it the next free port for the record
            ports[leaf] = ports.get(leaf, plan.compute.leaf_down) + 1
            port = ports[leaf]
        nic_links.append(
            {"node": names[node], "nic": f"mlx5_{rail}", "rail": rail, "leaf": topo.switches[leaf].name, "port": port}
        )
    doc = {
        "schema": TOPOLOGY_SCHEMA,
        "node_type": plan.node_type,
        "fabric": plan.fabric,
        "nodes": plan.nodes,
        "tiers": plan.compute.tiers,
        "link_gbps": plan.compute.link_gbps,
        "switch_model": plan.compute.switch_model,
        "switches": [
            {
                "name": s.name,
                "role": s.role,
                "radix": s.radix,
                "pod": s.pod,
                "su": s.su,
                "rail": s.rail,
                "group": s.group,
                "reserved_ports": s.reserved_ports,
            }
            for s in topo.switches
        ],
        "nic_links": nic_links,
        "links": [
            {"a": topo.switches[a].name, "b": topo.switches[b].name, "cables": n}
            for (a, b), n in sorted(topo.links.items())
        ],
    }
    return json.dumps(doc, indent=1)


def _names(plan: FabricPlan, node_names: list[str] | None) -> list[str]:
    names = node_names if node_names is not None else default_node_names(plan.nodes)
    if len(names) != plan.nodes:
        raise errors.InvalidInputError(
            f"{len(names)} node names for a plan of {plan.nodes} nodes",
            hint="give exactly one name per node, in node order",
        )
    return names


def hostlist(names: list[str]) -> str:
    """Slurm hostlist expression: ``node[000-031],gpu7``; runs of equal prefix and width are compressed."""
    out: list[str] = []
    run: tuple[str, int, int, int] | None = None  # prefix, width, first, last

    def flush() -> None:
        if run is not None:
            prefix, width, first, last = run
            out.append(
                f"{prefix}{first:0{width}d}" if first == last else f"{prefix}[{first:0{width}d}-{last:0{width}d}]"
            )

    for name in names:
        m = re.fullmatch(r"(.*?)(\d+)", name)
        if not m:
            flush()
            run = None
            out.append(name)
            continue
        prefix, digits = m.group(1), m.group(2)
        if run and run[0] == prefix and run[1] == len(digits) and int(digits) == run[3] + 1:
            run = (prefix, run[1], run[2], int(digits))
        else:
            flush()
            run = (prefix, len(digits), int(digits), int(digits))
    flush()
    return ",".join(out)


def slurm_topology(plan: FabricPlan, node_names: list[str]) -> str:
    """``topology.conf`` for Slurm's tree plugin (``TopologyPlugin=topology/tree``).

    Slurm's tree wants each node under one leaf switch, but a rail-optimized node sits on all the
    rail leaves of its SU; the SU (its rail leaves together) is therefore the leaf level, pods the
    middle level (3 tiers), and the spines (2 tiers) or cores (3 tiers) the root.
    """
    names = _names(plan, node_names)
    c = plan.compute
    lines = [
        f"# Slurm topology.conf (tree) by Velyrix: {plan.nodes} x {plan.node_type} on {plan.fabric}, "
        f"{c.tiers} tiers, {c.scalable_units} SUs of {c.su_nodes} nodes",
        "# One switch per SU: each node has one NIC on every rail leaf of its SU.",
    ]
    su_names = []
    for su in range(c.scalable_units):
        members = names[su * c.su_nodes : (su + 1) * c.su_nodes]
        su_name = f"su{su:02d}"
        su_names.append(su_name)
        leaves = ",".join(plan.leaf_name(su, r) for r in range(c.rails))
        lines.append(f"# {su_name}: rail leaves {leaves}")
        lines.append(f"SwitchName={su_name} Nodes={hostlist(members)}")
    if c.tiers == 2:
        lines.append(f"# spines: {c.spines} x {c.switch_model}")
        lines.append(f"SwitchName=spines Switches={hostlist(su_names)}")
    else:
        pod_names = []
        for pod in c.pods:
            pod_name = f"pod{pod.index:02d}"
            pod_names.append(pod_name)
            lines.append(f"# {pod_name}: {pod.spines} spines")
            lines.append(f"SwitchName={pod_name} Switches={hostlist(su_names[pod.first_su : pod.first_su + pod.sus])}")
        lines.append(f"# cores: {c.cores} x {c.switch_model}")
        lines.append(f"SwitchName=cores Switches={hostlist(pod_names)}")
    return "\n".join(lines) + "\n"


def pod_svg(plan: FabricPlan, max_sus_drawn: int = 6) -> str:
    """An SVG picture of the pod: nodes per SU, rail leaves (one colour per rail), spines, cores and the
    storage and management planes. Large fabrics show the first SUs and say how many are left out."""
    c = plan.compute
    sus_drawn = min(c.scalable_units, max_sus_drawn)
    leaf_w, gap, su_gap = 26, 4, 24
    su_w = c.rails * (leaf_w + gap) - gap
    width = max(1100, 60 + sus_drawn * (su_w + su_gap) + 300)
    draw_w = width - 320
    y_core, y_spine, y_leaf, y_node = 120, (210 if c.tiers == 3 else 130), 310, 410
    parts: list[str] = []
    add = parts.append
    title = f"{plan.nodes} x {plan.node_type} on {plan.fabric}: {plan.gpus:,} GPUs"
    counts = (
        f"{c.tiers} tiers, {c.scalable_units} SU, {c.leaves} leaves, {c.spines} spines"
        + (f", {c.cores} cores" if c.cores else "")
        + f", {plan.oversubscription:g}:1, "
        f"bisection {plan.bisection_gbps() / 1000:,.1f} Tb/s"
    )
    add(f'<text x="20" y="28" font-size="16" font-weight="bold">{escape(title)}</text>')
    add(f'<text x="20" y="48" font-size="12">{escape(counts)}</text>')
    add(
        f'<text x="20" y="66" font-size="12">compute plane: {c.switch_model} ({c.radix} ports at {c.link_gbps}G), '
        f"rail-optimized: NIC r of every node goes to rail-leaf r of its SU</text>"
    )

    def row(y: int, count: int, label: str, color: str) -> list[float]:
        shown = min(count, 40)
        step = draw_w / max(shown, 1)
        xs = [40 + step * i + step / 2 for i in range(shown)]
        for i, x in enumerate(xs):
            add(f'<rect x="{x - 8:.1f}" y="{y}" width="16" height="16" fill="{color}" stroke="#333"/>')
            if shown < 20:
                add(f'<text x="{x:.1f}" y="{y - 4}" font-size="8" text-anchor="middle">{i}</text>')
        more = f" (first {shown} of {count} drawn)" if shown < count else ""
        add(f'<text x="{width - 270}" y="{y + 12}" font-size="12">{count} {label}{more}</text>')
        return xs

    core_x = row(y_core, c.cores, "cores", "#bbbbbb") if c.tiers == 3 else []
    spine_x = row(y_spine, c.spines, "spines", "#dddddd")
    for sx in spine_x:
        for cx in core_x[:: max(1, len(core_x) // 8)]:
            add(
                f'<line x1="{sx:.1f}" y1="{y_spine}" x2="{cx:.1f}" y2="{y_core + 16}" stroke="#999" '
                f'stroke-opacity="0.25"/>'
            )
    for su in range(sus_drawn):
        x0 = 40 + su * (su_w + su_gap)
        first, last = su * c.su_nodes, min(plan.nodes, (su + 1) * c.su_nodes) - 1
        add(
            f'<rect x="{x0 - 6}" y="{y_leaf - 22}" width="{su_w + 12}" height="{y_node - y_leaf + 70}" '
            f'fill="none" stroke="#555" stroke-dasharray="4 3"/>'
        )
        pod = f" (pod {c.pod_of_su(su).index})" if c.tiers == 3 else ""
        add(f'<text x="{x0}" y="{y_leaf - 28}" font-size="11">SU {su}{pod}: nodes {first}-{last}</text>')
        for r in range(c.rails):
            lx = x0 + r * (leaf_w + gap)
            color = RAIL_COLORS[r % len(RAIL_COLORS)]
            for sx in spine_x[:: max(1, len(spine_x) // 8)]:
                add(
                    f'<line x1="{lx + leaf_w / 2:.1f}" y1="{y_leaf}" x2="{sx:.1f}" y2="{y_spine + 16}" '
                    f'stroke="{color}" stroke-opacity="0.35"/>'
                )
            add(f'<rect x="{lx}" y="{y_leaf}" width="{leaf_w}" height="22" fill="{color}" stroke="#333"/>')
            add(
                f'<text x="{lx + leaf_w / 2}" y="{y_leaf + 15}" font-size="9" fill="white" '
                f'text-anchor="middle">r{r}</text>'
            )
            add(
                f'<line x1="{lx + leaf_w / 2}" y1="{y_leaf + 22}" x2="{lx + leaf_w / 2}" y2="{y_node}" '
                f'stroke="{color}"/>'
            )
        present = last - first + 1
        add(f'<rect x="{x0}" y="{y_node}" width="{su_w}" height="36" fill="#f4f4f4" stroke="#333"/>')
        add(
            f'<text x="{x0 + su_w / 2}" y="{y_node + 15}" font-size="11" text-anchor="middle">'
            f"{present} nodes x {c.rails} GPUs/NICs</text>"
        )
        missing = c.su_nodes - present
        note = f"{missing} ports cabled for growth" if missing else f"{c.su_nodes} nodes (full SU)"
        add(f'<text x="{x0 + su_w / 2}" y="{y_node + 30}" font-size="9" text-anchor="middle">{note}</text>')
    if c.scalable_units > sus_drawn:
        add(
            f'<text x="{40 + sus_drawn * (su_w + su_gap) - su_gap + 4}" y="{y_node + 22}" font-size="12">'
            f"... {c.scalable_units - sus_drawn} more SUs</text>"
        )
    add(
        f'<text x="{width - 270}" y="{y_leaf + 15}" font-size="12">{c.leaves} leaves ({c.leaf_down} down, '
        f"{c.leaf_up} up)</text>"
    )
    for r in range(c.rails):
        add(
            f'<rect x="{width - 270 + r * 30}" y="{y_node + 50}" width="26" height="12" '
            f'fill="{RAIL_COLORS[r % len(RAIL_COLORS)]}"/><text x="{width - 257 + r * 30}" y="{y_node + 75}" '
            f'font-size="9" text-anchor="middle">rail {r}</text>'
        )
    s, m = plan.storage_plane, plan.management_plane
    y_planes = y_node + 110
    planes = [
        (
            "Storage plane (separate fabric)",
            f"{s.switches_total} x {s.switch_model} at {s.link_gbps}G: {s.node_leaves} node leaves "
            f"({s.oversubscription:.2f}:1), {s.storage_leaves} storage leaves, {s.spines} spines; "
            f"target {s.target_read_gb_s:,.0f} GB/s read, deliverable {s.deliverable_gb_s:,.0f} GB/s",
        ),
        (
            "Management plane",
            f"out-of-band 1G: {m.oob_switches} x {m.oob_switch_model} ({m.oob_ports} ports: BMCs, switch mgmt, "
            f"{m.pdus} PDUs); in-band 100G: {m.inband_leaves} leaves + {m.inband_spines} spines "
            f"({m.inband_switch_model}); {m.jump_hosts} jump host; egress: {m.egress_switches} switches, "
            f"dual-homed {' + '.join(f'{g}G' for g in m.egress_uplinks_gbps)}",
        ),
    ]
    for i, (head, body) in enumerate(planes):
        y = y_planes + i * 76
        add(f'<rect x="20" y="{y}" width="{width - 40}" height="64" fill="#fafafa" stroke="#777"/>')
        add(f'<text x="32" y="{y + 18}" font-size="13" font-weight="bold">{escape(head)}</text>')
        first_line, _, rest = body.partition("; ")
        add(f'<text x="32" y="{y + 37}" font-size="11">{escape(first_line)}</text>')
        add(f'<text x="32" y="{y + 54}" font-size="11">{escape(rest)}</text>')
    height = y_planes + 2 * 76 + 10
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif">\n'
        f'<rect width="100%" height="100%" fill="white"/>\n' + "\n".join(parts) + "\n</svg>\n"
    )
