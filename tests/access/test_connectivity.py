"""Private links and BYOIP BGP sessions declared in HCL: planned with prices, delivered as BIRD 2
configuration the real parser accepts, and bad inputs refused at their file:line:column (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES
from velyrix import errors
from velyrix.catalog import connectivity as catalog_conn
from velyrix.declarations import connectivity
from velyrix.ops import connectivity_delivery
from velyrix.planners import bird_config

EXAMPLE = EXAMPLES / "acme-connectivity.tf"
needs_bird = pytest.mark.skipif(connectivity_delivery.bird_binary() is None, reason="needs bird2 (apt-packages.txt)")


def test_private_link_and_byoip_session_plan_with_prices(velyrix) -> None:  # type: ignore[no-untyped-def]
    result = velyrix("plan", str(EXAMPLE), "--offline", "--json")
    assert result.exit_code == 0, result.stderr
    plan = json.loads(result.stdout)
    items = {i["address"]: i for i in plan["connectivity"]["items"]}
    link = items["velyrix_private_link.aws"]
    vx, aws = catalog_conn.velyrix(), catalog_conn.cloud("aws")
    # dual redundancy: two 100 Gb/s ports, each with a cross-connect, a BGP session and MACsec
    assert link["ports"] == 2
    expected = 2 * (
        vx.port_month_usd[100] + vx.cross_connect_month_usd + vx.bgp_session_month_usd + vx.macsec_port_month_usd
    )
    assert link["cost"]["monthly_usd"] == pytest.approx(expected)
    assert link["cloud_estimate"]["monthly_usd"] == pytest.approx(2 * 730 * aws.cloud_port_hour_usd[100])
    byoip = items["velyrix_bgp_session.byoip"]
    assert byoip["cost"]["monthly_usd"] == pytest.approx(vx.bgp_session_month_usd + vx.byoip_prefix_month_usd)
    assert items["ddos_protection.acme-train"]["cost"]["monthly_usd"] == vx.ddos_month_usd
    cluster_total = plan["resources"][0]["cost"]["monthly_usd"]
    assert plan["total_monthly_usd"] == pytest.approx(cluster_total + plan["connectivity"]["monthly_usd"])
    assert "change-me" not in result.stdout  # the MD5 password never appears in a plan


@needs_bird
def test_rendered_bird_configuration_is_accepted_by_bird(tmp_path: Path) -> None:
    conn = connectivity.load(EXAMPLE)
    (done,) = connectivity_delivery.deliver(conn, tmp_path)
    assert done.cluster == "acme-train" and done.bgp_sessions == 3  # two link ports and the BYOIP session
    text = done.path.read_text()
    assert "neighbor 169.254.10.6 as 64512;" in text  # port 2 in the next /30
    assert "route 203.0.113.0/24 max 24 as 64500;" in text  # the ROA evidence, checked on import
    assert oct(done.path.stat().st_mode & 0o777) == "0o600"


@needs_bird
def test_bird_parser_is_real_and_refuses_a_broken_configuration(tmp_path: Path) -> None:
    text = bird_config.render(connectivity.load(EXAMPLE), "acme-train").replace("as 64512;", "as 64512000000;")
    path = tmp_path / "broken.conf"
    path.write_text(text)
    with pytest.raises(errors.ExternalToolError, match="Number out of range"):
        connectivity_delivery.check(path)


BAD = {
    "public ASN without evidence": (
        ("  asn           = 64500\n", "  asn           = 3356\n"),
        "asn",
        "is a public ASN the tenant has not shown it holds",
    ),
    "a /33": (
        ('  prefixes      = ["203.0.113.0/24"]', '  prefixes      = ["203.0.113.0/33"]'),
        "prefixes",
        "/33 is longer than IPv4's 32 bits",
    ),
    "overlapping prefixes": (
        ('  advertised_prefixes = ["10.40.0.0/16"]', '  advertised_prefixes = ["203.0.113.128/25"]'),
        "prefixes",
        "overlaps",
    ),
    "prefix not covered by a ROA": (
        ('    prefix     = "203.0.113.0/24"', '    prefix     = "198.51.100.0/24"'),
        "prefixes",
        "no authorization lets AS64500 originate it",
    ),
}


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_bad_connectivity_input_is_refused_at_its_line(velyrix, tmp_path: Path, case: str) -> None:  # type: ignore[no-untyped-def]
    (old, new), attribute, message = BAD[case]
    text = EXAMPLE.read_text()
    assert old in text
    bad = tmp_path / "main.tf"
    bad.write_text(text.replace(old, new))
    result = velyrix("plan", str(bad), "--offline")
    assert result.exit_code == 2, result.stdout + result.stderr
    lines = bad.read_text().splitlines()
    at = [
        n
        for n, line in enumerate(lines, 1)
        if line.strip().startswith(f"{attribute} ") and "velyrix_bgp_session" in "\n".join(lines[:n])
    ]
    line = at[0] if case != "public ASN without evidence" else next(n for n, t in enumerate(lines, 1) if "= 3356" in t)
    assert f"{bad}:{line}:3: " in result.stderr and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_a_vlan_already_used_names_the_first_link(tmp_path: Path) -> None:
    text = EXAMPLE.read_text()
    start = text.index('resource "velyrix_private_link" "aws"')
    end = text.index("}\n", start) + 2
    second = (
        text[start:end]
        .replace('"aws"', '"aws_backup"', 1)
        .replace("169.254.10.", "169.254.20.")
        .replace('["10.40.0.0/16"]', '["10.41.0.0/16"]')
    )
    bad = tmp_path / "main.tf"
    bad.write_text(text + "\n" + second)
    with pytest.raises(errors.SpecError) as exc:
        connectivity.load(bad)
    (diag,) = exc.value.diagnostics
    first_vlan = next(n for n, t in enumerate(text.splitlines(), 1) if t.strip().startswith("vlan "))
    assert (
        diag.message
        == f"VLAN 101 is already used by velyrix_private_link.aws ({bad}:{first_vlan}:3) on cluster 'acme-train'"
    )
    assert diag.line > first_vlan and diag.suggestion == "2"


def test_private_asn_ranges_follow_rfc_6996() -> None:
    from velyrix.declarations import connectivity_checks as cc

    assert [cc.is_private_asn(a) for a in (64511, 64512, 65534, 65535, 4199999999, 4200000000, 4294967294)] == [
        False,
        True,
        True,
        False,
        False,
        True,
        True,
    ]
    assert cc.asn_problem(23456) and cc.asn_problem(0) and cc.asn_problem(4294967295)


@needs_bird
def test_network_render_writes_configuration_bird_accepts(velyrix, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = velyrix("network", "render", str(EXAMPLE), "--out", str(tmp_path / "edge"))
    assert result.exit_code == 0, result.stderr
    assert "acme-train.bird.conf: 3 BGP sessions, accepted by bird -p" in result.stdout.replace("\n", "")
    assert (tmp_path / "edge" / "acme-train.bird.conf").exists()
