"""The typed connectivity resources (``velyrix_private_link``, ``velyrix_bgp_session``,
``velyrix_vpn``) and the attribute schemas they are read with (``connectivity_build``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from velyrix.declarations import models, schema

PRIVATE_LINK, BGP_SESSION, VPN = "velyrix_private_link", "velyrix_bgp_session", "velyrix_vpn"
TYPES = (PRIVATE_LINK, BGP_SESSION, VPN)
AUTH_KINDS = ("none", "md5", "tcp_ao")
S = schema.AttrSchema

_COMMON = {"cluster": S("string", required=True)}
PRIVATE_LINK_SCHEMA = {
    **_COMMON,
    "cloud": S("string", required=True),
    "location": S("string", required=True),
    "port_speed_gbps": S("integer", required=True, minimum=1),
    "vlan": S("integer", required=True, minimum=2, maximum=4094),  # 802.1Q: 0, 1 and 4095 are reserved
    "redundancy": S("string"),
    "macsec": S("bool"),
    "asn": S("integer", required=True, minimum=0),
    "local_address": S("string", required=True),
    "peer_address": S("string", required=True),
    "auth": S("string"),
    "md5_password": S("string"),
    "advertised_prefixes": S("any"),
    "max_prefix": S("integer", minimum=1),
}
BGP_SESSION_SCHEMA = {
    **_COMMON,
    "asn": S("integer", required=True, minimum=0),
    "prefixes": S("any", required=True),
    "local_address": S("string", required=True),
    "peer_address": S("string", required=True),
    "auth": S("string"),
    "md5_password": S("string"),
    "max_prefix": S("integer", minimum=1),
    "ddos_protection": S("bool"),
}
AUTHORIZATION_SCHEMA = {
    "prefix": S("string", required=True),
    "origin_asn": S("integer", required=True, minimum=0),
    "max_length": S("integer", required=True, minimum=0, maximum=128),
    "reference": S("string", required=True),
}
VPN_SCHEMA = {
    **_COMMON,
    "peer_address": S("string", required=True),
    "remote_prefixes": S("any", required=True),
    "ike_version": S("integer", minimum=2, maximum=2),
    "asn": S("integer", minimum=0),
}


@dataclass(frozen=True)
class Peering:
    """One BGP session's ends and options (``local``/``peer``: interface addresses with a length)."""

    asn: int
    local_address: str
    peer_address: str
    auth: str = "none"
    md5_password: str | None = field(default=None, repr=False)
    """Sensitive: never in a plan or a repr; only in the rendered router configuration."""
    max_prefix: int = 100


@dataclass(frozen=True)
class PrivateLink:
    address: str
    cluster: str
    cloud: str
    location: str
    port_speed_gbps: int
    vlan: int
    redundancy: str
    macsec: bool
    peering: Peering
    advertised_prefixes: tuple[str, ...]
    position: models.Position


@dataclass(frozen=True)
class Authorization:
    """ROA evidence: ``origin_asn`` may originate ``prefix`` up to ``max_length``; ``reference`` names
    the RPKI object or the RIR's letter of authorization."""

    prefix: str
    origin_asn: int
    max_length: int
    reference: str


@dataclass(frozen=True)
class BgpSession:
    address: str
    cluster: str
    prefixes: tuple[str, ...]
    authorizations: tuple[Authorization, ...]
    peering: Peering
    ddos_protection: bool
    position: models.Position


@dataclass(frozen=True)
class Vpn:
    address: str
    cluster: str
    peer_address: str
    remote_prefixes: tuple[str, ...]
    ike_version: int
    asn: int | None
    position: models.Position


@dataclass(frozen=True)
class ConnectivityFile:
    """The connectivity resources of a configuration, validated, and its clusters' names."""

    path: str
    private_links: tuple[PrivateLink, ...] = ()
    bgp_sessions: tuple[BgpSession, ...] = ()
    vpns: tuple[Vpn, ...] = ()
    clusters: tuple[str, ...] = ()

    def empty(self) -> bool:
        return not (self.private_links or self.bgp_sessions or self.vpns)
