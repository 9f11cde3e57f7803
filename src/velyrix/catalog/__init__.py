"""What exists and what it costs: node types, GPU models, switches, fabrics, storage tiers, regions, prices
and failure rates, read lazily from the versioned TOML files in ``data/``.

Use it as ``from velyrix import catalog`` then ``catalog.node_type("hgx-h200-8g")``.
"""

from velyrix.catalog.reader import (
    fabric,
    fabric_names,
    failure_rates,
    gpu_hour_price_usd,
    gpu_model,
    gpu_model_names,
    load_toml,
    node_type,
    node_type_names,
    region,
    region_names,
    scalable_unit_nodes,
    storage_hcl_keys,
    storage_tier,
    storage_tier_by_hcl_key,
    storage_tier_names,
    switch,
    switch_names,
)

__all__ = [
    "failure_rates",
    "fabric",
    "fabric_names",
    "gpu_hour_price_usd",
    "gpu_model",
    "gpu_model_names",
    "load_toml",
    "node_type",
    "node_type_names",
    "region",
    "region_names",
    "scalable_unit_nodes",
    "storage_hcl_keys",
    "storage_tier",
    "storage_tier_by_hcl_key",
    "storage_tier_names",
    "switch",
    "switch_names",
]
