"""The fleet exporter's HTTP server (agent.fleet_http behind agent.fleet_targets): what a scrape gets, gzip,
keep-alive, the SD listing, and the limits on what a client may send."""

from __future__ import annotations

import gzip
import socket
import threading
import time

import httpx
import pytest

from velyrix.agent.collectors.sim import region_lock
from velyrix.agent.fleet_http import MAX_REQUEST_BYTES
from velyrix.agent.fleet_targets import FleetServer, FleetTargets
from velyrix.fleet.drivers.sim import SimClock, SimRegion
from velyrix.testing.prometheus import PrometheusServer, prometheus_binary


@pytest.fixture()
def fleet():
    region = SimRegion.build("us-east-1", {"hgx-h200-8g": 4}, seed=7, clock=SimClock(speed=1.0))
    for node in region.nodes.values():
        node.load_pct = 40.0
    server = FleetServer(FleetTargets(region, advance_every_s=0.2))
    assert server.targets.warm.wait(30)
    try:
        yield region, server
    finally:
        server.close()


def _raw(server: FleetServer, data: bytes, *, until_close: bool = True, want: int = 1) -> bytes:
    """Send ``data`` on one connection and read until the server closes it, or until ``want`` responses."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(data)
        got = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return got
            got += chunk
            if not until_close and _complete_responses(got) >= want:
                return got


def _complete_responses(data: bytes) -> int:
    count, rest = 0, data
    while b"\r\n\r\n" in rest:
        head, rest = rest.split(b"\r\n\r\n", 1)
        length = int(
            next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
        )
        if len(rest) < length:
            break
        rest = rest[length:]
        count += 1
    return count


def _hosts_in(text: str) -> set[str]:
    return {line.split('Hostname="', 1)[1].split('"', 1)[0] for line in text.splitlines() if 'Hostname="' in line}


def test_a_scrape_is_gzipped_for_prometheus_and_plain_for_others_and_both_say_the_same(fleet) -> None:
    region, server = fleet
    host = next(iter(region.nodes))
    path = f"/nodes/{host}/metrics"
    raw = _raw(server, f"GET {path} HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n".encode(), until_close=False)
    head, body = raw.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200 OK") and b"Content-Encoding: gzip" in head
    assert b"text/plain; version=0.0.4" in head
    text = gzip.decompress(body).decode()
    assert _hosts_in(text) == {host} and text.count("DCGM_FI_DEV_GPU_UTIL{") == 8
    plain = httpx.get(f"http://127.0.0.1:{server.port}{path}", headers={"Accept-Encoding": "identity"})
    assert plain.status_code == 200 and "content-encoding" not in plain.headers
    assert _hosts_in(plain.text) == {host} and plain.text.count("DCGM_FI_DEV_GPU_UTIL{") == 8


def test_one_connection_serves_every_node_in_turn_and_pipelined_requests_in_order(fleet) -> None:
    region, server = fleet
    hosts = list(region.nodes)
    before = server.http.accepted
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}") as http:
        for _ in range(3):
            for host in hosts:
                resp = http.get(f"/nodes/{host}/metrics")
                assert resp.status_code == 200 and _hosts_in(resp.text) == {host}
    assert server.http.accepted - before == 1  # kept alive: 12 scrapes, one connection
    pipelined = b"".join(f"GET /nodes/{h}/metrics HTTP/1.1\r\nHost: x\r\n\r\n".encode() for h in hosts)
    data = _raw(server, pipelined + b"GET /sd HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    parts = data.split(b"HTTP/1.1 200 OK")[1:]
    assert len(parts) == len(hosts) + 1
    assert [_hosts_in(p.decode()) for p in parts[:-1]] == [{h} for h in hosts]
    assert b"Connection: close" in parts[-1]


def test_sd_lists_every_node_with_its_path_and_labels(fleet) -> None:
    region, server = fleet
    groups = httpx.get(server.sd_url).json()
    assert len(groups) == len(region.nodes)
    for group in groups:
        host = group["labels"]["Hostname"]
        assert group["targets"] == [f"127.0.0.1:{server.port}"]
        assert group["labels"]["__metrics_path__"] == f"/nodes/{host}/metrics"
        assert group["labels"]["node_type"] == "hgx-h200-8g" and group["labels"]["su"].isdigit()
    head = httpx.head(server.sd_url)
    assert head.status_code == 200 and head.content == b""
    server.targets.listen_at(f"127.0.0.1:{server.port}", 2)  # nodes joining the fleet in turn
    assert [g["labels"]["Hostname"] for g in httpx.get(server.sd_url).json()] == list(region.nodes)[:2]


def test_unknown_paths_methods_and_malformed_or_oversized_requests_get_clear_errors(fleet) -> None:
    _, server = fleet
    base = f"http://127.0.0.1:{server.port}"
    assert httpx.get(f"{base}/nodes/nope/metrics").status_code == 404
    assert "/sd" in httpx.get(f"{base}/metrics").text
    assert httpx.post(f"{base}/sd", content=b"{}").status_code == 405
    assert _raw(server, b"NOT HTTP AT ALL\r\n\r\n").startswith(b"HTTP/1.1 400 ")
    huge = b"GET /sd HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * (MAX_REQUEST_BYTES + 10) + b"\r\n\r\n"
    assert _raw(server, huge).startswith(b"HTTP/1.1 431 ")
    assert httpx.get(f"{base}/healthz").status_code == 200  # the server goes on


def test_a_node_not_yet_rendered_is_rendered_off_the_event_loop(fleet) -> None:
    """A scrape of a node without a rendering waits for the region's locks in a worker thread: other scrapes
    on other connections are answered meanwhile, and the waiting one gets its node once the locks are free."""
    region, server = fleet
    first, other = list(region.nodes)[:2]
    path = f"/nodes/{first}/metrics".encode()
    result: dict[str, httpx.Response] = {}
    server.targets.stop.set()  # no round of the worker renders the node meanwhile
    server.targets._worker.join(30)
    with region_lock(region), region.lock:
        server.targets._responses.pop(path)  # as before the first round reached it
        waiting = threading.Thread(
            target=lambda: result.update(r=httpx.get(f"http://127.0.0.1:{server.port}{path.decode()}", timeout=30))
        )
        waiting.start()
        meanwhile = httpx.get(f"http://127.0.0.1:{server.port}/nodes/{other}/metrics", timeout=5)
        assert meanwhile.status_code == 200 and "r" not in result
    waiting.join(30)
    assert result["r"].status_code == 200 and _hosts_in(result["r"].text) == {first}


@pytest.mark.prometheus
@pytest.mark.skipif(prometheus_binary() is None, reason="apt-get install prometheus")
def test_prometheus_keeps_its_connections_between_scrapes(fleet) -> None:
    region, server = fleet
    with PrometheusServer({}, interval_s=0.5, http_sd={"velyrix-nodes": (server.sd_url, len(region.nodes))}) as prom:
        start, deadline = server.http.requests, time.monotonic() + 60
        while server.http.requests - start < 40:  # ten rounds of the four targets
            assert time.monotonic() < deadline, server.http.requests
            time.sleep(0.2)
        up = prom.query('up{job="velyrix-nodes"} == 1')
    assert sorted(r["metric"]["Hostname"] for r in up) == sorted(region.nodes)
    assert server.http.accepted < server.http.requests / 4  # connections reused, not one per scrape
