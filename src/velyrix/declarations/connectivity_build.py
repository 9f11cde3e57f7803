"""Building and checking connectivity resources, one instance at a time (``instance``) and across the
configuration (``cross_checks``: overlapping prefixes, VLANs used twice). Every problem is recorded at
the file:line:column of the attribute it is about (``connectivity`` raises them together)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from velyrix.catalog import connectivity as catalog_conn
from velyrix.declarations import connectivity_checks as cc
from velyrix.declarations import connectivity_specs as specs
from velyrix.declarations import diagnostics, expansion, hcl, loader, models

Checker = diagnostics.Checker


@dataclass
class Collected:
    links: list[specs.PrivateLink] = field(default_factory=list)
    sessions: list[specs.BgpSession] = field(default_factory=list)
    vpns: list[specs.Vpn] = field(default_factory=list)
    prefixes: list[tuple[cc.Network, str, models.Position]] = field(default_factory=list)
    """Every prefix declared (BYOIP, advertised, VPN remote), with its resource and position."""
    vlans: list[tuple[str, int, str, models.Position]] = field(default_factory=list)
    """(cluster, VLAN, resource address, position) of every private link."""


def _at(chk: Checker, node: hcl.Attribute | hcl.Block) -> models.Position:
    return models.Position(chk.filename, node.line, node.column)


def _attr(block: hcl.Block, name: str) -> hcl.Attribute | hcl.Block:
    """The attribute ``name`` of ``block``, or the block itself when it was not written (a default)."""
    return next((a for a in block.attributes if a.name == name), block)


def _word(
    chk: Checker, block: hcl.Block, attrs: dict[str, Any], name: str, valid: tuple[str, ...], default: str
) -> str:
    value = str(attrs.get(name, default))
    if value not in valid:
        node = _attr(block, name)
        chk.unknown(node.line, node.column, name, value, valid)
    return value


def _prefix_list(chk: Checker, block: hcl.Block, attrs: dict[str, Any], name: str) -> list[tuple[str, cc.Network]]:
    """The list of prefix strings ``name``, each parsed; problems at the attribute."""
    raw = attrs.get(name, [])
    node = _attr(block, name)
    if not isinstance(raw, list) or not all(isinstance(p, str) for p in raw):
        chk.error(node.line, node.column, f"'{name}' must be a list of prefixes", expected='["203.0.113.0/24"]')
        return []
    out = []
    for text in raw:
        parsed = cc.parse_prefix(text)
        if parsed.network is None:
            chk.error(
                node.line,
                node.column,
                f"'{name}': {parsed.problem}",
                expected="ADDRESS/LENGTH",
                suggestion=parsed.suggestion,
            )
        else:
            out.append((text, parsed.network))
    return out


def _one_line(chk: Checker, block: hcl.Block, attrs: dict[str, Any], name: str) -> str:
    """A text attribute that must be one printable line of at most 200 characters."""
    value = str(attrs.get(name, ""))
    if len(value) > 200 or not value.isprintable():
        node = _attr(block, name)
        chk.error(node.line, node.column, f"'{name}' must be one printable line of at most 200 characters")
    return value


def _asn(chk: Checker, block: hcl.Block, attrs: dict[str, Any], name: str = "asn") -> int | None:
    if name not in attrs:
        return None
    asn = int(attrs[name])
    problem = cc.asn_problem(asn)
    if problem:
        node = _attr(block, name)
        chk.error(
            node.line,
            node.column,
            f"'{name}' = {asn}: {problem}",
            expected="a private ASN (RFC 6996: 64512-65534 or 4200000000-4294967294) or your own",
        )
        return None
    return asn


def _peering(chk: Checker, block: hcl.Block, attrs: dict[str, Any], asn: int) -> specs.Peering:
    problem = cc.peering_problem(str(attrs["local_address"]), str(attrs["peer_address"]))
    if problem:
        node = _attr(block, "peer_address")
        chk.error(
            node.line,
            node.column,
            f"BGP peer addresses: {problem}",
            expected='local_address = "169.254.10.1/30", peer_address = "169.254.10.2/30"',
        )
    auth = _word(chk, block, attrs, "auth", specs.AUTH_KINDS, "none")
    router = catalog_conn.velyrix()
    if auth in specs.AUTH_KINDS and auth not in router.router_auth:
        node = _attr(block, "auth")
        chk.error(
            node.line,
            node.column,
            f'auth = "{auth}" is not delivered: the edge runs {router.router} {router.router_version}',
            expected="one of " + ", ".join(router.router_auth),
            suggestion="md5",
        )
    password = attrs.get("md5_password")
    if auth == "md5" and not password:
        chk.error(
            block.line, block.column, 'auth = "md5" needs md5_password', expected="md5_password = var.bgp_password"
        )
    if password is not None and (len(password) > 80 or set(password) & {'"', "\\"} or not password.isprintable()):
        node = _attr(block, "md5_password")
        chk.error(node.line, node.column, "md5_password must be 1-80 printable characters without '\"' or '\\\\'")
    max_prefix = int(attrs.get("max_prefix", 100))
    if max_prefix > router.max_prefix_max:
        node = _attr(block, "max_prefix")
        chk.error(
            node.line,
            node.column,
            f"max_prefix = {max_prefix} is out of range",
            expected=f"1 to {router.max_prefix_max}",
        )
    return specs.Peering(asn, str(attrs["local_address"]), str(attrs["peer_address"]), auth, password, max_prefix)


def _cluster(chk: Checker, block: hcl.Block, attrs: dict[str, Any], clusters: tuple[str, ...]) -> str:
    name = str(attrs.get("cluster", ""))
    if name and name not in clusters:
        node = _attr(block, "cluster")
        chk.unknown(node.line, node.column, "cluster", name, clusters or ("(no velyrix_cluster declared)",))
    return name


def instance(inst: expansion.Instance, chk: Checker, out: Collected, clusters: tuple[str, ...]) -> None:
    """Check and collect one connectivity resource instance."""
    block, where = inst.block, f"resource {inst.address}"
    if inst.type == specs.PRIVATE_LINK:
        _private_link(inst, chk, out, clusters)
    elif inst.type == specs.BGP_SESSION:
        _bgp_session(inst, chk, out, clusters)
    else:
        loader._no_blocks(block, chk, f"in {where}")
        attrs = loader._attributes(block, specs.VPN_SCHEMA, chk, inst.scope, where)
        if not set(attrs) >= {n for n, s in specs.VPN_SCHEMA.items() if s.required}:
            return
        cluster = _cluster(chk, block, attrs, clusters)
        remote = _prefix_list(chk, block, attrs, "remote_prefixes")
        for _text, net in remote:
            out.prefixes.append((net, inst.address, _at(chk, _attr(block, "remote_prefixes"))))
        out.vpns.append(
            specs.Vpn(
                inst.address,
                cluster,
                str(attrs["peer_address"]),
                tuple(t for t, _ in remote),
                int(attrs.get("ike_version", 2)),
                _asn(chk, block, attrs),
                _at(chk, block),
            )
        )


def _private_link(inst: expansion.Instance, chk: Checker, out: Collected, clusters: tuple[str, ...]) -> None:
    block, where = inst.block, f"resource {inst.address}"
    loader._no_blocks(block, chk, f"in {where}")
    attrs = loader._attributes(block, specs.PRIVATE_LINK_SCHEMA, chk, inst.scope, where)
    if not set(attrs) >= {n for n, s in specs.PRIVATE_LINK_SCHEMA.items() if s.required}:
        return
    cluster = _cluster(chk, block, attrs, clusters)
    cloud_name = _word(chk, block, attrs, "cloud", tuple(catalog_conn.clouds()), "")
    redundancy = _word(chk, block, attrs, "redundancy", tuple(catalog_conn.redundancy_ports()), "dual")
    speed, macsec = int(attrs["port_speed_gbps"]), bool(attrs.get("macsec", False))
    if cloud_name in catalog_conn.clouds():
        cloud = catalog_conn.cloud(cloud_name)
        if speed not in cloud.port_speeds_gbps:
            node = _attr(block, "port_speed_gbps")
            chk.error(
                node.line,
                node.column,
                f"{cloud.product} has no {speed} Gb/s port",
                expected="one of " + ", ".join(f"{s}" for s in cloud.port_speeds_gbps),
            )
        elif macsec and speed not in cloud.macsec_speeds_gbps:
            node = _attr(block, "macsec")
            chk.error(
                node.line,
                node.column,
                f"MACsec is not offered on {speed} Gb/s {cloud.product} ports",
                expected="port_speed_gbps one of " + ", ".join(map(str, cloud.macsec_speeds_gbps)),
            )
    asn = _asn(chk, block, attrs)
    if asn is not None and not cc.is_private_asn(asn):
        node = _attr(block, "asn")
        chk.error(
            node.line,
            node.column,
            f"'asn' = {asn} is a public ASN; a private link peers with a private one",
            expected="an RFC 6996 private ASN (64512-65534 or 4200000000-4294967294)",
            suggestion="65010",
        )
    if asn is not None and cloud_name in catalog_conn.clouds() and asn == catalog_conn.cloud(cloud_name).cloud_asn:
        node = _attr(block, "asn")
        chk.error(node.line, node.column, f"'asn' = {asn} is the cloud side's own ASN", expected="another private ASN")
    peering = _peering(chk, block, attrs, asn or 0)
    advertised = _prefix_list(chk, block, attrs, "advertised_prefixes")
    for _text, net in advertised:
        out.prefixes.append((net, inst.address, _at(chk, _attr(block, "advertised_prefixes"))))
    out.vlans.append((cluster, int(attrs["vlan"]), inst.address, _at(chk, _attr(block, "vlan"))))
    out.links.append(
        specs.PrivateLink(
            inst.address,
            cluster,
            cloud_name,
            _one_line(chk, block, attrs, "location"),
            speed,
            int(attrs["vlan"]),
            redundancy,
            macsec,
            peering,
            tuple(t for t, _ in advertised),
            _at(chk, block),
        )
    )


def _authorizations(inst: expansion.Instance, chk: Checker) -> list[tuple[specs.Authorization, cc.Roa]]:
    out = []
    for inner in inst.block.blocks:
        if inner.type != "authorization":
            chk.unknown(
                inner.line, inner.column, "block", inner.type, ("authorization",), f"in resource {inst.address}"
            )
            continue
        attrs = loader._attributes(
            inner, specs.AUTHORIZATION_SCHEMA, chk, inst.scope, f"authorization of {inst.address}"
        )
        if set(attrs) < set(specs.AUTHORIZATION_SCHEMA):
            continue
        parsed = cc.parse_prefix(str(attrs["prefix"]))
        if parsed.network is None:
            node = _attr(inner, "prefix")
            chk.error(node.line, node.column, f"authorization prefix: {parsed.problem}", suggestion=parsed.suggestion)
            continue
        ev = specs.Authorization(
            str(attrs["prefix"]),
            int(attrs["origin_asn"]),
            int(attrs["max_length"]),
            _one_line(chk, inner, attrs, "reference"),
        )
        out.append((ev, cc.Roa(parsed.network, ev.origin_asn, ev.max_length)))
    return out


def _bgp_session(inst: expansion.Instance, chk: Checker, out: Collected, clusters: tuple[str, ...]) -> None:
    block, where = inst.block, f"resource {inst.address}"
    attrs = loader._attributes(block, specs.BGP_SESSION_SCHEMA, chk, inst.scope, where)
    evidence = _authorizations(inst, chk)
    if not set(attrs) >= {n for n, s in specs.BGP_SESSION_SCHEMA.items() if s.required}:
        return
    cluster = _cluster(chk, block, attrs, clusters)
    asn = _asn(chk, block, attrs)
    roas = [roa for _, roa in evidence]
    node = _attr(block, "asn")
    if asn is not None and not cc.is_private_asn(asn) and not any(r.origin_asn == asn for r in roas):
        chk.error(
            node.line,
            node.column,
            f"'asn' = {asn} is a public ASN the tenant has not shown it holds: no authorization names it as origin",
            expected=f"an authorization with origin_asn = {asn} (reference: its ROA or LOA), or a private ASN",
        )
    router = catalog_conn.velyrix()
    prefixes = _prefix_list(chk, block, attrs, "prefixes")
    pnode = _attr(block, "prefixes")
    for text, net in prefixes:
        problem = cc.byoip_problem(net, router.byoip_ipv4_longest, router.byoip_ipv6_longest)
        if problem:
            chk.error(pnode.line, pnode.column, f"BYOIP prefix {problem}")
        elif asn is not None and cc.covering_roa(net, asn, roas) is None:
            chk.error(
                pnode.line,
                pnode.column,
                f"BYOIP prefix {text} is not shown to be the tenant's: no authorization lets AS{asn} originate it",
                expected=f'authorization {{ prefix = "{text}", origin_asn = {asn}, max_length = {net.prefixlen} }}',
            )
        out.prefixes.append((net, inst.address, _at(chk, pnode)))
    peering = _peering(chk, block, attrs, asn or 0)
    if peering.max_prefix < len(prefixes):
        mnode = _attr(block, "max_prefix")
        chk.error(
            mnode.line,
            mnode.column,
            f"max_prefix = {peering.max_prefix} is fewer than the {len(prefixes)} prefixes declared",
            expected=f"max_prefix >= {len(prefixes)}",
        )
    out.sessions.append(
        specs.BgpSession(
            inst.address,
            cluster,
            tuple(t for t, _ in prefixes),
            tuple(e for e, _ in evidence),
            peering,
            bool(attrs.get("ddos_protection", True)),
            _at(chk, block),
        )
    )


def cross_checks(out: Collected, chk: Checker) -> None:
    """Prefixes that overlap (anywhere in the configuration) and a VLAN used by two links of a cluster."""
    for i, (net, address, pos) in enumerate(out.prefixes):
        for other, other_address, other_pos in out.prefixes[:i]:
            if cc.overlaps(net, other):
                chk.error(
                    pos.line,
                    pos.column,
                    f"prefix {net} of {address} overlaps {other} of {other_address} ({other_pos})",
                    expected="prefixes that share no address",
                    file=pos.file,
                )
    seen: dict[tuple[str, int], tuple[str, models.Position]] = {}
    for cluster, vlan, address, pos in out.vlans:
        if (cluster, vlan) in seen:
            first, first_pos = seen[(cluster, vlan)]
            free = next(v for v in range(2, 4095) if (cluster, v) not in seen and all(v != x[1] for x in out.vlans))
            chk.error(
                pos.line,
                pos.column,
                f"VLAN {vlan} is already used by {first} ({first_pos}) on cluster '{cluster}'",
                expected="one VLAN per link",
                suggestion=str(free),
                file=pos.file,
            )
        else:
            seen[(cluster, vlan)] = (address, pos)
