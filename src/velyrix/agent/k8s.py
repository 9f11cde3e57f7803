"""Job attribution on Kubernetes nodes: which pod holds which GPU, and that pod's labels.

The kubelet's pod-resources API (gRPC ``v1.PodResourcesLister/List`` on
``/var/lib/kubelet/pod-resources/kubelet.sock``) lists every pod's devices per resource; for
``nvidia.com/gpu`` the device ids are GPU UUIDs. The pod's labels come from the API server
(``GET /api/v1/namespaces/{ns}/pods/{name}`` with the agent's service-account token) and are cached
while the pod holds its GPUs. The job id is the value of ``job_label`` (default ``velyrix.io/job``),
else ``<namespace>.<pod>``; team, cost center, user and account come from ``velyrix.io/*`` labels.

grpcio is imported lazily (install the ``k8s`` extra); the protobuf messages are decoded by hand, since
only four small messages are read (wire format: https://protobuf.dev/programming-guides/encoding/).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from velyrix import errors
from velyrix.agent import jobs
from velyrix.agent.collectors.base import NodeSample

POD_RESOURCES_SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock"
LIST_METHOD = "/v1.PodResourcesLister/List"
SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
INFO_LABELS = {
    "user": "velyrix.io/user",
    "team": "velyrix.io/team",
    "cost_center": "velyrix.io/cost-center",
    "account": "velyrix.io/account",
}
_UNSAFE = re.compile(r"[^A-Za-z0-9_.:@-]")


@dataclass
class PodDevices:
    """A pod and the device ids it holds of one resource (GPU UUIDs for ``nvidia.com/gpu``)."""

    namespace: str
    name: str
    device_ids: list[str] = field(default_factory=list)
    container: str = ""
    """The first container of the pod that holds a device of the resource."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, bytes | int]]:
    """(field number, value) of a protobuf message; length-delimited values as bytes, varints as int."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            yield number, value
        elif wire == 2:
            length, pos = _varint(data, pos)
            yield number, data[pos : pos + length]
            pos += length
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise errors.ExternalToolError(f"pod-resources answer has an unsupported wire type {wire}")


def parse_list_response(data: bytes, resource: str = "nvidia.com/gpu") -> list[PodDevices]:
    """Decode ``ListPodResourcesResponse``; keep the pods holding ``resource`` and their device ids."""
    pods = []
    for number, pod_raw in _fields(data):
        if number != 1 or not isinstance(pod_raw, bytes):
            continue
        pod = PodDevices(namespace="", name="")
        for pnum, pval in _fields(pod_raw):
            if pnum == 1 and isinstance(pval, bytes):
                pod.name = pval.decode()
            elif pnum == 2 and isinstance(pval, bytes):
                pod.namespace = pval.decode()
            elif pnum == 3 and isinstance(pval, bytes):
                container = ""
                for cnum, cval in _fields(pval):
                    if cnum == 1 and isinstance(cval, bytes):
                        container = cval.decode()
                    if cnum != 2 or not isinstance(cval, bytes):
                        continue
                    dev = dict(_fields(cval)) | {
                        "ids": [v.decode() for n, v in _fields(cval) if n == 2 and isinstance(v, bytes)]
                    }
                    name = dev.get(1)
                    if isinstance(name, bytes) and name.decode() == resource:
                        pod.device_ids.extend(dev["ids"])  # type: ignore[arg-type]
                        pod.container = pod.container or container
        if pod.device_ids:
            pods.append(pod)
    return pods


class PodLabelSource:
    """Job mapping of a Kubernetes node, usable as ``NodeSource.job_source``.

    ``socket``: kubelet pod-resources socket; ``api_url``/``token``/``ca``: API server, bearer token and CA
    bundle path (default: the pod's service account); ``job_label``: pod label holding the job id.
    """

    def __init__(
        self,
        socket: str = POD_RESOURCES_SOCKET,
        api_url: str = "https://kubernetes.default.svc",
        token: str | None = None,
        ca: str | bool | None = None,
        resource: str = "nvidia.com/gpu",
        job_label: str = "velyrix.io/job",
        timeout_s: float = 2.0,
    ):
        self.socket = socket
        self.api_url = api_url.rstrip("/")
        if token is None:
            try:
                with open(f"{SERVICE_ACCOUNT}/token") as fh:
                    token = fh.read().strip()
            except OSError:
                token = ""
        self.token = token
        self.verify: str | bool = ca if ca is not None else f"{SERVICE_ACCOUNT}/ca.crt"
        self.resource = resource
        self.job_label = job_label
        self.timeout_s = timeout_s
        self._labels: dict[tuple[str, str], dict[str, str]] = {}
        self._channel: Any = None

    def list_pods(self) -> list[PodDevices]:
        """Call the kubelet's pod-resources ``List``."""
        try:
            import grpc
        except ImportError as exc:
            raise errors.ExternalToolError(
                "Kubernetes attribution needs grpcio", hint="pip install 'velyrix[k8s]'"
            ) from exc
        if self._channel is None:
            self._channel = grpc.insecure_channel(f"unix://{self.socket}")
        call = self._channel.unary_unary(
            LIST_METHOD, request_serializer=lambda _: b"", response_deserializer=lambda raw: raw
        )
        try:
            raw = call(None, timeout=self.timeout_s)
        except grpc.RpcError as exc:
            raise errors.ExternalToolError(f"kubelet pod-resources at {self.socket}: {exc.code().name}") from exc
        return parse_list_response(raw, self.resource)

    def pod_labels(self, namespace: str, name: str) -> dict[str, str]:
        """The pod's labels from the API server (cached while the pod holds devices)."""
        key = (namespace, name)
        if key not in self._labels:
            resp = httpx.get(
                f"{self.api_url}/api/v1/namespaces/{namespace}/pods/{name}",
                headers={"Authorization": f"Bearer {self.token}"},
                verify=self.verify,
                timeout=self.timeout_s,
            )
            if resp.status_code != 200:
                return {}  # not cached: try again on the next scrape
            self._labels[key] = dict(resp.json().get("metadata", {}).get("labels") or {})
        return self._labels[key]

    def __call__(self, sample: NodeSample) -> jobs.JobMap:
        """The job mapping of ``sample``'s GPUs now (GPU UUIDs matched to pod devices)."""
        out = jobs.JobMap(kubernetes=True)
        try:
            pods = self.list_pods()
        except errors.VelyrixError as exc:
            out.problems.append(exc.message)
            return out
        index_of = {g.uuid: g.index for g in sample.gpus}
        live = {(p.namespace, p.name) for p in pods}
        self._labels = {k: v for k, v in self._labels.items() if k in live}
        for pod in pods:
            try:
                labels = self.pod_labels(pod.namespace, pod.name)
            except httpx.HTTPError as exc:
                out.problems.append(f"pod {pod.namespace}/{pod.name}: {exc}")
                labels = {}
            job = _UNSAFE.sub("_", labels.get(self.job_label) or f"{pod.namespace}.{pod.name}")[:64]
            for uuid in pod.device_ids:
                if uuid in index_of:
                    gpu_jobs = out.gpu_jobs.setdefault(index_of[uuid], [])
                    if job not in gpu_jobs:
                        gpu_jobs.append(job)
            out.info[job] = jobs.JobInfo(
                hpc_job=job,
                namespace=pod.namespace,
                pod=pod.name,
                container=pod.container,
                **{k: labels.get(v, "")[: jobs.MAX_VALUE_CHARS] for k, v in INFO_LABELS.items()},
            )
        return out
