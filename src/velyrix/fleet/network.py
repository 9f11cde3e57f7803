"""The network driver seam: how a cluster's fabric configuration reaches the gear (the subnet manager or
UFM for InfiniBand partitions, the Ethernet switches for VLANs, VNIs and VRFs).

A configuration is the rendering of ``velyrix.planners.fabric_config.render`` (OpenSM partitions.conf, UFM
REST calls, NVUE YAML, SONiC config_db), identified by its ``digest``. ``apply`` makes it the cluster's
configuration, replacing the one before; ``remove`` takes the cluster's configuration off the gear. Both
are idempotent by ``request_id`` (the same id returns the same record) and by content (applying what is
already applied changes nothing). The twin's implementation is ``velyrix.fleet.drivers.sim.network``.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any


class NetworkDriver(abc.ABC):
    """Applies and removes clusters' fabric configurations; reports what is applied."""

    name: str = "abstract"

    @abc.abstractmethod
    def apply(self, cluster: str, config: Mapping[str, Any], *, request_id: str) -> dict[str, Any]:
        """Make ``config`` the configuration of ``cluster`` (its id). Returns the record of what was applied:
        ``{"request_id", "action": "apply", "cluster", "digest", "at_s", "changed": bool}``."""

    @abc.abstractmethod
    def remove(self, cluster: str, *, request_id: str) -> dict[str, Any]:
        """Take ``cluster``'s configuration off the gear (nothing to remove is no error). Returns the record."""

    @abc.abstractmethod
    def applied(self, cluster: str) -> dict[str, Any] | None:
        """The configuration applied for ``cluster`` now, or None."""
