"""Connectivity facts and prices (``data/connectivity.toml``) as typed records: the clouds a private
link reaches, redundancy levels, Velyrix's own prices and the router that delivers BGP on the twin."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from velyrix import errors
from velyrix.catalog import reader

_FILE = "connectivity.toml"


@dataclass(frozen=True)
class Cloud:
    """A cloud a private link reaches: its product, its side's ASN, the port speeds (Gb/s) it sells,
    those with MACsec, and its port-hour list price per speed (USD, billed by the cloud)."""

    name: str
    product: str
    cloud_asn: int
    port_speeds_gbps: tuple[int, ...]
    macsec_speeds_gbps: tuple[int, ...]
    cloud_port_hour_usd: dict[int, float]
    source: str


@dataclass(frozen=True)
class Velyrix:
    """Velyrix's side: the twin edge's ASN, monthly prices (USD) and the router it delivers with."""

    edge_asn: int
    cross_connect_month_usd: float
    port_month_usd: dict[int, float]
    macsec_port_month_usd: float
    bgp_session_month_usd: float
    byoip_prefix_month_usd: float
    vpn_tunnel_hour_usd: float
    ddos_month_usd: float
    ddos_source: str
    router: str
    router_version: str
    router_auth: tuple[str, ...]
    max_prefix_max: int
    byoip_ipv4_longest: int
    byoip_ipv6_longest: int


@functools.cache
def clouds() -> dict[str, Cloud]:
    """Every cloud of ``[private_link.*]`` by name (``aws``, ``azure``, ``gcp``, ``oracle``)."""
    raw = reader.load_toml(_FILE)["private_link"]
    out = {}
    for name, row in raw.items():
        prices = {int(k): float(v) for k, v in row["cloud_port_hour_usd"].items()}
        out[name] = Cloud(
            name,
            row["product"],
            int(row["cloud_asn"]),
            tuple(row["port_speeds_gbps"]),
            tuple(row["macsec_speeds_gbps"]),
            prices,
            row["source"],
        )
    return out


def cloud(name: str) -> Cloud:
    """The cloud ``name``; ``UnknownNameError`` with the closest name otherwise."""
    found = clouds().get(name)
    if found is None:
        raise errors.UnknownNameError("cloud", name, clouds())
    return found


@functools.cache
def redundancy_ports() -> dict[str, int]:
    """Ports per link for each redundancy level."""
    return {k: int(v) for k, v in reader.load_toml(_FILE)["redundancy"].items()}


@functools.cache
def velyrix() -> Velyrix:
    data = reader.load_toml(_FILE)
    row, limits = data["velyrix"], data["limits"]
    return Velyrix(
        edge_asn=int(row["edge_asn"]),
        cross_connect_month_usd=float(row["cross_connect_month_usd"]),
        port_month_usd={int(k): float(v) for k, v in row["port_month_usd"].items()},
        macsec_port_month_usd=float(row["macsec_port_month_usd"]),
        bgp_session_month_usd=float(row["bgp_session_month_usd"]),
        byoip_prefix_month_usd=float(row["byoip_prefix_month_usd"]),
        vpn_tunnel_hour_usd=float(row["vpn_tunnel_hour_usd"]),
        ddos_month_usd=float(row["ddos_month_usd"]),
        ddos_source=str(row["ddos_source"]),
        router=str(row["router"]),
        router_version=str(row["router_version"]),
        router_auth=tuple(row["router_auth"]),
        max_prefix_max=int(limits["max_prefix_max"]),
        byoip_ipv4_longest=int(limits["byoip_ipv4_longest"]),
        byoip_ipv6_longest=int(limits["byoip_ipv6_longest"]),
    )
