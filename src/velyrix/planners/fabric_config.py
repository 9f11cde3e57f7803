"""A cluster's fabric configuration as the network gear takes it (pure: data in, text and JSON out).

From a ``TenantFabric`` (the cluster's VLAN, VRF, InfiniBand partition key or VXLAN VNI, and its ports):

* ``partitions_conf``: the InfiniBand partition in OpenSM ``partitions.conf`` syntax
  (``Name=PKey, ipoib, defmember=full : GUID, GUID ;``; NVIDIA UFM Enterprise user manual, appendix "SM
  Partitions.conf File Format"); lines stay under the 4,096 characters UFM allows, a long member list split
  over several lines of the same PKey, which OpenSM merges (same appendix, "Partitioning").
* ``ufm_calls``: the same partition as UFM REST calls (UFM Enterprise REST API guide, "PKey GUIDs REST API":
  ``POST /ufmRest/resources/pkeys/add`` creates the PKey, ``POST /ufmRest/resources/pkeys`` adds GUIDs with a
  membership; GUIDs as 16 hex digits).
* ``nvue``: per Ethernet switch, the NVUE (Cumulus Linux on Spectrum) YAML that puts the cluster's ports in
  its VLAN (mapped to its VNI on a Spectrum-X compute fabric) and the VLAN's interface in its VRF.
* ``sonic``: per Ethernet switch, the same as a SONiC ``config_db.json`` fragment (tables VLAN, VLAN_MEMBER,
  VRF, VLAN_INTERFACE).

VRF names become Linux network devices on both switch systems, at most 15 characters (``IFNAMSIZ`` 16 with
its NUL): the device name is a digest of the control plane's VRF name, which the rendering keeps beside it.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

MAX_LINE_CHARS = 4096
"""Longest partitions.conf line UFM accepts (UFM Enterprise user manual, appendix "Partitioning")."""
IFNAME_MAX = 15
"""Longest Linux interface name (IFNAMSIZ 16 including the NUL, include/uapi/linux/if.h)."""
SONIC_LANES_PER_PORT = 8
"""SONiC names a front-panel port after its first SerDes lane (``Ethernet0``, ``Ethernet8``...); 8 lanes per
400G/800G OSFP port of a Spectrum-4 switch (assumption of the rendering: the platform's port_config.ini
decides on real gear)."""


@dataclass(frozen=True)
class IbPort:
    """One InfiniBand end port of a cluster node: HCA device and port GUID (0x + 16 hex digits)."""

    node: str
    device: str
    guid: str


@dataclass(frozen=True)
class EthPort:
    """One Ethernet port of a cluster node and the switch port it is cabled to; ``plane`` is ``compute``
    (a Spectrum-X rail) or ``storage``."""

    node: str
    device: str
    mac: str
    switch: str
    port: int
    plane: str


@dataclass(frozen=True)
class TenantFabric:
    """What a cluster's fabric configuration is made of (``NetworkAttachment`` plus ports)."""

    cluster: str
    vlan: int
    vrf: str
    pkey: int | None = None
    vni: int | None = None
    ib_ports: tuple[IbPort, ...] = ()
    eth_ports: tuple[EthPort, ...] = field(default_factory=tuple)


def eui64_guid(mac: str) -> str:
    """The EUI-64 port GUID of an EUI-48 ``mac`` (OUI, ``FF-FE``, extension: IEEE "Guidelines for Use of EUI,
    OUI, and CID"), as ``0x`` + 16 hex digits."""
    digits = re.sub(r"[^0-9a-fA-F]", "", mac).lower()
    if len(digits) != 12:
        raise ValueError(f"not a MAC address: {mac!r}")
    return "0x" + digits[:6] + "fffe" + digits[6:]


def device_name(vrf: str, prefix: str) -> str:
    """A VRF device name of at most 15 characters: ``prefix`` + digest of the control plane's ``vrf``."""
    name = prefix + hashlib.sha256(vrf.encode()).hexdigest()[: IFNAME_MAX - len(prefix)]
    assert len(name) <= IFNAME_MAX
    return name


def partition_name(cluster: str) -> str:
    """OpenSM partition names are plain words: ``vx_`` + the cluster name with other characters as ``_``."""
    return "vx_" + re.sub(r"[^A-Za-z0-9_]", "_", cluster)


def partitions_conf(tf: TenantFabric) -> str:
    """The cluster's partition for OpenSM's partitions.conf (its ports full members), after a comment."""
    if tf.pkey is None:
        raise ValueError(f"cluster {tf.cluster} has no InfiniBand partition key (an Ethernet compute fabric)")
    head = f"{partition_name(tf.cluster)}={tf.pkey:#06x}, ipoib, defmember=full : "
    guids = sorted({p.guid for p in tf.ib_ports})
    lines = [f"# velyrix cluster {tf.cluster}: {len(guids)} ports of {len({p.node for p in tf.ib_ports})} nodes"]
    current: list[str] = []
    for guid in guids:
        if current and len(head) + len(", ".join([*current, guid])) + 2 > MAX_LINE_CHARS:
            lines.append(head + ", ".join(current) + " ;")
            current = []
        current.append(guid)
    lines.append(head + ", ".join(current) + " ;")
    return "\n".join(lines) + "\n"


def ufm_calls(tf: TenantFabric) -> list[dict[str, Any]]:
    """The partition as UFM REST calls, in order: create the PKey, then add every port GUID as a full member."""
    if tf.pkey is None:
        raise ValueError(f"cluster {tf.cluster} has no InfiniBand partition key (an Ethernet compute fabric)")
    pkey = f"{tf.pkey:#06x}"
    guids = sorted({p.guid.removeprefix("0x") for p in tf.ib_ports})
    return [
        {
            "method": "POST",
            "path": "/ufmRest/resources/pkeys/add",
            "body": {"pkey": pkey, "index0": False, "ip_over_ib": True},
        },
        {
            "method": "POST",
            "path": "/ufmRest/resources/pkeys",
            "body": {"pkey": pkey, "guids": guids, "membership": "full", "index0": False, "ip_over_ib": True},
        },
    ]


def _by_switch(tf: TenantFabric, plane: str) -> dict[str, list[EthPort]]:
    out: dict[str, list[EthPort]] = {}
    for p in sorted(tf.eth_ports, key=lambda p: (p.switch, p.port)):
        if p.plane == plane:
            out.setdefault(p.switch, []).append(p)
    return out


def nvue(tf: TenantFabric, plane: str) -> dict[str, str]:
    """Per switch of ``plane``, its NVUE YAML (``nv config patch``): the ports as access ports of the VLAN in
    the default bridge, the VLAN mapped to the VNI on the compute plane of a Spectrum-X fabric, the VLAN's
    SVI in the VRF."""
    vrf = device_name(tf.vrf, "vx")
    vlan: dict[str, Any] = {}
    if plane == "compute" and tf.vni is not None:
        vlan["vni"] = {str(tf.vni): {}}
    out = {}
    for switch, ports in _by_switch(tf, plane).items():
        interfaces: dict[str, Any] = {
            f"swp{p.port}": {
                "description": f"{p.node} {p.device}",
                "bridge": {"domain": {"br_default": {"access": tf.vlan}}},
            }
            for p in ports
        }
        interfaces[f"vlan{tf.vlan}"] = {"type": "svi", "vlan": tf.vlan, "ip": {"vrf": vrf}}
        doc = [
            {
                "set": {
                    "bridge": {"domain": {"br_default": {"vlan": {str(tf.vlan): vlan}}}},
                    "interface": interfaces,
                    "vrf": {vrf: {"table": "auto"}},
                }
            }
        ]
        comment = f"# velyrix cluster {tf.cluster}, {plane} plane: VLAN {tf.vlan} in VRF {tf.vrf} (device {vrf})\n"
        out[switch] = comment + yaml.safe_dump(doc, sort_keys=True, default_flow_style=False)
    return out


def sonic(tf: TenantFabric, plane: str) -> dict[str, dict[str, Any]]:
    """Per switch of ``plane``, its SONiC config_db.json fragment: the VLAN, its untagged members, the VRF and
    the VLAN interface bound to it."""
    vrf = device_name(tf.vrf, "Vrf")  # SONiC requires VRF names to start with "Vrf"
    name = f"Vlan{tf.vlan}"
    out = {}
    for switch, ports in _by_switch(tf, plane).items():
        members = {f"{name}|Ethernet{(p.port - 1) * SONIC_LANES_PER_PORT}": {"tagging_mode": "untagged"} for p in ports}
        out[switch] = {
            "VLAN": {name: {"vlanid": str(tf.vlan), "description": f"velyrix {tf.cluster}"}},
            "VLAN_MEMBER": members,
            "VRF": {vrf: {}},
            "VLAN_INTERFACE": {name: {"vrf_name": vrf}},
        }
    return out


def render(tf: TenantFabric) -> dict[str, Any]:
    """Every artifact of the cluster: ``{"infiniband": {"partitions_conf", "ufm"} | None, "ethernet":
    {plane: {"nvue": {switch: yaml}, "sonic": {switch: config_db}}}, "summary": {...}}`` and a SHA-256 of it
    (``digest``: what the network driver records as applied)."""
    ib = {"partitions_conf": partitions_conf(tf), "ufm": ufm_calls(tf)} if tf.pkey is not None else None
    planes = sorted({p.plane for p in tf.eth_ports})
    body: dict[str, Any] = {
        "cluster": tf.cluster,
        "infiniband": ib,
        "ethernet": {plane: {"nvue": nvue(tf, plane), "sonic": sonic(tf, plane)} for plane in planes},
        "summary": {
            "vlan": tf.vlan,
            "vrf": tf.vrf,
            "pkey": None if tf.pkey is None else f"{tf.pkey:#06x}",
            "vni": tf.vni,
            "ib_ports": len(tf.ib_ports),
            "ethernet_ports": {plane: sum(1 for p in tf.eth_ports if p.plane == plane) for plane in planes},
        },
    }
    body["digest"] = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    return body
