"""Customer-managed keys end to end, on SQLite and PostgreSQL: a tenant's key in SoftHSM2 (PKCS#11) and in
a PyKMIP key manager over mutual TLS, both started here; volumes written on the twin's storage tier with
their own data keys; what the provider's operators and a copy of the database can do with them (nothing);
destroying the tenant key (crypto-shredding), revoking the grant, rotating.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pkcs11
import pytest
import sqlalchemy as sa
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from kmip.pie import exceptions as kmip_errors

from tests.controlplane import cmk_tenant
from tests.controlplane.conftest import World, auth, unique
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models.keys import VolumeDataKey
from velyrix.controlplane.reconcile.runtime import FleetRuntime
from velyrix.testing import hsm

SECRET = b"tenant checkpoint shard 0007: weights that only the tenant may read"


@pytest.fixture(scope="session")
def softhsm() -> hsm.SoftHsm:
    return hsm.shared_softhsm()


@pytest.fixture(scope="session")
def kmip_server() -> Iterator[hsm.KmipServer]:
    server = hsm.KmipServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def tenant_cert(kmip_server: hsm.KmipServer) -> hsm.Identity:
    return kmip_server.ca.issue("tenant-a")


@pytest.fixture(scope="module", autouse=True)
def region_allows(softhsm: hsm.SoftHsm, kmip_server: hsm.KmipServer, tmp_path_factory: Any) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VELYRIX_CMK_PKCS11_MODULES", softhsm.module)
        mp.setenv("VELYRIX_CMK_KMIP_ENDPOINTS", kmip_server.endpoint)
        mp.setenv("VELYRIX_HOME", str(tmp_path_factory.mktemp("home")))
        yield


@pytest.fixture(scope="module")
def twin(app: Any, region_allows: None, tmp_path_factory: Any) -> Iterator[FleetRuntime]:
    with pytest.MonkeyPatch.context() as mp:  # the manifest signed by this app's region key
        mp.setenv("VELYRIX_FIRMWARE_DIR", str(tmp_path_factory.mktemp("firmware")))
        sessions = app.app.state.sessionmaker
        runtime = FleetRuntime.twin(sessions, "us-east-1", node_counts={"hgx-h200-8g": 2}, delays=False)
        runtime.attach(app.app)
        yield runtime
        app.app.state.fleet = None


@pytest.fixture
def tenant_kmip(kmip_server: hsm.KmipServer, tenant_cert: hsm.Identity, tmp_path: Path) -> Iterator[Any]:
    client = cmk_tenant.kmip_client(kmip_server, tenant_cert, tmp_path)
    yield client
    client.close()


def register_pkcs11(client: Any, world: World, label: str, pin: str = hsm.TENANT_PIN) -> Any:
    body = {
        "name": unique("hsm"),
        "provider": "pkcs11",
        "pkcs11": {"module": hsm.SOFTHSM_MODULE, "token_label": hsm.TENANT_TOKEN, "key_label": label},
        "credential": {"pin": pin},
    }
    return client.post("/v1/customer-keys", json=body, headers=auth(world.a.keys["owner"]))


def register_kmip(client: Any, world: World, server: hsm.KmipServer, cert: hsm.Identity, uid: str) -> Any:
    body = {
        "name": unique("kms"),
        "provider": "kmip",
        "kmip": {"host": server.host, "port": server.port, "key_id": uid, "ca_pem": server.ca.pem},
        "credential": {"client_cert_pem": cert.cert_pem, "client_key_pem": cert.key_pem},
    }
    return client.post("/v1/customer-keys", json=body, headers=auth(world.a.keys["owner"]))


def new_volume(client: Any, world: World, cmk_id: str) -> str:
    body = {"name": unique("v"), "region": "us-east-1", "tier": "object", "size_tb": 1, "cmk_id": cmk_id}
    resp = client.post("/v1/volumes", json=body, headers=auth(world.a.keys["owner"]))
    assert resp.status_code == 201, resp.text
    return str(resp.json()["id"])


def write(client: Any, world: World, volume_id: str, data: bytes, name: str = "shard-0007") -> Any:
    body = {"name": name, "data_b64": base64.b64encode(data).decode()}
    return client.put(f"/v1/volumes/{volume_id}/objects", json=body, headers=auth(world.a.keys["member"]))


def read(client: Any, secret: str, volume_id: str, name: str = "shard-0007") -> Any:
    return client.get(f"/v1/volumes/{volume_id}/objects", params={"name": name}, headers=auth(secret))


def wrapped_keys(world: World, volume_ids: list[str]) -> dict[str, bytes]:
    with world.session() as s:
        rows = s.scalars(sa.select(VolumeDataKey).where(VolumeDataKey.volume_id.in_(volume_ids)))
        return {r.volume_id: bytes(r.wrapped) for r in rows}


def refused_reads(world: World, volume_id: str) -> list[models.AuditEvent]:
    with world.session() as s:
        stmt = sa.select(models.AuditEvent).where(
            models.AuditEvent.target == f"volumes/{volume_id}/objects", models.AuditEvent.outcome == "refused"
        )
        return list(s.scalars(stmt))


def test_a_volume_under_a_pkcs11_key_is_read_back_and_nobody_else_decrypts_it(
    client: Any, world: World, twin: FleetRuntime, db_url: str, softhsm: hsm.SoftHsm
) -> None:
    label = unique("kek")
    cmk_tenant.pkcs11_create(label)
    resp = register_pkcs11(client, world, label)
    assert resp.status_code == 201, resp.text
    assert hsm.TENANT_PIN not in resp.text
    volume_id = new_volume(client, world, resp.json()["id"])
    assert write(client, world, volume_id, SECRET).status_code == 200
    got = read(client, world.a.keys["viewer"], volume_id)
    assert got.status_code == 200, got.text
    assert base64.b64decode(got.json()["data_b64"]) == SECRET

    stored = twin.driver.storage.ciphertext(volume_id, "shard-0007")  # type: ignore[attr-defined]
    assert SECRET not in stored
    # The provider's operator: no route reads the volume, the key or the data key.
    operator = world.provider["operator"]
    assert read(client, operator, volume_id).status_code == 403
    assert client.get("/v1/customer-keys", headers=auth(operator)).status_code == 403
    assert client.get(f"/v1/volumes/{volume_id}", headers=auth(operator)).status_code == 403
    # A copy of the database: no value in it, nor any 32 bytes of one, opens the stored object.
    candidates = cmk_tenant.candidate_keys(db_url)
    assert wrapped_keys(world, [volume_id])[volume_id][:32] in candidates  # the copy does hold the wrapped key
    aad = f"velyrix-object:{volume_id}/shard-0007".encode()
    opened = 0
    for key in candidates:
        try:
            AESGCM(key).decrypt(stored[:12], stored[12:], aad)
            opened += 1
        except InvalidTag:
            pass
    assert opened == 0
    assert not any(hsm.TENANT_PIN in str(v) for v in cmk_tenant.database_values(db_url))
    # With the HSM's library but without the tenant's PIN, the key is not even visible.
    token = pkcs11.lib(softhsm.module).get_token(token_label=hsm.TENANT_TOKEN)
    with token.open() as public, pytest.raises(pkcs11.exceptions.NoSuchKey):
        public.get_key(label=label, key_type=pkcs11.KeyType.AES)


def test_destroying_the_key_in_the_hsm_makes_reads_fail_with_an_audit_event(
    client: Any, world: World, twin: FleetRuntime
) -> None:
    label = unique("kek")
    cmk_tenant.pkcs11_create(label)
    cmk_id = register_pkcs11(client, world, label).json()["id"]
    volume_id = new_volume(client, world, cmk_id)
    assert write(client, world, volume_id, SECRET).status_code == 200
    cmk_tenant.pkcs11_destroy(label)  # the tenant, in its own HSM
    resp = read(client, world.a.keys["viewer"], volume_id)
    assert resp.status_code == 409, resp.text
    problem = resp.json()
    assert problem["code"] == "cmk_key_unavailable"
    assert label in problem["detail"] and "destroyed" in problem["detail"]
    (event,) = refused_reads(world, volume_id)
    assert event.detail["code"] == "cmk_key_unavailable" and event.status_code == 409
    assert write(client, world, volume_id, b"more").status_code == 409


def test_destroying_a_kmip_key_through_velyrix_shreds_its_volumes_with_evidence(
    client: Any,
    world: World,
    twin: FleetRuntime,
    kmip_server: hsm.KmipServer,
    tenant_cert: hsm.Identity,
    tenant_kmip: Any,
) -> None:
    uid = cmk_tenant.kmip_create(tenant_kmip, unique("kek"))
    resp = register_kmip(client, world, kmip_server, tenant_cert, uid)
    assert resp.status_code == 201, resp.text
    cmk_id = resp.json()["id"]
    volumes = [new_volume(client, world, cmk_id) for _ in range(2)]
    for v in volumes:
        assert write(client, world, v, SECRET).status_code == 200
    assert base64.b64decode(read(client, world.a.keys["viewer"], volumes[0]).json()["data_b64"]) == SECRET
    wrapped = wrapped_keys(world, volumes)

    resp = client.post(f"/v1/customer-keys/{cmk_id}/destroy", headers=auth(world.a.keys["admin"]))
    assert resp.status_code == 200, resp.text
    assert resp.json()["state"] == "destroyed"
    with pytest.raises(kmip_errors.KmipOperationFailure, match="ITEM_NOT_FOUND"):
        tenant_kmip.get(uid)  # gone in the key manager, not only marked in Velyrix
    for v in volumes:
        failed = read(client, world.a.keys["viewer"], v)
        assert failed.status_code == 409 and failed.json()["code"] == "cmk_destroyed", failed.text
        assert len(refused_reads(world, v)) == 1
    with world.session() as s:
        (event,) = s.scalars(
            sa.select(models.AuditEvent).where(
                models.AuditEvent.action == "customer_keys.destroy",
                models.AuditEvent.target == f"customer-keys/{cmk_id}",
            )
        )
    import hashlib

    assert event.detail["volumes_shredded"] == {v: hashlib.sha256(w).hexdigest() for v, w in wrapped.items()}
    assert "ITEM_NOT_FOUND" in event.detail["hsm_answer_after_destroy"]


@pytest.mark.parametrize("provider", ["pkcs11", "kmip"])
def test_rotation_rewraps_every_data_key_without_touching_data(
    client: Any,
    world: World,
    twin: FleetRuntime,
    provider: str,
    kmip_server: hsm.KmipServer,
    tenant_cert: hsm.Identity,
    tenant_kmip: Any,
) -> None:
    if provider == "pkcs11":
        old, new = unique("kek"), unique("kek")
        cmk_tenant.pkcs11_create(old)
        cmk_id = register_pkcs11(client, world, old).json()["id"]
    else:
        old = cmk_tenant.kmip_create(tenant_kmip, unique("kek"))
        cmk_id = register_kmip(client, world, kmip_server, tenant_cert, old).json()["id"]
    volumes = [new_volume(client, world, cmk_id) for _ in range(3)]
    for i, v in enumerate(volumes):
        assert write(client, world, v, SECRET + bytes([i])).status_code == 200
    before = wrapped_keys(world, volumes)
    stored = {v: twin.driver.storage.ciphertext(v, "shard-0007") for v in volumes}  # type: ignore[attr-defined]

    if provider == "pkcs11":
        cmk_tenant.pkcs11_create(new)
        body = {"key_label": new}
    else:
        new = cmk_tenant.kmip_create(tenant_kmip, unique("kek"))
        body = {"key_id": new}
    resp = client.post(f"/v1/customer-keys/{cmk_id}/rotate", json=body, headers=auth(world.a.keys["owner"]))
    assert resp.status_code == 200, resp.text
    assert resp.json()["key_version"] == 2 and resp.json()["volumes"] == 3
    after = wrapped_keys(world, volumes)
    assert all(after[v] != before[v] for v in volumes)
    assert {v: twin.driver.storage.ciphertext(v, "shard-0007") for v in volumes} == stored  # type: ignore[attr-defined]
    # The old key gone, every volume still reads: each data key is now wrapped by the new one only.
    if provider == "pkcs11":
        cmk_tenant.pkcs11_destroy(old)
    else:
        cmk_tenant.kmip_destroy(tenant_kmip, old)
    for i, v in enumerate(volumes):
        got = read(client, world.a.keys["viewer"], v)
        assert got.status_code == 200, got.text
        assert base64.b64decode(got.json()["data_b64"]) == SECRET + bytes([i])


def test_an_operator_certificate_cannot_use_the_tenants_kmip_key(
    client: Any, world: World, twin: FleetRuntime, kmip_server: hsm.KmipServer, tenant_kmip: Any, tmp_path: Path
) -> None:
    """The provider's own client certificate on the same key manager is refused the tenant's key."""
    from velyrix.controlplane.cmk import errors
    from velyrix.controlplane.cmk.kmip_backend import KmipKey

    uid = cmk_tenant.kmip_create(tenant_kmip, unique("kek"))
    cert = kmip_server.ca.issue("provider-operator")
    operator_key = KmipKey(kmip_server.host, kmip_server.port, uid, kmip_server.ca.pem, cert.cert_pem, cert.key_pem)
    with pytest.raises(errors.KeyUnavailableError, match="refused ENCRYPT"):
        operator_key.wrap(os.urandom(32), b"x")
    resp = register_kmip(client, world, kmip_server, cert, uid)
    assert resp.status_code == 409 and resp.json()["code"] == "cmk_key_unavailable", resp.text


def test_revoking_the_grant_stops_reads_until_granted_again(client: Any, world: World, twin: FleetRuntime) -> None:
    label = unique("kek")
    cmk_tenant.pkcs11_create(label)
    cmk_id = register_pkcs11(client, world, label).json()["id"]
    volume_id = new_volume(client, world, cmk_id)
    assert write(client, world, volume_id, SECRET).status_code == 200
    owner = auth(world.a.keys["owner"])
    assert client.delete(f"/v1/customer-keys/{cmk_id}/grant", headers=owner).status_code == 200
    with world.session() as s:
        assert all(
            g.sealed_credential is None for g in s.scalars(sa.select(models.CustomerKeyGrant)) if g.key_id == cmk_id
        )
    resp = read(client, world.a.keys["viewer"], volume_id)
    assert resp.status_code == 409 and resp.json()["code"] == "cmk_grant_revoked", resp.text
    wrong = client.put(f"/v1/customer-keys/{cmk_id}/grant", json={"credential": {"pin": "not-the-pin"}}, headers=owner)
    assert wrong.status_code == 409 and wrong.json()["code"] == "cmk_key_unavailable", wrong.text
    regrant = client.put(
        f"/v1/customer-keys/{cmk_id}/grant", json={"credential": {"pin": hsm.TENANT_PIN}}, headers=owner
    )
    assert regrant.status_code == 200, regrant.text
    assert base64.b64decode(read(client, world.a.keys["viewer"], volume_id).json()["data_b64"]) == SECRET


def test_registration_refusals_say_what_is_wrong(client: Any, world: World, twin: FleetRuntime) -> None:
    owner = auth(world.a.keys["owner"])
    body = {
        "name": unique("hsm"),
        "provider": "pkcs11",
        "pkcs11": {"module": "/tmp/evil.so", "token_label": hsm.TENANT_TOKEN, "key_label": "x"},
        "credential": {"pin": hsm.TENANT_PIN},
    }
    resp = client.post("/v1/customer-keys", json=body, headers=owner)
    assert resp.status_code == 403 and resp.json()["code"] == "cmk_endpoint_not_allowed", resp.text
    assert hsm.SOFTHSM_MODULE in resp.json()["hint"]
    missing = register_pkcs11(client, world, unique("no-such-key"))
    assert missing.status_code == 409 and missing.json()["code"] == "cmk_key_unavailable"
    body["pkcs11"]["module"] = hsm.SOFTHSM_MODULE  # type: ignore[index]
    body["credential"] = {"client_cert_pem": "x", "client_key_pem": "y"}
    no_pin = client.post("/v1/customer-keys", json=body, headers=owner)
    assert no_pin.status_code == 422 and no_pin.json()["code"] == "cmk_invalid", no_pin.text
    plain = client.post(
        "/v1/volumes", json={"name": unique("v"), "region": "us-east-1", "tier": "object", "size_tb": 1}, headers=owner
    )
    refused = write(client, world, plain.json()["id"], SECRET)
    assert refused.status_code == 409 and refused.json()["code"] == "volume_without_customer_key"


def test_deleting_a_volume_erases_its_wrapped_data_key(client: Any, world: World, twin: FleetRuntime) -> None:
    label = unique("kek")
    cmk_tenant.pkcs11_create(label)
    volume_id = new_volume(client, world, register_pkcs11(client, world, label).json()["id"])
    assert write(client, world, volume_id, SECRET).status_code == 200
    assert wrapped_keys(world, [volume_id])
    assert client.delete(f"/v1/volumes/{volume_id}", headers=auth(world.a.keys["owner"])).status_code == 204
    assert wrapped_keys(world, [volume_id]) == {}
    assert read(client, world.a.keys["viewer"], volume_id).status_code == 404


@pytest.fixture
def served(app: Any, twin: FleetRuntime, world: World, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The module's app (with its twin) on a real loopback HTTP server; the CLI logged in as tenant a's owner."""
    import threading
    import time

    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=hsm.free_port(), log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    endpoint = f"http://127.0.0.1:{server.config.port}"
    monkeypatch.setenv("VELYRIX_ENDPOINT", endpoint)
    monkeypatch.setenv("VELYRIX_API_KEY", world.a.keys["owner"])
    yield endpoint
    server.should_exit = True
    thread.join(timeout=10)


def test_the_cli_registers_a_key_writes_reads_rotates_and_shreds(
    served: str, velyrix: Any, tmp_path: Path, twin: FleetRuntime
) -> None:
    old, new = unique("kek"), unique("kek")
    cmk_tenant.pkcs11_create(old)
    (tmp_path / "pin").write_text(hsm.TENANT_PIN + "\n")
    (tmp_path / "shard").write_bytes(SECRET)
    name, volume = unique("cli-key"), unique("cli-vol")
    token = ("--pkcs11-token", hsm.TENANT_TOKEN, "--pin-file", str(tmp_path / "pin"))
    result = velyrix("keys", "cmk", "register", name, *token, "--key-label", old)
    assert result.exit_code == 0, result.stderr
    assert f"object={old}" in result.stdout and hsm.TENANT_PIN not in result.stdout
    args = ("--region", "us-east-1", "--tier", "object", "--size-tb", "1", "--cmk", name)
    assert velyrix("volume", "create", volume, *args).exit_code == 0
    assert velyrix("volume", "write", volume, "shard", "--file", str(tmp_path / "shard")).exit_code == 0
    assert velyrix("volume", "read", volume, "shard", "--out", str(tmp_path / "back")).exit_code == 0
    assert (tmp_path / "back").read_bytes() == SECRET

    cmk_tenant.pkcs11_create(new)
    rotated = velyrix("keys", "cmk", "rotate", name, "--key-label", new)
    assert rotated.exit_code == 0, rotated.stderr
    assert "1 data keys rewrapped" in rotated.stdout and "version 2" in rotated.stdout
    cmk_tenant.pkcs11_destroy(old)
    assert velyrix("volume", "read", volume, "shard", "--out", str(tmp_path / "again")).exit_code == 0
    assert (tmp_path / "again").read_bytes() == SECRET

    unconfirmed = velyrix("keys", "cmk", "destroy", name)
    assert unconfirmed.exit_code == 2 and "--yes" in unconfirmed.stderr
    assert velyrix("keys", "cmk", "destroy", name, "--yes").exit_code == 0
    gone = velyrix("volume", "read", volume, "shard")
    assert gone.exit_code != 0 and "destroyed" in gone.stderr and "Traceback" not in gone.stderr
    missing = velyrix("keys", "cmk", "register", unique("k"), "--pkcs11-token", hsm.TENANT_TOKEN, "--key-label", "x")
    assert missing.exit_code == 2 and "--pin-file" in missing.stderr
