"""BIRD 2 configuration of a cluster's edge router on the twin: one BGP session per private-link port
(with the tenant's ASN toward the cloud, MD5 when declared, max-prefix, export of the advertised
prefixes only) and one per BYOIP session (Velyrix's edge ASN toward the tenant's router, import of the
ROA-covered prefixes only, checked against a ROA table built from the declared evidence). Pure text;
``ops.connectivity_delivery`` writes it and has ``bird -p`` parse it.

Port ``k`` (0-based) of a redundant link uses the ``k``-th subnet after the declared one, of the same
size, for its two addresses (``port_addresses``).
"""

from __future__ import annotations

import hashlib
import ipaddress
import re

from velyrix.catalog import connectivity as catalog_conn
from velyrix.declarations import connectivity_specs as specs


def _comment(text: str) -> str:
    """User text made safe for a ``#`` comment: one line, printable."""
    return "".join(c if c.isprintable() else "?" for c in text)[:200]


def symbol(address: str, suffix: str = "") -> str:
    """A BIRD symbol for a resource address (``velyrix_private_link.aws[0]`` -> ``vx_aws_0``)."""
    name = address.split(".", 1)[-1]
    return "vx_" + re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_") + (f"_{suffix}" if suffix else "")


def port_addresses(local: str, peer: str, port: int) -> tuple[str, str]:
    """The two ends of port ``port``: the declared subnet moved ``port`` subnets up."""
    mine, theirs = ipaddress.ip_interface(local), ipaddress.ip_interface(peer)
    step = mine.network.num_addresses * port
    return str(mine.ip + step), str(theirs.ip + step)


def _router_id(cluster: str) -> str:
    digest = hashlib.sha256(cluster.encode()).digest()
    return f"10.255.{digest[0]}.{max(digest[1], 1)}"


def _family(address: str) -> str:
    return "ipv6" if ":" in address else "ipv4"


def _prefix_set(prefixes: tuple[str, ...] | list[str]) -> str:
    return "[ " + ", ".join(prefixes) + " ]"


def _auth(peering: specs.Peering) -> list[str]:
    if peering.auth == "md5" and peering.md5_password:
        return [f'  password "{peering.md5_password}";']
    return []


def _link(link: specs.PrivateLink) -> list[str]:
    cloud = catalog_conn.cloud(link.cloud)
    name = symbol(link.address)
    fam = _family(link.peering.local_address)
    out = [f"# {link.address}: {cloud.product} at {_comment(link.location)}, VLAN {link.vlan}, {link.redundancy}"]
    if link.advertised_prefixes:
        out += [f"protocol static {name}_adv {{", f"  {fam};"]
        out += [f"  route {p} blackhole;" for p in link.advertised_prefixes]
        out += ["}"]
    export = f"if net ~ {_prefix_set(link.advertised_prefixes)} then accept; " if link.advertised_prefixes else ""
    out += [f"filter {name}_export {{ {export}reject; }}", ""]
    for port in range(catalog_conn.redundancy_ports()[link.redundancy]):
        local, peer = port_addresses(link.peering.local_address, link.peering.peer_address, port)
        out += [
            f"protocol bgp {name}_p{port} {{",
            f'  description "{link.address} port {port + 1} VLAN {link.vlan}";',
            f"  local {local} as {link.peering.asn};",
            f"  neighbor {peer} as {cloud.cloud_asn};",
            *_auth(link.peering),
            f"  {fam} {{",
            f"    receive limit {link.peering.max_prefix} action disable;",
            "    import all;",
            f"    export filter {name}_export;",
            "  };",
            "}",
            "",
        ]
    return out


def _session(session: specs.BgpSession, edge_asn: int) -> list[str]:
    name = symbol(session.address)
    fam = _family(session.peering.local_address)
    roa = "roa6" if fam == "ipv6" else "roa4"
    out = [f"# {session.address}: BYOIP from AS{session.peering.asn}", f"{roa} table {name}_roa;"]
    out += [f"protocol static {name}_evidence {{", f"  {roa} {{ table {name}_roa; }};"]
    out += [
        f"  route {a.prefix} max {a.max_length} as {a.origin_asn};  # {_comment(a.reference)}"
        for a in session.authorizations
    ]
    out += ["}"]
    allowed = _prefix_set(list(session.prefixes))
    out += [
        f"filter {name}_import {{",
        f"  if roa_check({name}_roa, net, bgp_path.last) != ROA_VALID then reject;",
        f"  if net ~ {allowed} then accept;",
        "  reject;",
        "}",
        f"protocol bgp {name} {{",
        f'  description "{session.address}";',
        f"  local {session.peering.peer_address.split('/')[0]} as {edge_asn};",
        f"  neighbor {session.peering.local_address.split('/')[0]} as {session.peering.asn};",
        *_auth(session.peering),
        f"  {fam} {{",
        f"    receive limit {session.peering.max_prefix} action disable;",
        f"    import filter {name}_import;",
        "    export none;",
        "  };",
        "}",
        "",
    ]
    return out


def render(conn: specs.ConnectivityFile, cluster: str) -> str:
    """The BIRD 2 configuration of ``cluster``'s edge: every private link and BGP session of it."""
    edge_asn = catalog_conn.velyrix().edge_asn
    lines = [
        f"# Velyrix edge router of cluster {cluster} (rendered from {_comment(conn.path)}; do not edit)",
        f"router id {_router_id(cluster)};",
        "log stderr all;",
        "protocol device {}",
        "",
    ]
    for link in conn.private_links:
        if link.cluster == cluster:
            lines += _link(link)
    for session in conn.bgp_sessions:
        if session.cluster == cluster:
            lines += _session(session, edge_asn)
    return "\n".join(lines) + "\n"


def clusters_with_routing(conn: specs.ConnectivityFile) -> list[str]:
    """The clusters whose edge has something to configure."""
    return sorted({link.cluster for link in conn.private_links} | {s.cluster for s in conn.bgp_sessions})
