"""The control-plane service as it runs: the API (``velyrix.controlplane``) composed with what the ops layer
adds to it (node reports' verdicts carried out by ``remediation.node_reports``). ``velyrix server`` and ``velyrix up``
serve this app; ``create_app`` takes the same arguments as ``velyrix.controlplane.api.create_app``."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI


def create_app(*args: Any, **kwargs: Any) -> FastAPI:
    """``velyrix.controlplane.api.create_app(*args, **kwargs)`` with the remediation of node reports."""
    from velyrix.controlplane.api import create_app as controlplane_app
    from velyrix.ops.remediation import node_reports

    return node_reports.install(controlplane_app(*args, **kwargs))
