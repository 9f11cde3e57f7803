"""A real Prometheus scrapes a run's metrics and answers with the job's label and the run's figures."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path

import pytest

from velyrix.ops.workload import export, runner, study
from velyrix.testing.prometheus import PrometheusServer, prometheus_binary

pytestmark = [
    pytest.mark.prometheus,
    pytest.mark.skipif(prometheus_binary() is None, reason="apt-get install prometheus"),
]


def test_prometheus_reads_the_runs_figures_by_job(acme, tmp_path: Path):
    spec, cluster = acme
    result = study.simulate(spec, cluster, runner.RunConfig(seed=2, days=1.0, policy="reactive"))
    body = export.metrics_text(result).encode()

    class Metrics(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with PrometheusServer({"training": [f"127.0.0.1:{server.server_address[1]}"]}, interval_s=0.5) as prom:
            prom.wait_targets_up(30.0)
            ettr = prom.query_by("velyrix_training_ettr_ratio", "training_job")
            stall = prom.query_by(
                "velyrix_training_checkpoint_stall_ratio - velyrix_training_planned_checkpoint_stall_ratio",
                "training_job",
            )
    finally:
        server.shutdown()
        server.server_close()
    assert ettr == {"acme-pretrain/seed-2": pytest.approx(result["measured"]["ettr"])}
    c = result["comparison"]
    want = c["measured_checkpoint_stall_share"] - c["planned_checkpoint_stall_share"]
    assert stall["acme-pretrain/seed-2"] == pytest.approx(want)
