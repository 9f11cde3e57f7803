"""BMC credentials are stored only sealed: ``velyrix admin bmc-credentials`` reads the password from a file,
the database holds ciphertext bound to the node, the driver's endpoint source opens it per request, and a
sealed password moved to another node or opened with another key is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy import orm
from typer.testing import CliRunner

from velyrix import errors
from velyrix.controlplane import bmc_credentials, db
from velyrix.controlplane.db import models

NODE = "use1-h200-su00-n07"
PASSWORD = "calvin-Redfish-42!"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    monkeypatch.delenv("VELYRIX_DATABASE_URL", raising=False)
    return tmp_path


def test_the_admin_command_stores_the_password_sealed_and_audited(home: Path) -> None:
    from velyrix.cli.main import app

    secret = home / "bmc.pw"
    secret.write_text(PASSWORD + "\n")
    out = CliRunner().invoke(
        app,
        [
            "admin",
            "bmc-credentials",
            NODE,
            "--address",
            "https://10.0.7.21/",
            "--username",
            "root",
            "--password-file",
            str(secret),
            "--node-type",
            "hgx-h200-8g",
        ],
    )
    assert out.exit_code == 0, out.output
    assert "password sealed" in out.output and PASSWORD not in out.output
    with db.session() as s:
        row = s.scalar(sa.select(models.BmcCredential).where(models.BmcCredential.node_name == NODE))
        assert row is not None and row.address == "https://10.0.7.21" and row.system_id == NODE
        assert PASSWORD.encode() not in row.sealed_password and len(row.sealed_password) == 12 + len(PASSWORD) + 16
        audit = s.scalars(sa.select(models.AuditEvent).where(models.AuditEvent.action == "bmc_credentials.set")).all()
        assert [a.target for a in audit] == [f"bmc-credentials/{NODE}"]
    (db_file,) = home.glob("*.db")
    assert PASSWORD.encode() not in db_file.read_bytes()
    ep = bmc_credentials.endpoints(orm.sessionmaker(db.make_engine()))(NODE)
    assert ep.password.reveal() == PASSWORD and ep.verify_tls is True and PASSWORD not in repr(ep)


def test_a_sealed_password_opens_only_for_its_node_and_key(home: Path) -> None:
    sealed = bmc_credentials.seal(PASSWORD, NODE)
    assert bmc_credentials.unseal(sealed, NODE).reveal() == PASSWORD
    with pytest.raises(errors.VelyrixError, match="does not open"):
        bmc_credentials.unseal(sealed, "use1-h200-su00-n08")
    bmc_credentials.key_path().write_bytes(b"\x00" * 32)  # another region's key
    with pytest.raises(errors.VelyrixError, match="does not open"):
        bmc_credentials.unseal(sealed, NODE)


def test_an_empty_password_file_and_an_unknown_node_are_clear_errors(home: Path) -> None:
    from velyrix.cli.main import app

    empty = home / "empty.pw"
    empty.write_text("\n")
    out = CliRunner().invoke(
        app,
        [
            "admin",
            "bmc-credentials",
            NODE,
            "--address",
            "https://10.0.7.21",
            "--username",
            "root",
            "--password-file",
            str(empty),
        ],
    )
    assert isinstance(out.exception, errors.InvalidInputError) and "holds no password" in out.exception.message
    db.upgrade()
    with pytest.raises(errors.NotFoundError, match="BMC endpoint of node"):
        bmc_credentials.endpoints(orm.sessionmaker(db.make_engine()))("use1-h200-su09-n00")
