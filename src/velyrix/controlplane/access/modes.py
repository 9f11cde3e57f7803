"""Operating modes of a cluster and what each lets the tenant and the provider do on its nodes.

``managed``: Velyrix's operators run the nodes; the tenant's users log in as themselves, never as root.
``self_operated``: the tenant's owners get root on their nodes and BMC access; a provider action on
those nodes needs the tenant's approval, or a break-glass with a reason (audited, tenant notified).
"""

from __future__ import annotations

from dataclasses import dataclass

from velyrix.declarations import models

MANAGED, SELF_OPERATED = models.OPERATING_MODES
MODES = models.OPERATING_MODES
"""The values of a cluster's ``operating_mode`` (HCL and API); ``managed`` is the default."""


@dataclass(frozen=True)
class ModeRights:
    """What a mode grants: ``tenant_root_roles`` are the tenant roles that may get root (and BMC)
    certificates; ``provider_needs_approval`` says whether provider actions on the nodes need the
    tenant's approval or a break-glass."""

    tenant_root_roles: frozenset[str]
    provider_needs_approval: bool
    why: str


RIGHTS: dict[str, ModeRights] = {
    MANAGED: ModeRights(frozenset(), False, "a managed cluster is run by Velyrix operators: no tenant root"),
    SELF_OPERATED: ModeRights(
        frozenset({"owner", "admin"}),
        True,
        "a self-operated cluster is run by the tenant: provider actions need its approval or a break-glass",
    ),
}
"""Rights per mode, as data (roles from ``controlplane.auth.roles.TENANT_ROLES``)."""


def rights(mode: str) -> ModeRights:
    """The rights of ``mode``; ``KeyError`` for a name outside ``MODES``."""
    return RIGHTS[mode]


def may_get_root(mode: str, role: str) -> bool:
    """Whether a tenant user of ``role`` may get a root certificate for a cluster in ``mode``."""
    return role in RIGHTS[mode].tenant_root_roles
