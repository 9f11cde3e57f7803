"""The plan and monthly price of a configuration's connectivity: private links (ports, cross-connects,
MACsec, BGP sessions; the cloud side's port-hours shown apart as the cloud's estimate), BYOIP BGP
sessions (session, prefixes) with DDoS protection as a line per cluster, and IPsec VPNs. Prices come
from ``catalog/data/connectivity.toml`` (sources and stated assumptions there). Pure."""

from __future__ import annotations

from typing import Any

from velyrix import units
from velyrix.catalog import connectivity as catalog_conn
from velyrix.declarations import connectivity_specs as specs
from velyrix.planners import cost


def _link(link: specs.PrivateLink) -> dict[str, Any]:
    vx, cloud = catalog_conn.velyrix(), catalog_conn.cloud(link.cloud)
    ports = catalog_conn.redundancy_ports()[link.redundancy]
    speed = link.port_speed_gbps
    lines = [
        cost.line(
            f"Edge router ports, {speed} Gb/s ({link.redundancy})", ports, "port-month", vx.port_month_usd[speed]
        ),
        cost.line(f"Cross-connects to {link.location}", ports, "cross-connect-month", vx.cross_connect_month_usd),
        cost.line("BGP sessions (one per port)", ports, "session-month", vx.bgp_session_month_usd),
    ]
    if link.macsec:
        lines.append(cost.line("MACsec on the ports", ports, "port-month", vx.macsec_port_month_usd))
    cloud_hours = ports * units.HOURS_PER_MONTH
    cloud_line = cost.line(
        f"{cloud.product} {speed} Gb/s port-hours ({ports} x {units.HOURS_PER_MONTH:g} h), billed by the cloud",
        cloud_hours,
        "port-hour",
        cloud.cloud_port_hour_usd[speed],
    )
    return {
        "address": link.address,
        "cluster": link.cluster,
        "kind": "private_link",
        "summary": (
            f"{cloud.product}, {ports} x {speed} Gb/s, VLAN {link.vlan}, AS{link.peering.asn} <-> AS{cloud.cloud_asn}"
        ),
        "ports": ports,
        "macsec": link.macsec,
        "auth": link.peering.auth,
        "cost": {"monthly_usd": cost.total(lines), "lines": [c.to_dict() for c in lines]},
        "cloud_estimate": {
            "monthly_usd": cloud_line.monthly_usd,
            "lines": [cloud_line.to_dict()],
            "source": cloud.source,
        },
    }


def _session(session: specs.BgpSession) -> dict[str, Any]:
    vx = catalog_conn.velyrix()
    lines = [
        cost.line("BGP session (BYOIP)", 1, "session-month", vx.bgp_session_month_usd),
        cost.line("BYOIP prefixes announced", len(session.prefixes), "prefix-month", vx.byoip_prefix_month_usd),
    ]
    return {
        "address": session.address,
        "cluster": session.cluster,
        "kind": "bgp_session",
        "summary": (
            f"AS{session.peering.asn} announces {', '.join(session.prefixes)} (max-prefix {session.peering.max_prefix})"
        ),
        "auth": session.peering.auth,
        "evidence": [a.reference for a in session.authorizations],
        "cost": {"monthly_usd": cost.total(lines), "lines": [c.to_dict() for c in lines]},
    }


def _vpn(vpn: specs.Vpn) -> dict[str, Any]:
    vx = catalog_conn.velyrix()
    lines = [
        cost.line(
            f"IPsec VPN (IKEv{vpn.ike_version}, two tunnels)",
            units.HOURS_PER_MONTH,
            "connection-hour",
            vx.vpn_tunnel_hour_usd,
        )
    ]
    return {
        "address": vpn.address,
        "cluster": vpn.cluster,
        "kind": "vpn",
        "summary": f"IPsec to {vpn.peer_address} for {', '.join(vpn.remote_prefixes)}",
        "cost": {"monthly_usd": cost.total(lines), "lines": [c.to_dict() for c in lines]},
    }


def _ddos(sessions: tuple[specs.BgpSession, ...]) -> list[dict[str, Any]]:
    """One DDoS protection line per cluster that announces prefixes with ``ddos_protection`` on."""
    vx = catalog_conn.velyrix()
    clusters = sorted({s.cluster for s in sessions if s.ddos_protection})
    out = []
    for name in clusters:
        lines = [
            cost.line(
                f"DDoS protection, always-on scrubbing for {name}'s announced prefixes",
                1,
                "cluster-month",
                vx.ddos_month_usd,
            )
        ]
        out.append(
            {
                "address": f"ddos_protection.{name}",
                "cluster": name,
                "kind": "ddos_protection",
                "summary": "volumetric scrubbing at the edge for every BYOIP prefix",
                "source": vx.ddos_source,
                "cost": {"monthly_usd": cost.total(lines), "lines": [c.to_dict() for c in lines]},
            }
        )
    return out


def plan(conn: specs.ConnectivityFile) -> dict[str, Any]:
    """The connectivity section of a plan: one entry per resource (and per DDoS-protected cluster), the
    Velyrix monthly total and the clouds' estimated monthly total (USD)."""
    items = [_link(link) for link in conn.private_links]
    items += [_session(s) for s in conn.bgp_sessions]
    items += [_vpn(v) for v in conn.vpns]
    items += _ddos(conn.bgp_sessions)
    return {
        "items": items,
        "monthly_usd": round(sum(i["cost"]["monthly_usd"] for i in items), 2),
        "cloud_estimate_monthly_usd": round(
            sum(i["cloud_estimate"]["monthly_usd"] for i in items if "cloud_estimate" in i), 2
        ),
    }
