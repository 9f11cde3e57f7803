"""SIEM export against real receivers: rsyslog (gtls) and syslog-ng, started on loopback with
test-generated certificates. A scripted session on a real uvicorn server is forwarded by
``velyrix audit forward`` (OCSF over RFC 5425); the receiver is stopped and started again mid-stream while
the session goes on. Each receiver ends with every leaf of the log, once each, in order, each an OCSF
event of the class its action maps to."""

from __future__ import annotations

import collections
import datetime as dt
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.controlplane.conftest import Recorder, assert_each_mutation_audited_once, cluster_body, enroll_fleet
from tests.identity.certs import Pki, make_pki
from velyrix.testing import postgres, syslog_receivers

_SEQ = re.compile(r'\[velyrix@32473 seq="(\d+)" event="([^"]+)"\] ')
KINDS = [
    pytest.param("rsyslog", marks=pytest.mark.skipif(bool(syslog_receivers.rsyslog_available()), reason="no rsyslog")),
    pytest.param(
        "syslog-ng", marks=pytest.mark.skipif(bool(syslog_receivers.syslog_ng_available()), reason="no syslog-ng")
    ),
]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path / "home"))
    for name in ("VELYRIX_DATABASE_URL", "VELYRIX_ENDPOINT", "VELYRIX_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "home"


@pytest.fixture
def served(home: Path) -> Iterator[str]:
    import uvicorn

    from velyrix.controlplane.api import create_app

    application = create_app()
    enroll_fleet(application.state.sessionmaker)
    app = Recorder(application)
    port = postgres.free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
    assert_each_mutation_audited_once(app)
    app.state.engine.dispose()


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return make_pki(tmp_path / "pki")


def _receiver(kind: str, tmp_path: Path, pki: Pki) -> syslog_receivers.Receiver:
    directory = tmp_path / kind
    directory.mkdir()
    return syslog_receivers.Receiver(kind, directory, pki.cert, pki.key, pki.ca)


def _session(url: str, owner: str, phase: str, badge: str) -> None:
    """One phase of a tenant's session (a cluster, a key made and revoked, refused attempts) and a refused
    badge at a cage door (the physical-access key ``badge``)."""
    auth = {"Authorization": f"Bearer {owner}"}
    with httpx.Client(base_url=url, headers=auth, timeout=30) as api:
        door = {"kind": "access_denied", "site": "use1-dc2", "door": "cage-07", "reader_event_id": f"r-{phase}"}
        door["occurred_at"] = dt.datetime.now(dt.UTC).isoformat()
        posted = api.post("/v1/physical-access/events", json=door, headers={"Authorization": f"Bearer {badge}"})
        assert posted.status_code == 201, posted.text
        assert api.post("/v1/clusters", json=cluster_body(f"c-{phase}")).status_code == 201
        key = api.post("/v1/api-keys", json={"name": f"viewer {phase}", "role": "viewer"}).json()
        viewer = {"Authorization": f"Bearer {key['secret']}"}
        body = {"name": f"v-{phase}", "region": "us-east-1", "tier": "block", "size_gib": 100}
        assert api.post("/v1/volumes", json=body, headers=viewer).status_code == 403
        assert api.delete(f"/v1/api-keys/{key['id']}").status_code == 200
        bad = {"Authorization": "Bearer vlx_not_a_key"}
        assert api.post("/v1/clusters", json=cluster_body("x"), headers=bad).status_code == 401


def _wait_for(receiver: syslog_receivers.Receiver, count: int, timeout_s: float = 60) -> list[str]:
    deadline = time.monotonic() + timeout_s
    while (lines := receiver.lines()) and len(lines) < count or not lines:
        assert time.monotonic() < deadline, f"{receiver.kind} has {len(lines)} of {count} messages"
        time.sleep(0.1)
    return lines


def _entries(url: str, key: str) -> list[dict[str, Any]]:
    page = httpx.get(f"{url}/v1/audit-log/entries", params={"limit": 1000}, headers={"Authorization": f"Bearer {key}"})
    return list(page.json()["items"])


@pytest.mark.parametrize("kind", KINDS)
def test_every_event_reaches_the_receiver_once_across_its_restart(
    kind: str, velyrix: Callable[..., Any], served: str, tmp_path: Path, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    owner = velyrix("admin", "create-tenant", "acme").stdout.strip().splitlines()[-1]
    auditor = velyrix("admin", "create-provider-key", "siem", "--role", "auditor").stdout.strip().splitlines()[-1]
    badge = velyrix("admin", "create-provider-key", "dc2", "--role", "physical-access").stdout.strip().splitlines()[-1]
    assert velyrix("login", "--endpoint", served, "--api-key", auditor).exit_code == 0
    receiver = _receiver(kind, tmp_path, pki)
    receiver.start()
    to = f"127.0.0.1:{receiver.port}"
    try:
        _session(served, owner, "a", badge)
        first = velyrix("audit", "forward", "--to", to, "--ca-bundle", str(pki.ca), "--once", "--batch-size", "4")
        assert first.exit_code == 0, first.stderr
        size_a = len(_entries(served, auditor))
        _wait_for(receiver, size_a)

        receiver.stop()  # mid-stream: the session goes on while the receiver is down
        _session(served, owner, "b", badge)
        down = velyrix("audit", "forward", "--to", to, "--ca-bundle", str(pki.ca), "--once", "--batch-size", "4")
        assert down.exit_code == 1 and "not confirmed" in down.stderr and "Traceback" not in down.stderr
        receiver.start()
        _session(served, owner, "c", badge)
        monkeypatch.setenv("VELYRIX_SIEM_TO", to)  # configured by settings this time
        monkeypatch.setenv("VELYRIX_SIEM_CA_BUNDLE", str(pki.ca))
        again = velyrix("audit", "forward", "--once", "--batch-size", "4")
        assert again.exit_code == 0, again.stderr
        entries = _entries(served, auditor)
        lines = _wait_for(receiver, len(entries))
    finally:
        receiver.stop()

    time.sleep(0.5)  # nothing more arrives late (a duplicate would)
    lines = receiver.lines()
    seqs = [int(_SEQ.search(line).group(1)) for line in lines]  # type: ignore[union-attr]
    assert seqs == list(range(len(entries))), "every leaf once, in order"
    classes = set()
    for line, entry in zip(lines, entries, strict=True):
        head, _, body = line.partition("] ")
        event = json.loads(body)
        assert event["metadata"]["uid"] == entry["event_id"] and event["metadata"]["sequence"] == entry["index"]
        assert head.split()[5] == f"ocsf-{event['class_uid']}" and event["metadata"]["version"] == "1.3.0"
        assert event["type_uid"] == event["class_uid"] * 100 + event["activity_id"]
        classes.add((event["class_uid"], entry["event"]["action"], event["status"]))
    assert (6003, "clusters.create", "Success") in classes
    assert (6003, "volumes.create", "Failure") in classes  # the viewer's refused attempt
    assert (3001, "api_keys.create", "Success") in classes and (3001, "api_keys.revoke", "Success") in classes
    assert (3002, "physical.access_denied", "Failure") in classes  # the refused badge
    assert any(c[0] == 3002 and c[1] == "clusters.create" and c[2] == "Failure" for c in classes)  # the 401


@pytest.mark.parametrize("kind", KINDS)
def test_a_following_exporter_survives_the_receiver_restart(
    kind: str, velyrix: Callable[..., Any], served: str, tmp_path: Path, pki: Pki
) -> None:
    """``Exporter.follow`` (what ``velyrix audit forward`` runs) keeps going across a restart: the events of
    the downtime are spooled and sent once the receiver is back; none twice."""
    from velyrix.cli import client
    from velyrix.controlplane.audit import export

    owner = velyrix("admin", "create-tenant", "acme").stdout.strip().splitlines()[-1]
    auditor = velyrix("admin", "create-provider-key", "siem", "--role", "auditor").stdout.strip().splitlines()[-1]
    badge = velyrix("admin", "create-provider-key", "dc2", "--role", "physical-access").stdout.strip().splitlines()[-1]
    api = client.Client(served, auditor)
    receiver = _receiver(kind, tmp_path, pki)
    receiver.start()
    dest = export.Destination("127.0.0.1", receiver.port, pki.ca, timeout_s=5)
    exporter = export.Exporter(
        lambda start, limit: dict(api.get("/v1/audit-log/entries", start=start, limit=limit)),
        dest,
        tmp_path / "spool",
        fmt="cef",
        batch_size=3,
    )
    stop = threading.Event()
    thread = threading.Thread(target=exporter.follow, args=(stop,), kwargs={"interval_s": 0.1, "max_backoff_s": 0.5})
    thread.start()
    try:
        _session(served, owner, "a", badge)
        _wait_for(receiver, len(_entries(served, auditor)))
        receiver.stop()
        _session(served, owner, "b", badge)
        receiver.start()
        _session(served, owner, "c", badge)
        entries = _entries(served, auditor)
        _wait_for(receiver, len(entries))
    finally:
        stop.set()
        thread.join(timeout=30)
        receiver.stop()
    lines = receiver.lines()
    seqs = [int(_SEQ.search(line).group(1)) for line in lines]  # type: ignore[union-attr]
    assert seqs == list(range(len(entries)))
    assert all(" CEF:0|Velyrix|Velyrix|" in line for line in lines)
    assert f"cn1Label=seq cn1={len(entries) - 1} " in lines[-1]


def test_forward_without_a_receiver_or_with_a_bad_address_exits_2(velyrix: Callable[..., Any], home: Path) -> None:
    missing = velyrix("audit", "forward", "--once")
    assert missing.exit_code == 2 and "--to HOST:PORT" in missing.stderr
    bad = velyrix("audit", "forward", "--to", "siem.example.com", "--ca-bundle", "/nonexistent", "--once")
    assert bad.exit_code == 2 and "expected HOST:PORT" in bad.stderr and "Traceback" not in bad.stderr


def _synthetic(i: int) -> dict[str, Any]:
    event = {"id": f"aud_{i}", "at": "2026-12-01T10:00:00.000000Z", "actor": "alice", "key_id": None}
    event |= {"tenant_id": None, "action": "clusters.update", "target": f"clusters/c{i}", "request_id": f"req_{i}"}
    event |= {"source_address": "10.0.0.1", "outcome": "success", "status_code": 200, "error_code": None}
    return {"index": i, "event": event | {"detail": {"method": "PUT", "path": f"/v1/clusters/c{i}"}}}


# rsyslog only: syslog-ng 3.38 stopped by SIGTERM in the middle of a session was seen (under load, about
# one run in three) to drop messages it had read but not yet written, while closing the session cleanly,
# so the exporter cannot see the loss; docs/audit.md states the limit.
@pytest.mark.parametrize("kind", KINDS[:1])
def test_a_receiver_stopped_while_a_batch_streams_loses_nothing(kind: str, tmp_path: Path, pki: Pki) -> None:
    """The receiver is stopped (SIGTERM) while the exporter streams batches of 500: every leaf arrives, and
    a repeat, if the receiver had read part of the batch it was stopped in, stays inside that one batch
    (the guarantee docs/audit.md states; the receiver deduplicates nothing)."""
    from velyrix.controlplane.audit import export

    total, batch = 3000, 500
    entries = [_synthetic(i) for i in range(total)]
    receiver = _receiver(kind, tmp_path, pki)
    receiver.start()
    dest = export.Destination("127.0.0.1", receiver.port, pki.ca, timeout_s=5)
    exporter = export.Exporter(lambda s, n: {"items": entries[s : s + n]}, dest, tmp_path / "spool", batch_size=batch)
    stop = threading.Event()
    thread = threading.Thread(target=exporter.follow, args=(stop,), kwargs={"interval_s": 0.05, "max_backoff_s": 0.3})
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while len(receiver.lines()) < 700:  # inside the second batch's session
            assert time.monotonic() < deadline, "the first batches did not arrive"
            time.sleep(0.005)
        receiver.stop()
        receiver.start()
        deadline = time.monotonic() + 60
        while exporter.spool.position() < total:
            assert time.monotonic() < deadline, f"position {exporter.spool.position()} of {total}"
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(timeout=30)
        receiver.stop()
    seqs = [int(_SEQ.search(line).group(1)) for line in receiver.lines()]  # type: ignore[union-attr]
    assert set(seqs) == set(range(total)), "nothing lost"
    repeated = sorted(s for s, n in collections.Counter(seqs).items() if n > 1)
    assert not repeated or repeated[-1] // batch == repeated[0] // batch, f"repeats across batches: {repeated[:5]}"
