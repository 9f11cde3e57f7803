"""The tenants' SSH CA private keys are sealed at rest: the database holds no PEM (a copy of it signs
nothing), one tenant's sealed key does not open as another's, certificates still verify against the CA's
public key, and migration 0024 seals the rows an older database kept in the clear."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import sqlalchemy as sa
from cryptography.hazmat.primitives import serialization

from tests.access.conftest import World
from velyrix import errors
from velyrix.controlplane.access import ca_sealing, certificates, ssh_ca
from velyrix.controlplane.db import engine, migrate

MARK = b"OPENSSH PRIVATE KEY"
_n = itertools.count()


def _database_bytes(url: str) -> bytes:
    """The SQLite file and its write-ahead log, as a copy of the database would hold them."""
    main = Path(url.removeprefix("sqlite:///"))
    return b"".join(p.read_bytes() for p in sorted(main.parent.glob(main.name + "*")))


def test_the_database_holds_no_ca_private_key(world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VELYRIX_SIGNING_KEY_DIR", str(tmp_path / "keys"))
    with world.sessionmaker() as s:
        ca = certificates.authority(s, world.a.tenant_id)
        certificates.authority(s, None)
        s.commit()
    assert MARK in ca.private_key_pem and "private_key_pem" not in repr(ca)
    eng = sa.create_engine(world.url)
    with eng.connect() as conn:
        columns = {c["name"] for c in sa.inspect(conn).get_columns("ssh_authorities")}
        rows = conn.execute(sa.text("SELECT tenant_id, sealed_private_key FROM ssh_authorities")).all()
    eng.dispose()
    assert "private_key_pem" not in columns and len(rows) == 2
    assert MARK not in _database_bytes(world.url) and ca.private_key_pem not in _database_bytes(world.url)
    sealed = {tenant: bytes(blob) for tenant, blob in rows}
    assert ca_sealing.unseal(sealed[world.a.tenant_id], world.a.tenant_id) == ca.private_key_pem
    with pytest.raises(errors.VelyrixError, match="does not open"):
        ca_sealing.unseal(sealed[world.a.tenant_id], world.b.tenant_id)  # moved onto another tenant's row
    # a certificate signed after unsealing verifies against the CA's public key
    user_key = ssh_ca.new_authority("u").public_key
    line, _, _ = ssh_ca.sign_user(ca, user_key, key_id="k", principals=["vlx-user"])
    cert = serialization.load_ssh_public_identity(line.encode())
    ca_public = serialization.load_ssh_public_key(" ".join(ca.public_key.split()[:2]).encode())
    cert.verify_cert_signature()  # type: ignore[union-attr]
    assert cert.signature_key().public_bytes_raw() == ca_public.public_bytes_raw()  # type: ignore[union-attr]


def test_a_database_sealed_under_another_key_file_signs_nothing(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VELYRIX_SIGNING_KEY_DIR", str(tmp_path / "region-1"))
    with world.sessionmaker() as s:
        certificates.authority(s, world.a.tenant_id)
        s.commit()
    monkeypatch.setenv("VELYRIX_SIGNING_KEY_DIR", str(tmp_path / "thief"))
    with world.sessionmaker() as s, pytest.raises(errors.VelyrixError, match="does not open"):
        certificates.authority(s, world.a.tenant_id)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def old_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'old.db'}"
    return str(request.getfixturevalue("pg_server").create_database(f"camig{next(_n)}"))


def test_migration_0024_seals_the_keys_an_older_database_kept_in_the_clear(
    old_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VELYRIX_SIGNING_KEY_DIR", str(tmp_path / "keys"))
    url = old_url
    eng = engine.make_engine(url)
    migrate.upgrade(url, revision="0022", engine=eng)
    old = ssh_ca.new_authority("velyrix-ca tenant:ten_old")
    with eng.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO tenants (id, name, display_name, created_at, updated_at, version)"
                " VALUES ('ten_old', 'old', 'OLD', '2026-11-30 10:00:00', '2026-11-30 10:00:00', 1)"
            )
        )
        conn.execute(
            sa.text(
                "INSERT INTO ssh_authorities (id, tenant_id, public_key, private_key_pem, created_at)"
                " VALUES ('sca_old', 'ten_old', :pub, :pem, '2026-11-30 10:00:00')"
            ),
            {"pub": old.public_key, "pem": old.private_key_pem.decode()},
        )
    assert migrate.upgrade(url, engine=eng) == migrate.head()
    eng.dispose()
    if url.startswith("sqlite"):
        assert MARK not in _database_bytes(url)
    eng = engine.make_engine(url)
    with eng.connect() as conn:
        (sealed,) = conn.execute(sa.text("SELECT sealed_private_key FROM ssh_authorities")).scalars()
        columns = {c["name"] for c in sa.inspect(conn).get_columns("ssh_authorities")}
    eng.dispose()
    assert "private_key_pem" not in columns
    assert ca_sealing.unseal(bytes(sealed), "ten_old") == old.private_key_pem
