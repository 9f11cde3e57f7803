"""Checks of connectivity declarations that look at numbers and addresses: ASNs (RFC 6996 private
ranges, reserved ones), prefixes (lengths, host bits, BYOIP sizes), ownership shown by ROA evidence,
overlaps between prefixes and VLANs used twice. Pure functions returning problems as text; the
``connectivity`` module places them at file:line:column."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

PRIVATE_ASN_RANGES = ((64512, 65534), (4200000000, 4294967294))
"""RFC 6996: ASNs for private use (16-bit and 32-bit)."""
RESERVED_ASNS = (
    (0, 0, "AS 0 is reserved (RFC 7607)"),
    (23456, 23456, "AS 23456 is AS_TRANS (RFC 6793)"),
    (65535, 65535, "AS 65535 is reserved (RFC 7300)"),
    (4294967295, 4294967295, "AS 4294967295 is reserved (RFC 7300)"),
)
"""Documentation ASNs (RFC 5398: 64496-64511, 65536-65551) are not among them: they stand in for public
ASNs in examples and on the twin, as the documentation prefixes do (``DOCUMENTATION_PREFIXES``)."""
MAX_ASN = 4294967295
DOCUMENTATION_PREFIXES = tuple(
    ipaddress.ip_network(p) for p in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32")
)
"""RFC 5737 and RFC 3849: accepted as BYOIP stand-ins so that examples and the twin never name a real
network (they are not routed on the internet)."""


def is_private_asn(asn: int) -> bool:
    """Whether ``asn`` lies in an RFC 6996 private-use range."""
    return any(lo <= asn <= hi for lo, hi in PRIVATE_ASN_RANGES)


def asn_problem(asn: int) -> str | None:
    """Why ``asn`` cannot be used at all (out of range or reserved), or None."""
    if not 0 <= asn <= MAX_ASN:
        return f"ASN {asn} is outside 0-{MAX_ASN}"
    for lo, hi, why in RESERVED_ASNS:
        if lo <= asn <= hi:
            return why
    return None


@dataclass(frozen=True)
class Prefix:
    """A parsed prefix, or the problem with the text."""

    network: Network | None
    problem: str | None = None
    suggestion: str | None = None


def parse_prefix(text: str) -> Prefix:
    """``text`` as an IPv4 or IPv6 prefix (``203.0.113.0/24``); a length beyond the family's bits
    (``/33`` for IPv4), a missing length and host bits set are problems (the latter with the network
    address as the suggestion)."""
    if "/" not in text:
        return Prefix(None, f"'{text}' has no prefix length", f"{text}/24" if ":" not in text else f"{text}/48")
    address, _, length = text.partition("/")
    bits = 128 if ":" in address else 32
    if not length.isdigit():
        return Prefix(None, f"'{text}': the prefix length '{length}' is not a number")
    if int(length) > bits:
        family = "IPv6" if bits == 128 else "IPv4"
        return Prefix(None, f"'{text}': prefix length /{length} is longer than {family}'s {bits} bits")
    try:
        return Prefix(ipaddress.ip_network(text, strict=True))
    except ValueError:
        try:
            loose = ipaddress.ip_network(text, strict=False)
        except ValueError as exc:
            return Prefix(None, f"'{text}' is not an IP prefix: {exc}")
        return Prefix(None, f"'{text}' has host bits set", str(loose))


def _within(net: Network, doc: Network) -> bool:
    return net.version == doc.version and net.subnet_of(doc)  # type: ignore[arg-type]


def byoip_problem(net: Network, ipv4_longest: int, ipv6_longest: int) -> str | None:
    """Why ``net`` cannot be announced to the internet as BYOIP (too long, or not globally routable)."""
    longest = ipv4_longest if net.version == 4 else ipv6_longest
    if net.prefixlen > longest:
        return f"{net} is longer than /{longest}, the longest prefix other networks accept"
    if not net.is_global and not any(_within(net, doc) for doc in DOCUMENTATION_PREFIXES):
        return f"{net} is not a globally routable prefix (private, shared or reserved space)"
    return None


@dataclass(frozen=True)
class Roa:
    """ROA evidence: ``origin_asn`` may originate ``network`` up to ``max_length``."""

    network: Network
    origin_asn: int
    max_length: int


def covering_roa(net: Network, asn: int, roas: Sequence[Roa]) -> Roa | None:
    """The ROA that authorises ``asn`` to originate ``net`` (RFC 6811: the ROA's prefix covers it,
    its length is within ``max_length`` and the origin matches), or None."""
    for roa in roas:
        same_family = roa.network.version == net.version
        if same_family and net.subnet_of(roa.network) and net.prefixlen <= roa.max_length and roa.origin_asn == asn:  # type: ignore[arg-type]
            return roa
    return None


def overlaps(a: Network, b: Network) -> bool:
    """Whether two prefixes share an address (different families never do)."""
    return a.version == b.version and a.overlaps(b)


def peering_problem(local: str, peer: str) -> str | None:
    """Why ``local``/``peer`` (``169.254.10.1/30``-style interface addresses) cannot be the two ends
    of one BGP session: not addresses with a length, different subnets, the same address, or the
    subnet's network or broadcast address (IPv4 subnets shorter than /31)."""
    try:
        mine, theirs = ipaddress.ip_interface(local), ipaddress.ip_interface(peer)
    except ValueError as exc:
        return f"not an interface address with a prefix length: {exc}"
    if mine.network != theirs.network:
        return f"{local} and {peer} are not in the same subnet"
    if mine.ip == theirs.ip:
        return f"both ends are {mine.ip}"
    net = mine.network
    if net.version == 4 and net.prefixlen < 31 and {mine.ip, theirs.ip} & {net.network_address, net.broadcast_address}:
        return f"{net.network_address} and {net.broadcast_address} are {net}'s network and broadcast addresses"
    return None
