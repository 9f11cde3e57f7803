"""A twin region under a real Prometheus with HTTP service discovery: one target per node.

``velyrix sim exporter --per-node`` (``agent.fleet_targets`` served by ``agent.fleet_http``, keep-alive
HTTP/1.1) in this process; Prometheus discovers the nodes at ``/sd`` and scrapes each at
``/nodes/<host>/metrics`` every ``INTERVAL_S`` (timeout 10 s, what an operator would set at 10,000 targets).

Reported: the first rendering round; in the same run, one node's rendering against one cached scrape over a
kept-alive loopback connection; the time until Prometheus has seen every target up once, and its CPU; then,
over ``ROUNDS`` scrape intervals after that, every scrape's ``scrape_duration_seconds`` (quantiles over
targets of each target's slowest scrape in the window; target: every one under 100 ms), targets ever down
(``min_over_time(up)``; target: none), series per scrape, exporter RSS (target: under 1 GB), and CPU per
thread from /proc: serving (CPU-seconds per scrape), rendering (per node rendering), Prometheus (cores); and
the exporter's garbage collections over the window (``gc.callbacks``: count and longest pause per generation).

Nodes join the fleet ``VELYRIX_BENCH_FLEET_RAMP`` at a time (default 1,000, some 30 SUs), one step per SD
refresh (30 s), as racks are brought into service; ``0`` lists all of them at once, a cold start of a
Prometheus with an empty TSDB facing 4.7 million new series in one scrape interval (docs/benchmarks.md).

Environment: ``VELYRIX_BENCH_FLEET_NODES`` (default 10,000), ``VELYRIX_BENCH_FLEET_INTERVAL_S`` (default
60 s: 10,000 scrapes a minute), ``VELYRIX_BENCH_FLEET_ROUNDS`` (scrape intervals measured, default 2),
``VELYRIX_BENCH_FLEET_WAIT_S`` (longest wait for every target up, default 1,800 s) and
``VELYRIX_BENCH_FLEET_PROM_MAX_GIB`` (Prometheus resident memory at which the wait stops, default 20 GiB of
the 24 GB machine, so that the bench does not take the machine down: 10,000 targets are ~4.7 million series,
~1.6 MB of Prometheus memory per target measured at 1,000).
"""

from __future__ import annotations

import gc
import os
import threading
import time

import httpx

from velyrix.agent.fleet_targets import FleetServer, FleetTargets
from velyrix.fleet.drivers.sim import SimClock, SimRegion
from velyrix.testing.prometheus import PrometheusServer

NODES = int(os.environ.get("VELYRIX_BENCH_FLEET_NODES", "10000"))
INTERVAL_S = float(os.environ.get("VELYRIX_BENCH_FLEET_INTERVAL_S", "60"))
ROUNDS = int(os.environ.get("VELYRIX_BENCH_FLEET_ROUNDS", "2"))
WAIT_S = float(os.environ.get("VELYRIX_BENCH_FLEET_WAIT_S", "1800"))
RAMP = int(os.environ.get("VELYRIX_BENCH_FLEET_RAMP", "1000"))
RAMP_S = 30.0
"""Seconds between two steps of the ramp: Prometheus's SD refresh interval (``testing.prometheus``)."""
PROM_MAX_GIB = float(os.environ.get("VELYRIX_BENCH_FLEET_PROM_MAX_GIB", "20"))
TIMEOUT_S = min(10.0, INTERVAL_S)
JOB = "velyrix-nodes"
TICK_S = os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int | str = "self", field: str = "VmRSS") -> float:
    """Resident memory of a process (default: this one, the exporter), MiB, from /proc; ``VmHWM``: its peak."""
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s(stat_path: str) -> float:
    """utime + stime of a process or thread, seconds, from its /proc stat file."""
    with open(stat_path, encoding="ascii") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK_S


def _one(prom: PrometheusServer, expr: str) -> float:
    """The single value of an instant query (0 when empty); a busy Prometheus gets 120 s and three tries."""
    for attempt in range(3):
        try:
            resp = httpx.get(f"{prom.url}/api/v1/query", params={"query": expr}, timeout=120)
            break
        except httpx.TransportError:
            if attempt == 2:
                raise
            time.sleep(5)
    result = resp.json()["data"]["result"]
    return float(result[0]["value"][1]) if result else 0.0


class _GcPauses:
    """A ``gc.callbacks`` entry: per generation, how many collections and how long each held the interpreter
    lock (wall ms: every thread, serving included, waits for it) and its CPU (the collecting thread's)."""

    def __init__(self) -> None:
        self.wall_s: dict[int, list[float]] = {0: [], 1: [], 2: []}
        self.cpu_s: dict[int, list[float]] = {0: [], 1: [], 2: []}
        self._started = (0.0, 0.0)

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = (time.perf_counter(), time.thread_time())
        else:
            self.wall_s[info["generation"]].append(time.perf_counter() - self._started[0])
            self.cpu_s[info["generation"]].append(time.thread_time() - self._started[1])

    def line(self) -> str:
        parts = []
        for gen in (0, 1, 2):
            wall, cpu = self.wall_s[gen], self.cpu_s[gen]
            if wall:
                parts.append(f"gen {gen}: {len(wall)}, longest {max(wall) * 1000:.1f} ms wall "
                             f"({max(cpu) * 1000:.1f} ms CPU), {sum(wall) * 1000:.0f} ms in all")  # fmt: skip
        return "; ".join(parts) or "none"


def _request_path(targets: FleetTargets, server: FleetServer, count: int = 200) -> None:
    """In the same run, sequentially: one node's rendering (what a scrape cost when it rendered) against one
    scrape of a cached rendering over a kept-alive loopback HTTP/1.1 connection (what it costs now, client
    included), wall ms; and the serving thread's CPU per scrape."""
    hosts = list(targets.region.nodes)[:count]
    start = time.perf_counter()
    for h in hosts:
        targets.render_node(h)
    render_ms = (time.perf_counter() - start) / count * 1000
    serving = f"/proc/self/task/{server.http.native_id}/stat"
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", headers={"Accept-Encoding": "gzip"}) as http:
        http.get(f"/nodes/{hosts[0]}/metrics").raise_for_status()
        cpu0, start = cpu_s(serving), time.perf_counter()
        for h in hosts:
            http.get(f"/nodes/{h}/metrics").raise_for_status()
        scrape_ms = (time.perf_counter() - start) / count * 1000
        serve_ms = (cpu_s(serving) - cpu0) / count * 1000
    print(
        f"one node rendered: {render_ms:.2f} ms; one cached scrape over a kept-alive connection: {scrape_ms:.2f} ms "
        f"(ratio {render_ms / scrape_ms:.1f}x); serving CPU per scrape {serve_ms:.3f} ms (clock ticks of "
        f"{1000 / TICK_S:.0f} ms over {count}); load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )


def _until_all_up(prom: PrometheusServer, server: FleetServer, started: float) -> float | None:
    """Wall seconds from Prometheus's start until it has seen every target up (None: not within ``WAIT_S``, or
    Prometheus grew past ``PROM_MAX_GIB``), with progress every 30 s."""
    assert prom.proc is not None
    deadline, report = time.monotonic() + WAIT_S, time.monotonic() + 30
    listed, next_step = min(RAMP, NODES) if RAMP else NODES, time.monotonic() + RAMP_S
    while time.monotonic() < deadline:
        if listed < NODES and time.monotonic() >= next_step:
            listed, next_step = min(listed + RAMP, NODES), next_step + RAMP_S
            server.targets.listen_at(f"{server.host}:{server.port}", listed)
        up = _one(prom, f'count(up{{job="{JOB}"}} == 1)')
        if up >= NODES:
            return time.perf_counter() - started
        prom_gib = rss_mib(prom.proc.pid) / 1024
        if time.monotonic() >= report:
            report += 30
            print(
                f"  {time.perf_counter() - started:.0f} s: {up:,.0f} of {listed:,} listed targets up, "
                f"{server.http.requests:,} requests "
                f"served; Prometheus {cpu_s(f'/proc/{prom.proc.pid}/stat'):.0f} CPU-s, {prom_gib:.1f} GiB; "
                f"load average {os.getloadavg()[0]:.1f}",
                flush=True,
            )
        if prom_gib > PROM_MAX_GIB:
            print(f"Prometheus over {PROM_MAX_GIB} GiB resident: stopped (VELYRIX_BENCH_FLEET_PROM_MAX_GIB)")
            return None
        time.sleep(min(5.0, INTERVAL_S / 8))
    return None


def _measure(prom: PrometheusServer, server: FleetServer, prom_stat: str) -> None:
    """Every scrape over ``ROUNDS`` intervals: durations, targets down, CPU of each part."""
    targets = server.targets
    serving = f"/proc/self/task/{server.http.native_id}/stat"
    wall0, serve0, prom0 = time.perf_counter(), cpu_s(serving), cpu_s(prom_stat)
    render0, renders0, advance0 = targets.render_cpu_s, targets.renderings, targets.advance_cpu_s
    requests0, accepted0 = server.http.requests, server.http.accepted
    server.http.lags_s.clear()
    pauses = _GcPauses()
    gc.callbacks.append(pauses)
    try:
        time.sleep(INTERVAL_S * ROUNDS)
    finally:
        gc.callbacks.remove(pauses)
    wall_s = time.perf_counter() - wall0
    window = f"{int(wall_s)}s"
    sel = f'{{job="{JOB}"}}'
    print(f"over {wall_s:.0f} s ({ROUNDS} scrape intervals) after every target was up:")
    scrapes = _one(prom, f"sum(count_over_time(scrape_duration_seconds{sel}[{window}]))")
    for q in ("0.5", "0.99", "1"):
        slowest = _one(prom, f"quantile({q}, max_over_time(scrape_duration_seconds{sel}[{window}]))")
        print(f"  quantile {q} over targets of each target's slowest scrape: {slowest * 1000:.1f} ms")
    last = {q: _one(prom, f"quantile({q}, scrape_duration_seconds{sel})") for q in ("0.5", "0.99")}
    print(f"  last scrape of each target: p50 {last['0.5'] * 1000:.1f} ms, p99 {last['0.99'] * 1000:.1f} ms")
    over = _one(prom, f"count(max_over_time(scrape_duration_seconds{sel}[{window}]) > 0.1)")
    down = _one(prom, f"count(min_over_time(up{sel}[{window}]) < 1)")
    print(f"  scrapes {scrapes:,.0f}; targets with a scrape over 100 ms: {over:.0f}; targets ever down: {down:.0f}")
    print(f"  targets up now: {_one(prom, f'count(up{sel} == 1)'):.0f} of {NODES}")
    print(f"  samples per scrape: {_one(prom, f'avg(scrape_samples_scraped{sel})'):.0f}")
    requests = server.http.requests - requests0
    serve = cpu_s(serving) - serve0
    renders = targets.renderings - renders0
    render = targets.render_cpu_s - render0
    print(
        f"  exporter serving: {requests:,} requests on {server.http.accepted - accepted0} new connections "
        f"({len(server.http.connections)} open), {serve:.2f} CPU-s = {serve / max(requests, 1) * 1000:.3f} ms "
        f"per scrape, {serve / wall_s:.3f} cores"
    )
    print(
        f"  exporter rendering: {renders:,} renderings, {render:.1f} CPU-s = {render / max(renders, 1) * 1000:.2f} "
        f"ms per node, {render / wall_s:.3f} cores; twin advance {targets.advance_cpu_s - advance0:.1f} CPU-s"
    )
    lags = sorted(server.http.lags_s)
    if lags:
        p99, worst = lags[int(len(lags) * 0.99)] * 1000, lags[-1] * 1000
        late = sum(1 for v in lags if v > 0.1)
        print(
            f"  exporter event-loop lag (0.1-s timer, {len(lags):,} ticks): p99 {p99:.1f} ms, max {worst:.1f} ms, "
            f"{late} over 100 ms"
        )
    print(f"  exporter garbage collections: {pauses.line()}")
    print(f"  Prometheus: {(cpu_s(prom_stat) - prom0) / wall_s:.3f} cores")
    pid = prom_stat.split("/")[2]
    print(f"  Prometheus resident: {rss_mib(pid) / 1024:.1f} GiB now, {rss_mib(pid, 'VmHWM') / 1024:.1f} GiB at most")


def main() -> None:
    start = time.perf_counter()
    print(f"load average at the start: {os.getloadavg()}")
    region = SimRegion.build("us-east-1", {"hgx-h200-8g": NODES}, seed=1, clock=SimClock(speed=1.0))
    for node in region.nodes.values():
        node.load_pct = 60.0
    print(f"twin of {NODES:,} nodes built in {time.perf_counter() - start:.1f} s; exporter RSS {rss_mib():,.0f} MiB")
    # each node rendered once per scrape interval by the worker; scrapes are sent the last rendering
    targets = FleetTargets(region, advance_every_s=INTERVAL_S, refresh_s=INTERVAL_S)
    round_start = time.perf_counter()
    server = FleetServer(targets)
    targets.warm.wait()
    print(
        f"first rendering round: {time.perf_counter() - round_start:.1f} s wall, {targets.render_cpu_s:.1f} CPU-s "
        f"({targets.render_cpu_s / NODES * 1000:.2f} ms per node); load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    _request_path(targets, server)
    if RAMP:  # nodes join the fleet RAMP at a time, one step per SD refresh (see the module doc)
        targets.listen_at(f"{server.host}:{server.port}", min(RAMP, NODES))
    prom = PrometheusServer(
        {}, interval_s=INTERVAL_S, scrape_timeout_s=TIMEOUT_S, http_sd={JOB: (server.sd_url, NODES)}
    )
    try:
        prom_start = time.perf_counter()
        prom.start(timeout_s=120, wait_targets=False)  # every target up is waited for below
        assert prom.proc is not None
        prom_stat = f"/proc/{prom.proc.pid}/stat"
        all_up = _until_all_up(prom, server, prom_start)
        prom_cpu = cpu_s(prom_stat)
        if all_up is None:
            print("not every target up: measuring what there is")
        else:
            print(
                f"Prometheus saw all {NODES:,} targets up {all_up:.1f} s after its start ({prom_cpu:.1f} CPU-s, "
                f"{prom_cpu / all_up:.2f} cores); scrape interval {INTERVAL_S:.0f} s, timeout {TIMEOUT_S:.0f} s",
                flush=True,
            )
        _measure(prom, server, prom_stat)
        print(f"threads: {threading.active_count()}; load average at the end: {os.getloadavg()}")
        print(f"exporter RSS: {rss_mib():,.0f} MiB (target < 1,024)")
    finally:
        prom.stop()
        server.close()


if __name__ == "__main__":
    main()
