"""Load the catalog's TOML data lazily into frozen records.

Each file is read once, on first use. Unknown names raise ``UnknownNameError`` with the closest name.
"""

from __future__ import annotations

import dataclasses
import functools
import tomllib
from importlib import resources
from typing import Any, TypeVar

from velyrix import errors
from velyrix.catalog import records

T = TypeVar("T")


@functools.cache
def _load(filename: str) -> dict[str, Any]:
    data_dir = resources.files("velyrix.catalog") / "data"
    try:
        return tomllib.loads((data_dir / filename).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise errors.CatalogError(f"cannot read catalog file {filename}: {exc}") from exc


def _build(cls: type[T], name: str, raw: dict[str, Any]) -> T:
    fields = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kwargs = {k: (tuple(v) if isinstance(v, list) else v) for k, v in raw.items() if k in fields}
    try:
        return cls(name=name, **kwargs)  # type: ignore[call-arg]
    except TypeError as exc:
        raise errors.CatalogError(f"catalog entry '{name}' ({cls.__name__}) is malformed: {exc}") from exc


def _section(filename: str, kind: str, name: str) -> dict[str, Any]:
    data = _load(filename)
    if name not in data:
        raise errors.UnknownNameError(kind, name, data.keys())
    section: dict[str, Any] = data[name]
    return section


@functools.cache
def node_type(name: str) -> records.NodeType:
    """The node type called ``name`` (e.g. ``hgx-h200-8g``)."""
    return _build(records.NodeType, name, _section("node_types.toml", "node type", name))


def node_type_names() -> list[str]:
    return sorted(_load("node_types.toml"))


@functools.cache
def gpu_model(name: str) -> records.GPUModel:
    """The GPU model called ``name`` (a node type's ``gpu_model``, e.g. ``H200-SXM5-141GB``)."""
    return _build(records.GPUModel, name, _section("gpus.toml", "GPU model", name))


def gpu_model_names() -> list[str]:
    return sorted(_load("gpus.toml"))


@functools.cache
def switch(name: str) -> records.Switch:
    """The switch model called ``name`` (e.g. ``qm9700``)."""
    return _build(records.Switch, name, _section("switches.toml", "switch", name))


def switch_names() -> list[str]:
    return sorted(_load("switches.toml"))


@functools.cache
def fabric(name: str) -> records.Fabric:
    """The compute fabric called ``name`` (e.g. ``infiniband-ndr``)."""
    return _build(records.Fabric, name, _section("fabrics.toml", "fabric", name))


def fabric_names() -> list[str]:
    return sorted(_load("fabrics.toml"))


_TIER_FIELDS = {f.name for f in dataclasses.fields(records.StorageTier)}


@functools.cache
def storage_tier(name: str) -> records.StorageTier:
    """The storage tier called ``name`` (``parallel_fs``, ``object``, ...)."""
    raw = _section("storage_tiers.toml", "storage tier", name)
    params = {k: float(v) for k, v in raw.items() if k not in _TIER_FIELDS and isinstance(v, (int, float))}
    base = {k: v for k, v in raw.items() if k in _TIER_FIELDS}
    return records.StorageTier(name=name, params=params, **base)


def storage_tier_names() -> list[str]:
    return list(_load("storage_tiers.toml"))


def storage_tier_by_hcl_key(key: str) -> records.StorageTier:
    """The tier whose HCL attribute is ``key`` (e.g. ``parallel_fs_tb``)."""
    for name in storage_tier_names():
        tier = storage_tier(name)
        if tier.hcl_key and tier.hcl_key == key:
            return tier
    raise errors.UnknownNameError("storage attribute", key, storage_hcl_keys())


def storage_hcl_keys() -> list[str]:
    return [storage_tier(n).hcl_key for n in storage_tier_names() if storage_tier(n).hcl_key]


@functools.cache
def region(name: str) -> records.Region:
    """The region called ``name`` with its capacity per node type."""
    raw = _section("regions.toml", "region", name)
    return records.Region(
        name=name,
        description=raw["description"],
        scalable_unit_nodes=int(raw["scalable_unit_nodes"]),
        spare_fraction=float(raw["spare_fraction"]),
        vlan_range=(int(raw["vlan_range"][0]), int(raw["vlan_range"][1])),
        capacity={k: int(v) for k, v in raw.get("capacity", {}).items()},
        firmware_baseline={k: str(v) for k, v in raw.get("firmware_baseline", {}).items()},
    )


def region_names() -> list[str]:
    return sorted(_load("regions.toml"))


def scalable_unit_nodes() -> int:
    """Nodes per scalable unit, the size every region of ``regions.toml`` builds in (a catalog error when
    regions disagree): the default grouping where no region or fabric plan says more."""
    sizes = {region(name).scalable_unit_nodes for name in region_names()}
    if len(sizes) != 1:
        raise errors.CatalogError(f"regions.toml: regions build in different scalable units {sorted(sizes)}")
    return sizes.pop()


def gpu_hour_price_usd(node_type_name: str) -> float:
    """List price in USD per GPU-hour for a node type."""
    prices = _load("prices.toml")["gpu_hour_usd"]
    if node_type_name not in prices:
        raise errors.UnknownNameError("priced node type", node_type_name, prices.keys())
    return float(prices[node_type_name])


@functools.cache
def failure_rates() -> records.FailureRates:
    """Published node failure rates and the Llama 3 mix of interruption causes."""
    raw = _load("failure_rates.toml")
    total = sum(int(c["count"]) for c in raw["cause"])
    causes = tuple(
        records.FailureCause(
            name=c["name"], count=int(c["count"]), share=int(c["count"]) / total, precursor=bool(c["precursor"])
        )
        for c in raw["cause"]
    )
    return records.FailureRates(
        rates_per_1000_node_days={k: float(v) for k, v in raw["node_failure_rate"].items()}, causes=causes
    )


def load_toml(filename: str) -> dict[str, Any]:
    """Raw data of another catalog file (e.g. ``xids.toml``), for modules that type it themselves."""
    return _load(filename)
