"""InfiniBand port counters under node_exporter's ``infiniband`` collector names (``--ib-metrics node_exporter``).

Velyrix's own names (``velyrix_ib_port_*``, labels ``Hostname``/``device``/``port``) stay the default, since
the rules in deploy/prometheus use them. A node that runs no node_exporter can export node_exporter's
names instead, so that dashboards written for node_exporter work; a node that runs node_exporter's
infiniband collector should use ``--ib-metrics off``, so that no IB series is exported twice.
Names, types and units follow node_exporter's collector/infiniband_linux.go (counters in bytes, not
4-byte words; the rate in bytes per second; the state as its id, 4 = ACTIVE); labels ``device``, ``port``,
plus ``Hostname`` (one fleet exporter serves many nodes; an extra label leaves node_exporter queries valid).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from velyrix.agent.collectors.base import IBPortReading

IB_METRICS_MODES = ("velyrix", "node_exporter", "off")

NODE_EXPORTER_COUNTERS: dict[str, tuple[str, str, int]] = {
    "symbol_error": (
        "node_infiniband_symbol_error_total",
        "Number of minor link errors detected on one or more physical lanes.",
        1,
    ),
    "link_downed": (
        "node_infiniband_link_downed_total",
        "Number of times the link failed to recover from an error state and went down",
        1,
    ),
    "link_error_recovery": (
        "node_infiniband_link_error_recovery_total",
        "Number of times the link successfully recovered from an error state",
        1,
    ),
    "port_rcv_errors": (
        "node_infiniband_port_errors_received_total",
        "Number of packets containing an error that were received on this port",
        1,
    ),
    "port_xmit_wait": (
        "node_infiniband_port_transmit_wait_total",
        "Number of ticks during which the port had data to transmit but no data was sent during the entire tick",
        1,
    ),
    "port_xmit_data": (
        "node_infiniband_port_data_transmitted_bytes_total",
        "Number of data octets transmitted on all links",
        4,
    ),
    "port_rcv_data": (
        "node_infiniband_port_data_received_bytes_total",
        "Number of data octets received on all links",
        4,
    ),
    "port_xmit_packets": (
        "node_infiniband_port_packets_transmitted_total",
        "Number of packets transmitted on all VLs from this port (including errors)",
        1,
    ),
    "port_rcv_packets": (
        "node_infiniband_port_packets_received_total",
        "Number of packets received on all VLs by this port (including errors)",
        1,
    ),
}
"""sysfs counter -> (node_exporter metric, help, scale to bytes or packets)."""
STATE_IDS = {"DOWN": 1, "INIT": 2, "ARMED": 3, "ACTIVE": 4, "ACTIVE_DEFER": 5}


def node_exporter_families(
    ports: list[tuple[str, IBPortReading]],
) -> Iterator[tuple[str, str, str, list[tuple[str, Any]]]]:
    """Families of ``(label string, port)`` pairs under node_exporter's names."""
    for counter, (name, help_text, scale) in NODE_EXPORTER_COUNTERS.items():
        rows = [(lab, int(p.counters[counter] * scale)) for lab, p in ports if counter in p.counters]
        yield name, "counter", help_text, rows
    yield (
        "node_infiniband_state_id",
        "gauge",
        "State of the InfiniBand port (0: no change, 1: down, 2: init, 3: armed, 4: active, 5: act defer)",
        [(lab, STATE_IDS.get(p.state, 0)) for lab, p in ports],
    )
    yield (
        "node_infiniband_rate_bytes_per_second",
        "gauge",
        "Maximum signal transfer rate",
        [(lab, int(p.rate_gbps * 1e9 / 8)) for lab, p in ports if p.rate_gbps is not None],
    )


def node_exporter_names() -> set[str]:
    return {n for n, _, _ in NODE_EXPORTER_COUNTERS.values()} | {
        "node_infiniband_state_id",
        "node_infiniband_rate_bytes_per_second",
    }
