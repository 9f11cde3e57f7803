"""The ``twin`` collector: a node agent bound to one node of a running digital twin (``velyrix up``).

The twin's hardware lives in the process of ``velyrix up``. An agent reads its node there the way a real
agent reads NVML and sysfs: ``GET {control_plane}/v1/sim/nodes/{hostname}/telemetry`` with the node's own
token answers what the twin's devices show now (``velyrix.agent.collectors.sim.twin_telemetry``), stamped
with the twin's clock. Inside ``up`` the same function is called directly (``read``), so both paths give the
agent the same data. The agent then runs its own health engine on it and reports as on any node.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from velyrix import errors
from velyrix.agent import reporting
from velyrix.agent.collectors.base import Collector, NodeSample

Reader = Callable[[str], "dict[str, Any] | NodeSample"]
"""hostname -> the node's ``NodeSample``, or its JSON form (over HTTP)."""


class TwinUnavailableError(errors.VelyrixError):
    """The twin's telemetry endpoint could not be read (``velyrix up`` not running, wrong URL or token)."""

    code = "twin_unavailable"
    http_status = 502
    user_error = False
    template = "cannot read twin node {hostname} at {url}: {reason}"


def http_reader(
    control_plane: str, node_token: str, *, timeout_s: float = 5.0, ca_bundle: str | None = None
) -> tuple[Reader, httpx.Client]:
    """A reader over ``control_plane``'s twin telemetry endpoint, authenticated with ``node_token`` (an
    https endpoint verified against the system's CAs or the PEM ``ca_bundle``); returns it with its HTTP
    client (close it when done)."""
    if not control_plane.startswith(("http://", "https://")):
        raise errors.InvalidInputError(
            f"control plane URL {control_plane!r} is not http(s)", hint="e.g. --control-plane http://127.0.0.1:8600"
        )
    if not node_token:
        raise errors.InvalidInputError(
            "the twin collector reads its node with the node's token",
            hint="pass --node-token (velyrix node token NODE)",
        )
    base = control_plane.rstrip("/")
    client = httpx.Client(
        timeout=timeout_s, headers={"Authorization": f"Bearer {node_token}"}, verify=reporting.tls_context(ca_bundle)
    )

    def read(hostname: str) -> dict[str, Any]:
        url = f"{base}/v1/sim/nodes/{hostname}/telemetry"
        try:
            resp = client.get(url)
        except httpx.TransportError as exc:
            raise TwinUnavailableError(hostname=hostname, url=url, reason=type(exc).__name__) from exc
        if resp.status_code != 200:
            raise TwinUnavailableError(hostname=hostname, url=url, reason=f"HTTP {resp.status_code}: {resp.text[:200]}")
        body = resp.json()
        if not isinstance(body, dict):
            raise TwinUnavailableError(hostname=hostname, url=url, reason="the answer is not a JSON object")
        return body

    return read, client


class TwinCollector(Collector):
    """Collector over one twin node: ``read(hostname)`` gives its telemetry (``http_reader`` from another
    process, ``twin_telemetry`` bound to the region inside ``velyrix up``). ``collected_at_s`` of the samples
    is the twin's clock, so the agent's evidence, the XID times and the counters share one clock."""

    name = "twin"
    twin_clock = True

    def __init__(self, hostname: str, read: Reader, close: Callable[[], None] | None = None) -> None:
        self.hostname = hostname
        self._read = read
        self._close = close

    def collect(self) -> NodeSample:
        raw = self._read(self.hostname)
        sample = raw if isinstance(raw, NodeSample) else NodeSample.from_dict(raw)
        if sample.hostname != self.hostname:
            raise errors.InvalidInputError(f"the twin answered for '{sample.hostname}', not '{self.hostname}'")
        return sample

    def close(self) -> None:
        if self._close is not None:
            self._close()
