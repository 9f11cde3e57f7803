"""``SimNetwork``: the twin's network driver. It holds what each cluster's subnet manager, UFM and switches
would be running (the configuration applied last) and records every request in ``history``, so that tests
and the API can see what the control plane applied and when (the twin's clock)."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping
from typing import Any

from velyrix.fleet.network import NetworkDriver


class SimNetwork(NetworkDriver):
    """The twin's fabric: ``configs`` (cluster -> applied configuration), ``history`` (every request done)."""

    name = "sim"

    def __init__(self, now: Callable[[], float]) -> None:
        self.now = now
        self.configs: dict[str, dict[str, Any]] = {}
        self.history: list[dict[str, Any]] = []
        self._done: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def _record(self, request_id: str, action: str, cluster: str, digest: str | None, changed: bool) -> dict[str, Any]:
        rec = {
            "request_id": request_id,
            "action": action,
            "cluster": cluster,
            "digest": digest,
            "at_s": self.now(),
            "changed": changed,
        }
        self._done[request_id] = rec
        self.history.append(rec)
        return dict(rec)

    def apply(self, cluster: str, config: Mapping[str, Any], *, request_id: str) -> dict[str, Any]:
        digest = str(config.get("digest") or "")
        if not digest:
            raise ValueError("a fabric configuration carries its digest (planners.fabric_config.render)")
        with self._lock:
            if request_id in self._done:
                return dict(self._done[request_id])
            changed = (self.configs.get(cluster) or {}).get("digest") != digest
            self.configs[cluster] = copy.deepcopy(dict(config))
            return self._record(request_id, "apply", cluster, digest, changed)

    def remove(self, cluster: str, *, request_id: str) -> dict[str, Any]:
        with self._lock:
            if request_id in self._done:
                return dict(self._done[request_id])
            old = self.configs.pop(cluster, None)
            return self._record(request_id, "remove", cluster, old.get("digest") if old else None, old is not None)

    def applied(self, cluster: str) -> dict[str, Any] | None:
        with self._lock:
            cfg = self.configs.get(cluster)
            return copy.deepcopy(cfg) if cfg is not None else None
