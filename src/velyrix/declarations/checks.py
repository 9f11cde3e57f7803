"""The checks of a declaration beyond its syntax: the diagnostics collector (``Checker``), the catalog checks
of one cluster (known node type, fabric and region, the fabric the node type supports, regional capacity)
and the checks across the file (one provider block, unique addresses and names). Used by ``loader``."""

from __future__ import annotations

from typing import Any

from velyrix import catalog
from velyrix.declarations import diagnostics, hcl, models

Checker = diagnostics.Checker


def find_attribute(block: hcl.Block, name: str) -> hcl.Attribute:
    """The attribute ``name`` of ``block`` (it must be there: callers checked)."""
    return next(a for a in block.attributes if a.name == name)


def catalog_checks(
    block: hcl.Block, attrs: dict[str, Any], chk: Checker, region: str | None, region_declared: bool
) -> bool:
    ok = True

    def known(name: str, kind: str, valid: list[str]) -> bool:
        if name not in attrs:
            return False
        if attrs[name] not in valid:
            a = find_attribute(block, name)
            chk.unknown(a.line, a.column, kind, attrs[name], valid)
            return False
        return True

    nt_ok = known("node_type", "node type", catalog.node_type_names())
    fab_ok = known("fabric", "fabric", catalog.fabric_names())
    ok = nt_ok and fab_ok
    if "region" in attrs:
        ok = known("region", "region", catalog.region_names()) and ok
    effective_region = attrs.get("region") or region
    if effective_region is None and not region_declared:
        chk.error(
            block.line,
            block.column,
            "no region: set it in the provider block or on the resource",
            expected='provider "velyrix" { region = "us-east-1" }',
        )
        ok = False
    elif effective_region is None:
        ok = False
    if nt_ok and fab_ok:
        nt = catalog.node_type(attrs["node_type"])
        if attrs["fabric"] not in nt.fabrics:
            a = find_attribute(block, "fabric")
            chk.error(
                a.line,
                a.column,
                f"node type {nt.name} cannot be served by fabric {attrs['fabric']}",
                expected="one of " + ", ".join(nt.fabrics),
                suggestion=nt.fabrics[0],
            )
            ok = False
    if nt_ok and effective_region in catalog.region_names() and "node_count" in attrs:
        cap = catalog.region(effective_region).capacity.get(attrs["node_type"], 0)
        if attrs["node_count"] > cap:
            a = find_attribute(block, "node_count")
            chk.error(
                a.line,
                a.column,
                f"node_count {attrs['node_count']} exceeds {effective_region}'s capacity of {cap} "
                f"{attrs['node_type']} nodes",
                expected=f"1..{cap}" if cap else "another region or node type",
            )
            ok = False
    return ok


def cross_checks(providers: list[hcl.Block], clusters: list[models.ClusterSpec], chk: Checker) -> None:
    """One provider block in the configuration; addresses and cluster names used once."""
    if len(providers) > 1:
        for extra in providers[1:]:
            chk.error(extra.line, extra.column, "the velyrix provider is configured twice", file=extra.file or None)
    seen_addr: dict[str, int] = {}
    seen_name: dict[str, int] = {}
    for c in clusters:
        line = c.position.line if c.position else 1
        if c.address in seen_addr:
            chk.error(line, 1, f"resource {c.address} is declared twice (first on line {seen_addr[c.address]})")
        seen_addr.setdefault(c.address, line)
        if c.name in seen_name:
            chk.error(line, 1, f"cluster name '{c.name}' is used twice (first on line {seen_name[c.name]})")
        seen_name.setdefault(c.name, line)
