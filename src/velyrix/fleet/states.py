"""Node lifecycle states: documented constants, no logic (CONTRIBUTING.md, "State").

A node has two independent state variables:

* ``provisioning_state`` — what the control plane is doing with the node right now (Ironic's
  provision state). Allowed moves are in ``velyrix.fleet.transitions.PROVISIONING_TABLE``.
* ``fleet_stage`` — where the node is in its service life (burn-in, production, quarantine, RMA,
  retirement). Allowed moves are in ``velyrix.fleet.transitions.STAGE_TABLE``.

Only a node that is ``AVAILABLE`` and in ``PRODUCTION`` may be allocated to a tenant.
"""

from __future__ import annotations

# --- provisioning states ------------------------------------------------------------------------

ENROLLED = "enrolled"
"""Known to the control plane (discovered through the driver); hardware not yet inspected."""

INSPECTING = "inspecting"
"""The driver is reading the node's hardware inventory (GPUs, NICs, NVMe, firmware) through the BMC."""

AVAILABLE = "available"
"""Inspected, sanitized, powered, owned by no tenant: can be allocated (if the stage is production)."""

ALLOCATED = "allocated"
"""Reserved for one cluster of one tenant (single-tenant host); nothing written to it yet."""

PROVISIONING = "provisioning"
"""Image, firmware baseline, tenant networks and storage are being applied, then acceptance tests run."""

ACTIVE = "active"
"""Delivered to the tenant: provisioned, networked, validated."""

DEPROVISIONING = "deprovisioning"
"""Being taken back from a tenant: drained, networks and storage detached."""

SANITIZING = "sanitizing"
"""Local disks and GPU memory being wiped (NIST SP 800-88 purge) before the node returns to the pool."""

FAILED = "failed"
"""A driver operation failed or the node is unhealthy; needs inspection (or repair) before reuse."""

PROVISIONING_STATES: tuple[str, ...] = (
    ENROLLED,
    INSPECTING,
    AVAILABLE,
    ALLOCATED,
    PROVISIONING,
    ACTIVE,
    DEPROVISIONING,
    SANITIZING,
    FAILED,
)
"""Every provisioning state, in lifecycle order."""

TENANT_STATES: tuple[str, ...] = (ALLOCATED, PROVISIONING, ACTIVE, DEPROVISIONING)
"""States in which a node belongs to a tenant's cluster (its ``cluster_id`` must be set)."""

# --- fleet stages -------------------------------------------------------------------------------

BURN_IN = "burn-in"
"""New or repaired hardware under extended testing; not sold until it passes."""

PRODUCTION = "production"
"""Healthy and sellable."""

QUARANTINED = "quarantined"
"""Taken out of service by a health verdict or a failed acceptance test, pending diagnosis."""

RMA = "rma"
"""Sent back to the vendor (return merchandise authorization) for a part replacement."""

RETIRED = "retired"
"""Permanently out of the fleet (terminal)."""

FLEET_STAGES: tuple[str, ...] = (BURN_IN, PRODUCTION, QUARANTINED, RMA, RETIRED)
"""Every fleet stage, in service-life order."""
