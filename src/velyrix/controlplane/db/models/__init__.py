"""The control plane's ORM models, one module per area, all on one declarative ``Base``:

- ``base``: ``Base``, ``UTCDateTime``, ``new_id``, ``utcnow``;
- ``resources``: tenants, API keys, clusters, nodes and their transitions, volumes, audit events,
  idempotency records (migration ``0001``);
- ``reconcile``: network allocations, acceptance reports, per-cluster reconcile work (migration ``0002``);
- ``health``: node credentials, node reports, RMA records, incidents (migration ``0003``).
- ``cloud``: each node's evidence history and health events (migration ``0004``);
- ``evidence``: the audit log's Merkle tree and checkpoints, sanitization certificates (migration ``0006``);
- ``noc``: incidents' states and timelines, SLA contracts, maintenance windows, the allocation history
  metering reads, usage events, invoices, credit notes, billing months (migration ``0007``);
- ``identity``: API-key details, users, sessions, identity providers, logins, MFA, SCIM groups (``0008``).

Import names from here (``from velyrix.controlplane.db.models import Cluster``); importing the package
registers every table on ``Base.metadata`` (Alembic and ``create_all`` see them all). A new area adds
``models/<area>.py`` and one import line below; area modules import ``Base`` from ``models.base``, never
this package. Tables of the later areas are reached by module (``from ...db.models import noc``).
"""

import sqlalchemy as sa

from velyrix.controlplane.db.models import access, cloud, evidence, identity, leases, noc  # noqa: F401  (their tables join Base.metadata)
from velyrix.controlplane.db.models import scheduler as scheduler  # scheduler_deliveries joins Base.metadata
from velyrix.controlplane.db.models.base import Base, UTCDateTime, assign_id, new_id, utcnow
from velyrix.controlplane.db.models.bmc import BmcCredential  # noqa: F401  (BMC endpoints, sealed: migration 0019)
from velyrix.controlplane.db.models.credentials import CredentialGeneration  # noqa: F401  (0022)
from velyrix.controlplane.db.models.health import Incident, NodeCredential, NodeReport, RmaRecord
from velyrix.controlplane.db.models.keys import CustomerKey, CustomerKeyGrant, VolumeDataKey  # noqa: F401
from velyrix.controlplane.db.models.mfa import MfaChallenge
from velyrix.controlplane.db.models.noc_intake import EventIntegration, NodeDegradation
from velyrix.controlplane.db.models.reconcile import AcceptanceReport, ClusterWork, NetworkAllocation
from velyrix.controlplane.db.models.reconcile_work import ClusterWorkNode  # noqa: F401
from velyrix.controlplane.db.models.resources import (
    ApiKey,
    AuditEvent,
    Cluster,
    IdempotencyRecord,
    Node,
    NodeTransition,
    Tenant,
    Volume,
)
from velyrix.controlplane.db.models.rollouts import Rollout, RolloutStep  # noqa: F401  (0017)
from velyrix.controlplane.db.models.usage import JobUsage  # noqa: F401  (GPU time per job: 0029)

sa.event.listen(Base, "init", assign_id, propagate=True)

__all__ = [
    "AcceptanceReport",
    "ApiKey",
    "AuditEvent",
    "Base",
    "Cluster",
    "ClusterWork",
    "EventIntegration",
    "IdempotencyRecord",
    "Incident",
    "MfaChallenge",
    "NetworkAllocation",
    "Node",
    "NodeCredential",
    "NodeDegradation",
    "NodeReport",
    "NodeTransition",
    "RmaRecord",
    "Tenant",
    "UTCDateTime",
    "Volume",
    "new_id",
    "utcnow",
]
