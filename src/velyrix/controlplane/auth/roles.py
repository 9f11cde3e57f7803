"""Scopes and roles. A role is a named set of scopes; tenant roles act inside one tenant, provider
roles (the NOC's operators, auditors) act across tenants. A key's scopes are a subset of its role's."""

from __future__ import annotations

SCOPES: dict[str, str] = {
    "tenants:read": "read the tenant (provider keys: every tenant)",
    "tenants:write": "rename the tenant",
    "tenants:admin": "create tenants (provider)",
    "keys:read": "list API keys of the tenant",
    "keys:admin": "create and revoke API keys",
    "clusters:read": "read clusters, their plans and status",
    "clusters:write": "create, update and delete clusters",
    "volumes:read": "read volumes",
    "volumes:write": "create, resize and delete volumes",
    "nodes:read": "read nodes (tenants: the nodes allocated to them; provider keys: the fleet)",
    "regions:read": "read regions and their capacity",
    "billing:read": "read usage, invoices, credit notes, SLA contracts and reports",
    "billing:admin": "set SLA contracts, announce maintenance, close billing months (provider)",
    "incidents:read": "read NOC incidents and their timelines (tenants: their own)",
    "incidents:write": "acknowledge, update, mitigate and resolve incidents (provider NOC)",
    "audit:read": "read audit events (tenants: their own; auditors: every tenant's)",
    "fleet:operate": "register nodes and change their state (provider)",
    "fleet:read": "read the whole fleet, its queues, incidents and capacity in the console (provider staff)",
    "nodes:report": "report a node's samples and health verdict (node agents' tokens only, never a role's)",
    "cmk:read": "read the tenant's customer-managed keys (where they live, never a credential)",
    "cmk:admin": "register, rotate, destroy customer-managed keys and grant or revoke their use",
    "scim:provision": "create, change and deactivate the tenant's users and groups over SCIM 2.0 (/scim/v2)",
    "physical:report": "post physical-access events (badge readers, cage doors); the physical-access role only",
    "access:certify": "get short-lived SSH certificates for the tenant's users (root: self-operated clusters only)",
    "access:approve": "approve a provider action on a self-operated cluster's nodes",
}

_READ = {"tenants:read", "clusters:read", "volumes:read", "nodes:read", "regions:read", "incidents:read"}

TENANT_ROLES: dict[str, frozenset[str]] = {
    "owner": frozenset(
        _READ
        | {
            "tenants:write",
            "keys:read",
            "keys:admin",
            "clusters:write",
            "volumes:write",
            "billing:read",
            "audit:read",
            "scim:provision",
            "cmk:read",
            "cmk:admin",
            "access:certify",
            "access:approve",
        }
    ),
    "admin": frozenset(
        _READ
        | {"keys:read", "keys:admin", "clusters:write", "volumes:write", "audit:read", "cmk:read", "cmk:admin"}
        | {"access:certify", "access:approve"}
    ),
    "member": frozenset(_READ | {"clusters:write", "volumes:write", "access:certify"}),
    "viewer": frozenset(_READ),
    "billing": frozenset({"tenants:read", "regions:read", "billing:read"}),
    "scim": frozenset({"scim:provision"}),
}
"""Roles inside one tenant, from most to least powerful."""

PROVIDER_ROLES: dict[str, frozenset[str]] = {
    "operator": frozenset(
        {
            "tenants:read",
            "tenants:admin",
            "keys:read",
            "keys:admin",
            "clusters:read",
            "nodes:read",
            "regions:read",
            "fleet:operate",
            "fleet:read",
            "incidents:read",
            "incidents:write",
            "billing:read",
            "billing:admin",
        }
    ),
    "auditor": frozenset(
        {"tenants:read", "clusters:read", "nodes:read", "regions:read", "audit:read", "incidents:read", "billing:read"}
        | {"fleet:read"}
    ),
    "physical-access": frozenset({"physical:report"}),  # badge and cage-door systems: routes/physical_access.py
}
"""Roles of the cloud provider's staff (keys without a tenant)."""

ALL_ROLES: dict[str, frozenset[str]] = {**TENANT_ROLES, **PROVIDER_ROLES}
