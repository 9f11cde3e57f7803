"""Domain commands a route runs on the request's session, beside the tenant-scoped queries of ``scoping``.

Routes never hold a session (tests/controlplane/test_layering.py); ``Commands(ctx.scope)`` hands the scope's
session to the domain functions that need one: issuing API keys and node credentials, recording node
reports, reserving fleet capacity for a declaration, and the reconcile bookkeeping of a cluster. Every
command acts for ``scope.principal`` and within its rights; rows passed in are rows that principal read
through the scope.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from velyrix import errors
from velyrix.controlplane import node_health
from velyrix.controlplane.auth import principals
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import allocation, steps
from velyrix.controlplane.scoping import Scope


class Commands:
    """The commands of one request, on ``scope``'s session."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope

    def cluster_work(self, cluster: models.Cluster) -> models.ClusterWork:
        """The reconcile bookkeeping of ``cluster`` (created on first use)."""
        return steps.work_of(self.scope.session, cluster)

    def reserve_capacity(self, region: str, node_type: str, count: int, *, already: int = 0) -> None:
        """The fleet can serve ``count`` nodes of ``node_type`` in ``region`` (``already``: declared before),
        checked and held under the allocation lock until the request commits (``reconcile.allocation.reserve``;
        raises ``CapacityError``)."""
        allocation.reserve(self.scope.session, region, node_type, count, already=already)

    def issue_node_token(self, node: models.Node) -> tuple[models.NodeCredential, str]:
        """A new credential for ``node``'s agent (previous ones revoked): ``(row, token)``; provider only."""
        if not self.scope.principal.is_provider:
            raise errors.PermissionDeniedError(scope="fleet:operate")
        return node_health.issue_token(self.scope.session, node, created_by=self.scope.principal.actor)

    def record_report(
        self, node: models.Node, report: Mapping[str, Any], handler: Any = None
    ) -> tuple[models.NodeReport, list[str]]:
        """Store a node's report and verdict, and act on it through ``handler``: ``(row, done)`` (see
        ``node_health.record_report``)."""
        return node_health.record_report(self.scope.session, node, report, handler)

    def revoke_key(self, row: models.ApiKey) -> list[str]:
        """Revoke ``row`` (read through the scope) and the keys it created, transitively; returns their ids."""
        return principals.revoke_with_children(self.scope.session, row)

    def issue_key(self, **kwargs: Any) -> tuple[models.ApiKey, str]:
        """A new API key in this principal's tenancy, within its rights (``principals.issue_key``)."""
        p = self.scope.principal
        return principals.issue_key(self.scope.session, tenant_id=p.tenant_id, creator=p, **kwargs)
