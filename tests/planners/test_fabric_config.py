"""The fabric configuration renderer: OpenSM partitions.conf, UFM REST calls, NVUE YAML, SONiC config_db."""

from __future__ import annotations

import re

import pytest
import yaml

from velyrix.planners import fabric_config as fc


def _tf(n_nodes: int = 2, *, pkey: int | None = 0x0001, vni: int | None = None) -> fc.TenantFabric:
    ib = tuple(
        fc.IbPort(f"n{i:03d}", f"mlx5_{r}", fc.eui64_guid(f"0c:42:a1:{i // 256:02x}:{i % 256:02x}:{r:02x}"))
        for i in range(n_nodes)
        for r in range(8)
    )
    eth = tuple(
        fc.EthPort(f"n{i:03d}", "mlx5_8", f"02:00:00:00:{i:02x}:08", "stor-su00-leaf0", i + 1, "storage")
        for i in range(min(n_nodes, 32))
    )
    return fc.TenantFabric("pretrain", 1234, "vrf-ten_0123456789abcdef-pretrain", pkey, vni, ib, eth)


def test_eui64_guid_inserts_fffe_between_oui_and_extension() -> None:
    assert fc.eui64_guid("0c:42:a1:12:34:56") == "0x0c42a1fffe123456"
    with pytest.raises(ValueError, match="not a MAC"):
        fc.eui64_guid("0c:42:a1")


def test_partitions_conf_lists_every_port_as_a_full_member() -> None:
    text = fc.partitions_conf(_tf(2))
    (line,) = [x for x in text.splitlines() if not x.startswith("#")]
    assert re.fullmatch(r"vx_pretrain=0x0001, ipoib, defmember=full : (0x[0-9a-f]{16}, )*0x[0-9a-f]{16} ;", line)
    assert len(re.findall(r"0x[0-9a-f]{16}", line)) == 16


def test_a_long_member_list_is_split_over_lines_of_the_same_pkey_under_4096_chars() -> None:
    tf = _tf(64)  # 512 ports: ~10 kB of GUIDs
    lines = [x for x in fc.partitions_conf(tf).splitlines() if not x.startswith("#")]
    assert len(lines) >= 3 and all(len(x) <= fc.MAX_LINE_CHARS for x in lines)
    assert all(x.startswith("vx_pretrain=0x0001, ipoib, defmember=full : ") for x in lines)
    assert {g for x in lines for g in re.findall(r"0x[0-9a-f]{16}", x)} == {p.guid for p in tf.ib_ports}


def test_ufm_calls_create_the_pkey_then_add_the_guids() -> None:
    add, guids = fc.ufm_calls(_tf(1))
    assert add == {
        "method": "POST",
        "path": "/ufmRest/resources/pkeys/add",
        "body": {"pkey": "0x0001", "index0": False, "ip_over_ib": True},
    }
    assert guids["path"] == "/ufmRest/resources/pkeys" and guids["body"]["membership"] == "full"
    assert len(guids["body"]["guids"]) == 8 and all(re.fullmatch(r"[0-9a-f]{16}", g) for g in guids["body"]["guids"])


def test_nvue_puts_the_ports_in_the_vlan_and_the_svi_in_a_short_vrf() -> None:
    ((switch, text),) = fc.nvue(_tf(3), "storage").items()
    assert switch == "stor-su00-leaf0"
    (doc,) = yaml.safe_load(text)
    cfg = doc["set"]
    (vrf,) = cfg["vrf"]
    assert len(vrf) <= fc.IFNAME_MAX and cfg["vrf"][vrf] == {"table": "auto"}
    assert cfg["interface"]["vlan1234"] == {"type": "svi", "vlan": 1234, "ip": {"vrf": vrf}}
    assert [cfg["interface"][f"swp{i}"]["bridge"]["domain"]["br_default"]["access"] for i in (1, 2, 3)] == [1234] * 3
    assert "1234" in cfg["bridge"]["domain"]["br_default"]["vlan"]


def test_nvue_maps_the_vlan_to_the_vni_on_a_spectrum_x_compute_plane() -> None:
    tf = fc.TenantFabric(
        "eth",
        1300,
        "vrf-t-eth",
        None,
        10001,
        eth_ports=(fc.EthPort("n0", "mlx5_0", "02:00:00:00:00:01", "leaf-su00-r0", 1, "compute"),),
    )
    (doc,) = yaml.safe_load(fc.nvue(tf, "compute")["leaf-su00-r0"])
    assert doc["set"]["bridge"]["domain"]["br_default"]["vlan"]["1300"] == {"vni": {"10001": {}}}
    with pytest.raises(ValueError, match="no InfiniBand partition key"):
        fc.partitions_conf(tf)


def test_sonic_config_db_binds_the_vlan_interface_to_a_vrf_named_vrf() -> None:
    (cfg,) = fc.sonic(_tf(2), "storage").values()
    (vrf,) = cfg["VRF"]
    assert vrf.startswith("Vrf") and len(vrf) <= fc.IFNAME_MAX
    assert cfg["VLAN"]["Vlan1234"]["vlanid"] == "1234" and cfg["VLAN_INTERFACE"] == {"Vlan1234": {"vrf_name": vrf}}
    assert set(cfg["VLAN_MEMBER"]) == {"Vlan1234|Ethernet0", "Vlan1234|Ethernet8"}


def test_render_is_deterministic_and_its_digest_follows_the_content() -> None:
    a, b = fc.render(_tf(2)), fc.render(_tf(2))
    assert a == b and fc.render(_tf(3))["digest"] != a["digest"]
    assert a["summary"] == {
        "vlan": 1234,
        "vrf": "vrf-ten_0123456789abcdef-pretrain",
        "pkey": "0x0001",
        "vni": None,
        "ib_ports": 16,
        "ethernet_ports": {"storage": 2},
    }
