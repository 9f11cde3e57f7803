"""A delivered cluster (control plane tables) becomes the scheduler's cluster."""

from __future__ import annotations

import pytest
from sqlalchemy import orm

from velyrix import errors
from velyrix.controlplane.db import engine, migrate, models
from velyrix.ops.scheduler import delivered, slurm_config


@pytest.fixture
def db(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'cp.db'}"
    monkeypatch.setenv("VELYRIX_DATABASE_URL", url)
    migrate.upgrade(url)
    with orm.Session(engine.make_engine(url)) as s:
        s.add(models.Tenant(id="t1", name="acme"))
        s.flush()
        s.add(
            models.Cluster(
                id="c1",
                tenant_id="t1",
                name="train",
                region="us-east-1",
                node_type="hgx-h200-8g",
                node_count=3,
                spec={"fabric": "infiniband-ndr"},
                plan={},
                phase="Ready",
            )
        )
        s.flush()
        for i in range(3):
            s.add(
                models.Node(
                    id=f"n{i}",
                    name=f"use1-h200-{i:04d}",
                    region="us-east-1",
                    node_type="hgx-h200-8g",
                    tenant_id="t1",
                    cluster_id="c1",
                )
            )
        s.add(models.Node(id="free", name="use1-h200-9999", region="us-east-1", node_type="hgx-h200-8g"))
        s.commit()
        yield s


def test_delivered_nodes_become_slurm_nodes(db):
    c = delivered.from_delivered(db, "train", tenant_id="t1")
    assert c.node_names == ["use1-h200-0000", "use1-h200-0001", "use1-h200-0002"] and c.gpus == 24
    conf = slurm_config.slurm_conf(c, slurm_config.SlurmOptions())
    assert "NodeName=use1-h200-0001" in conf and "use1-h200-9999" not in conf


def test_unknown_cluster_suggests_the_closest(db):
    with pytest.raises(errors.UnknownNameError) as exc:
        delivered.from_delivered(db, "trian")
    assert "did you mean 'train'?" in (exc.value.hint or "")


def test_config_command_reads_the_delivered_cluster(db, velyrix, tmp_path):
    res = velyrix("scheduler", "config", "--delivered", "train", "--out", str(tmp_path / "etc"))
    assert res.exit_code == 0, res.stderr
    assert "Gres=gpu:h200:8" in (tmp_path / "etc" / "slurm.conf").read_text()
    missing = velyrix("scheduler", "config", "--out", str(tmp_path / "x"))
    assert missing.exit_code == 2 and "--delivered" in missing.stderr
