"""The SIEM export's parts: OCSF classes of the audit actions, RFC 5424 / CEF text, the spool's crash
recovery, and the confirmation rule (a receiver that resets the session mid-batch confirms nothing)."""

from __future__ import annotations

import json
import socket
import ssl
import struct
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.identity.certs import make_pki
from velyrix import errors
from velyrix.controlplane.audit import export, ocsf, spool, syslog


def _entry(index: int, action: str = "clusters.create", status: int = 201, outcome: str = "success") -> dict[str, Any]:
    return {
        "index": index,
        "event": {
            "id": f"aud_{index}",
            "at": "2026-12-01T10:00:00.000000Z",
            "actor": "alice",
            "key_id": "key_1",
            "tenant_id": "t1",
            "action": action,
            "target": "clusters/c=1|x",
            "request_id": "req_1",
            "source_address": "127.0.0.1",
            "outcome": outcome,
            "status_code": status,
            "error_code": None if status < 400 else "forbidden",
            "detail": {"method": "POST", "path": "/v1/clusters"},
        },
    }


@pytest.mark.parametrize(
    ("action", "status", "expected"),
    [
        ("clusters.create", 201, (6003, 1)),
        ("volumes.delete", 204, (6003, 4)),
        ("clusters.update", 403, (6003, 3)),
        ("clusters.create", 401, (3002, 1)),
        ("auth.login", 200, (3002, 1)),
        ("auth.logout", 200, (3002, 2)),
        ("api_keys.create", 201, (3001, 1)),
        ("api_keys.revoke", 200, (3001, 5)),
        ("nodes.rotate_token", 201, (3001, 3)),
        ("tenants.create", 201, (3004, 1)),
        ("physical.access_denied", 201, (3002, 1)),
        ("physical.door_forced", 201, (3002, 99)),
    ],
)
def test_actions_map_to_ocsf_classes(action: str, status: int, expected: tuple[int, int]) -> None:
    assert ocsf.classify(action, status) == expected
    event = ocsf.to_ocsf(_entry(3, action, status, "success" if status < 400 else "denied"), "0.1.0")
    assert (event["class_uid"], event["activity_id"]) == expected
    assert event["type_uid"] == expected[0] * 100 + expected[1] and event["metadata"]["sequence"] == 3
    assert event["status"] == ("Success" if status < 400 else "Failure")


def test_rfc5424_message_carries_the_sequence_and_frames_by_octet_count() -> None:
    msg = syslog.message(_entry(7), "ocsf", "cp-1", "0.1.0")
    text = msg.decode()
    assert text.startswith("<110>1 2026-12-01T10:00:00.000000Z cp-1 velyrix - ocsf-6003 ")  # 13*8+6
    assert '[velyrix@32473 seq="7" event="aud_7"] {' in text
    assert json.loads(text.partition("] ")[2])["metadata"]["uid"] == "aud_7"
    framed = syslog.frame(msg)
    length, _, rest = framed.partition(b" ")
    assert int(length) == len(rest) == len(msg)


def test_cef_escapes_pipes_in_the_header_and_equals_in_extensions() -> None:
    line = syslog.cef_line(_entry(2, "clusters.update", 403, "denied"), "0.1|x")
    assert line.startswith("CEF:0|Velyrix|Velyrix|0.1\\|x|600303|API Activity: clusters.update|6|")
    assert "cs2=clusters/c\\=1|x" in line and "cn1Label=seq cn1=2" in line and "outcome=denied" in line


def test_a_spooled_batch_survives_a_restart_and_a_stale_one_is_dropped(tmp_path: Path) -> None:
    box = spool.Spool(tmp_path / "s", "h:1/ocsf")
    batch = box.stage(0, 5, 5, b"frames")
    again = spool.Spool(tmp_path / "s", "h:1/ocsf")  # the exporter restarted before confirming
    assert again.pending() == batch and again.position() == 0
    again.confirm(batch)
    assert spool.Spool(tmp_path / "s", "h:1/ocsf").position() == 5
    box.stage(0, 5, 5, b"frames")  # a crash between the position's write and the batch's removal
    assert spool.Spool(tmp_path / "s", "h:1/ocsf").pending() is None
    with pytest.raises(errors.InvalidInputError, match="belongs to h:1/ocsf"):
        spool.Spool(tmp_path / "s", "other:2/cef")


class _ResettingReceiver:
    """A TLS listener that reads ``take`` bytes of the session and then resets it (SO_LINGER 0)."""

    def __init__(self, cert: Path, key: str, take: int) -> None:
        self.ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ctx.load_cert_chain(str(cert), key)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.take = take
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        try:
            tls = self.ctx.wrap_socket(conn, server_side=True)
        except ssl.SSLError:  # the client refused our certificate
            conn.close()
            return
        got = b""
        while len(got) < self.take:
            got += tls.recv(self.take - len(got))
        tls.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        tls.close()


def test_a_reset_mid_batch_confirms_nothing_and_the_batch_is_sent_again(tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki")
    receiver = _ResettingReceiver(pki.cert, str(pki.key), take=100)
    entries = [_entry(i) for i in range(50)]
    exporter = export.Exporter(
        lambda start, limit: {"items": entries[start : start + limit]},
        export.Destination("127.0.0.1", receiver.port, pki.ca, timeout_s=5),
        tmp_path / "spool",
        batch_size=50,
    )
    with pytest.raises(export.DeliveryError, match="not confirmed"):
        exporter.step()
    receiver.thread.join(timeout=10)
    assert exporter.spool.position() == 0 and exporter.spool.pending() is not None


def test_a_receiver_certificate_from_another_ca_is_refused(tmp_path: Path) -> None:
    pki, other = make_pki(tmp_path / "pki"), make_pki(tmp_path / "other")
    receiver = _ResettingReceiver(pki.cert, str(pki.key), take=1)
    dest = export.Destination("127.0.0.1", receiver.port, other.ca, timeout_s=5)
    with pytest.raises(export.DeliveryError, match="does not verify"):
        export.deliver(dest, b"5 hello")
