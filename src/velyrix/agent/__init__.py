"""The node agent: collectors (NVML, sysfs InfiniBand, NVMe, the twin), the Prometheus exporter with
per-job labels, and the reporter that sends node state to the control plane over HTTP.

The agent never imports the control plane (import-linter enforces it); it knows it only as an HTTP API.
"""
