"""Start-up of ``velyrix up --nodes hgx-h200-8g=4096``: the real command in a fresh process (temporary
VELYRIX_HOME, embedded SQLite, the twin with delays on at its default x60 clock, one agent per node every 5 s,
the fleet exporter), timed from the process start to ready: ``/readyz`` answers 200 (the API serves only
once the runtime has enrolled the twin and run its intake) and the database counts every node in production
and available. Target (issue 14): under 30 s. A 64-node start-up is timed the same way in the same run.
"""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

SIZES = tuple(int(n) for n in os.environ.get("VELYRIX_BENCH_UP_SIZES", "64,4096").split(","))
"""Twin sizes started in turn (``VELYRIX_BENCH_UP_SIZES``, e.g. ``64,1024`` for a shorter run)."""
TIMEOUT_S = float(os.environ.get("VELYRIX_BENCH_UP_TIMEOUT_S", "300"))
"""Wall seconds a start-up may take before the run gives up (``VELYRIX_BENCH_UP_TIMEOUT_S``; a loaded machine
needs more, the CPU seconds are measured the same either way)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _available(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
        row = conn.execute(
            "SELECT count(*) FROM nodes WHERE fleet_stage = 'production' AND provisioning_state = 'available'"
        ).fetchone()
    return int(row[0])


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _main_thread_cpu_s(pid: int) -> float:
    """CPU seconds of the main thread of ``pid`` alone: the start-up path itself (imports, migrations, twin,
    enrolment and intake, agents' tokens, the server's start), without the background threads (the twin's
    clock ticker, the reconcile loop, the exporter) whose work grows with the wall time a loaded machine adds."""
    return _cpu_s_of(Path(f"/proc/{pid}/task/{pid}/stat"))


def _cpu_s_of(stat: Path) -> float:
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_up(nodes: int) -> dict[str, float]:
    """Seconds from spawning ``velyrix up`` to ``/readyz`` 200 and to every node available (wall), and the
    CPU seconds the process had used by then (the shared machine's load does not count in those)."""
    with tempfile.TemporaryDirectory(prefix="velyrix-bench-up-") as home:
        env = {**os.environ, "VELYRIX_HOME": home}
        env.pop("VELYRIX_DATABASE_URL", None)
        port = _free_port()
        args = ["up", "--port", str(port), "--nodes", f"hgx-h200-8g={nodes}", "--exporter-port", str(_free_port())]
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "velyrix.cli.main", *args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        ready_s = all_s = None
        cpu_s = last_cpu_s = main_cpu_s = 0.0
        try:
            while time.perf_counter() - start < TIMEOUT_S and proc.poll() is None:
                if ready_s is None:
                    try:
                        if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                            ready_s = time.perf_counter() - start
                    except httpx.TransportError:
                        pass
                if ready_s is not None and _available(Path(home) / "velyrix.db") >= nodes:
                    all_s = time.perf_counter() - start
                    cpu_s = _cpu_s(proc.pid)
                    main_cpu_s = _main_thread_cpu_s(proc.pid)
                    break
                last_cpu_s = _cpu_s(proc.pid)
                time.sleep(0.1)
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if ready_s is None or all_s is None:
            raise RuntimeError(
                f"velyrix up with {nodes} nodes not ready after {TIMEOUT_S:.0f} s (exit {proc.poll()}, "
                f"{last_cpu_s:.1f} CPU s by then)"
            )
        return {"nodes": nodes, "readyz_s": ready_s, "all_available_s": all_s, "cpu_s": cpu_s, "main_cpu_s": main_cpu_s}


def main() -> None:
    rows = [start_up(n) for n in SIZES]
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (2 cores)")
    print(f"{'nodes':>6} {'/readyz 200 s':>14} {'all available s':>16} {'CPU s':>7} {'main thread CPU s':>17}")
    for r in rows:
        print(
            f"{r['nodes']:>6} {r['readyz_s']:>14.1f} {r['all_available_s']:>16.1f} {r['cpu_s']:>7.1f} "
            f"{r['main_cpu_s']:>17.1f}"
        )
    big = rows[-1]
    verdict = "OK" if big["all_available_s"] < 30 else "OVER"
    print(f"up 4,096 ready in {big['all_available_s']:.1f} s wall, {big['cpu_s']:.1f} s CPU (target < 30 s): {verdict}")


if __name__ == "__main__":
    main()
