"""Reconcilers of the control plane: clusters from Pending to Ready on a fleet driver (the twin or real nodes).

- the reconcilers' own tables (network allocations, acceptance reports, per-cluster work) are in
  ``velyrix.controlplane.db.models.reconcile``; ``tables`` is a deprecated alias of that module.
- ``phases``: the cluster phases and what each one does.
- ``allocation``: topology-aware node choice; ``networks``: VLAN/VRF/partition key; ``volumes``: storage.
- ``cluster``: one reconcile step of one cluster; ``teardown``: destroy, scale-down, node release.
- ``report``/``signing``: the signed acceptance report; ``runner``: the loop, claims, timeouts.
- ``runtime``: twin + driver + reconciler thread for ``velyrix up`` and ``velyrix demo``.
"""

from velyrix.controlplane.db.models import reconcile as tables  # deprecated alias: use ``db.models``

__all__ = ["tables"]
