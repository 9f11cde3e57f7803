"""SIEM export throughput: audit-log leaves rendered (OCSF, CEF) and delivered to a real rsyslog over TLS.

1. Rendering: RFC 5424 messages per second of OCSF and of CEF bodies (``controlplane/audit/syslog.py``).
2. Delivery: 3,000 synthetic leaves through ``export.Exporter.drain`` (spool written, one TLS session a
   batch, the receiver's clean close awaited, the position persisted) into rsyslog (gtls) on loopback,
   for batch sizes 1, 20 and 200, until rsyslog's file holds every message. Figure: events per second and
   the ratio to batch 200 measured in the same run; a smaller batch narrows what a receiver stopping in
   the middle of a batch can make the exporter repeat (docs/audit.md).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import tempfile
import time
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from velyrix.controlplane.audit import export, syslog
from velyrix.testing import syslog_receivers

LEAVES = 3000
BATCHES = (1, 20, 200)


def _entry(i: int) -> dict[str, Any]:
    return {
        "index": i,
        "event": {
            "id": f"aud_{i:012d}",
            "at": "2026-12-01T10:00:00.000000Z",
            "actor": "key:acme-owner",
            "key_id": "key_0123456789",
            "tenant_id": "ten_0123456789",
            "action": "clusters.update" if i % 3 else "api_keys.create",
            "target": f"clusters/clu_{i:010d}",
            "request_id": f"req_{i:020d}",
            "source_address": "10.1.2.3",
            "outcome": "success",
            "status_code": 200,
            "error_code": None,
            "detail": {"method": "PUT", "path": f"/v1/clusters/clu_{i:010d}", "node_count": 64},
        },
    }


def _self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 that is its own CA (ECDSA P-256), and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


def _render() -> None:
    entries = [_entry(i) for i in range(LEAVES)]
    for fmt in syslog.FORMATS:
        start = time.perf_counter()
        size = sum(len(syslog.frame(syslog.message(e, fmt, "cp-1", "0.1.0"))) for e in entries)
        took = time.perf_counter() - start
        print(f"render {fmt}: {LEAVES / took:,.0f} messages/s, {size / LEAVES:,.0f} bytes/message")


def _deliver(folder: Path, cert: Path, key: Path, batch: int) -> float:
    directory = folder / f"rsyslog-{batch}"
    directory.mkdir()
    receiver = syslog_receivers.Receiver("rsyslog", directory, cert, key, cert)
    receiver.start()
    try:
        entries = [_entry(i) for i in range(LEAVES)]
        exporter = export.Exporter(
            lambda s, n: {"items": entries[s : s + n]},
            export.Destination("127.0.0.1", receiver.port, cert),
            folder / f"spool-{batch}",
            batch_size=batch,
        )
        start = time.perf_counter()
        exporter.drain()
        while len(receiver.lines()) < LEAVES:
            time.sleep(0.01)
        return time.perf_counter() - start
    finally:
        receiver.stop()


def main() -> None:
    _render()
    why = syslog_receivers.rsyslog_available()
    if why:
        print(f"delivery skipped: {why}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cert, key = _self_signed(folder)
        rates = {b: LEAVES / _deliver(folder, cert, key, b) for b in BATCHES}
    for batch, rate in rates.items():
        print(f"deliver batch {batch:>3}: {rate:,.0f} events/s ({rate / rates[BATCHES[-1]]:.2f}x batch {BATCHES[-1]})")


if __name__ == "__main__":
    main()
