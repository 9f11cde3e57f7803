"""Kubernetes attribution: a real gRPC server plays the kubelet's pod-resources API on a unix socket and
a real HTTP server plays the API server; the agent labels the pod's GPUs with its job and team."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from velyrix.agent import exporter, k8s
from velyrix.agent.collectors.sim import read_node
from velyrix.fleet.drivers.sim import SimRegion

grpc = pytest.importorskip("grpc")


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def encode_list_response(pods: list[tuple[str, str, dict[str, list[str]]]]) -> bytes:
    """ListPodResourcesResponse with (namespace, name, {resource: device ids}) per pod, plus cpu ids."""
    out = b""
    for namespace, name, resources in pods:
        container = _field(1, b"main")
        for resource, ids in resources.items():
            container += _field(2, _field(1, resource.encode()) + b"".join(_field(2, i.encode()) for i in ids))
        container += _field(3, _varint(4) + _varint(5))  # packed cpu_ids: skipped by the parser
        out += _field(1, _field(1, name.encode()) + _field(2, namespace.encode()) + _field(3, container))
    return out


@pytest.fixture
def kubelet(tmp_path: Path) -> Iterator[tuple[str, list]]:
    pods: list = []
    handler = grpc.method_handlers_generic_handler(
        "v1.PodResourcesLister",
        {
            "List": grpc.unary_unary_rpc_method_handler(
                lambda req, ctx: encode_list_response(pods),
                request_deserializer=lambda b: b,
                response_serializer=lambda b: b,
            )
        },
    )
    from concurrent import futures

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((handler,))
    sock = str(tmp_path / "kubelet.sock")
    server.add_insecure_port(f"unix://{sock}")
    server.start()
    yield sock, pods
    server.stop(0)


@pytest.fixture
def api_server() -> Iterator[tuple[str, dict]]:
    labels: dict[tuple[str, str], dict[str, str]] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # http.server naming
            parts = self.path.strip("/").split("/")  # api v1 namespaces NS pods NAME
            key = (parts[3], parts[5]) if len(parts) == 6 else ("", "")
            ok = self.headers.get("Authorization") == "Bearer sa-token" and key in labels
            body = json.dumps({"metadata": {"name": key[1], "labels": labels.get(key, {})}}).encode()
            self.send_response(200 if ok else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", labels
    httpd.shutdown()
    httpd.server_close()


def test_pod_gpus_carry_the_pod_job_and_team(kubelet, api_server, region: SimRegion) -> None:
    sock, pods = kubelet
    url, labels = api_server
    node = next(iter(region.nodes.values()))
    uuids = [g.uuid for g in node.gpus]
    pods += [
        ("ml", "trainer-0", {"nvidia.com/gpu": uuids[:4], "example.com/nic": ["mlx5_0"]}),
        ("cv", "notebook", {"nvidia.com/gpu": [uuids[5]]}),
        ("x", "cpu-only", {"cpu": ["1"]}),
    ]
    labels[("ml", "trainer-0")] = {
        "velyrix.io/job": "llama-70b-run3",
        "velyrix.io/team": "ml",
        "velyrix.io/cost-center": "cc-100",
    }
    labels[("cv", "notebook")] = {"app": "jupyter"}
    source = k8s.PodLabelSource(sock, api_url=url, token="sa-token", ca=False)
    sample = read_node(node)
    mapping = source(sample)
    assert mapping.problems == []
    assert {g: mapping.jobs_of(g) for g in range(8) if mapping.jobs_of(g)} == {
        0: ["llama-70b-run3"],
        1: ["llama-70b-run3"],
        2: ["llama-70b-run3"],
        3: ["llama-70b-run3"],
        5: ["cv.notebook"],
    }
    assert mapping.info["llama-70b-run3"].cost_center == "cc-100" and mapping.info["cv.notebook"].team == ""
    body = exporter.render([(sample, mapping)]).decode()
    assert (
        'velyrix_job_info{hpc_job="llama-70b-run3",user="",team="ml",cost_center="cc-100",account="",'
        'namespace="ml",pod="trainer-0",container="main"} 1'
    ) in body
    # GPU series carry dcgm-exporter's Kubernetes labels, not hpc_job; idle GPUs carry them empty
    util = [line for line in body.splitlines() if line.startswith("DCGM_FI_DEV_GPU_UTIL{")]
    assert any('gpu="0",' in u and 'pod="trainer-0",namespace="ml",container="main"}' in u for u in util)
    assert any('gpu="5",' in u and 'pod="notebook",namespace="cv",container="main"}' in u for u in util)
    assert any('gpu="7",' in u and 'pod="",namespace="",container=""}' in u for u in util)
    assert not any("hpc_job" in u for u in util)

    pods.clear()  # the pods ended: their labels leave the metrics and the cache
    assert source(sample).gpu_jobs == {} and source._labels == {}


def test_an_unreachable_kubelet_is_a_problem_not_a_crash(tmp_path: Path, region: SimRegion) -> None:
    source = k8s.PodLabelSource(str(tmp_path / "absent.sock"), api_url="http://127.0.0.1:9", token="t", timeout_s=0.5)
    mapping = source(read_node(next(iter(region.nodes.values()))))
    assert mapping.gpu_jobs == {} and "pod-resources" in mapping.problems[0]
