"""A delivered cluster (control plane tables) becomes the scheduler's cluster."""

from __future__ import annotations

import pytest
from sqlalchemy import orm

from tests.scheduler.delivered_seed import add_delivered, migrated
from velyrix import errors
from velyrix.controlplane.db import engine, models
from velyrix.controlplane.db.models import scheduler as sched_tables
from velyrix.controlplane.reconcile import scheduler_resume
from velyrix.controlplane.reconcile.scheduler_service import DELIVERING, READY, Delivery, Target
from velyrix.ops.scheduler import delivered, slurm_config


@pytest.fixture
def db(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'cp.db'}"
    monkeypatch.setenv("VELYRIX_DATABASE_URL", url)
    with migrated(url) as s:
        add_delivered(s, "train", [f"use1-h200-{i:04d}" for i in range(3)])
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


class _Service:
    """The scheduler service seam (our own protocol): delivering on its first call per cluster, then ready."""

    def __init__(self) -> None:
        self.asked: list[Target] = []

    def ensure(self, target: Target) -> Delivery:
        self.asked.append(target)
        if len(self.asked) == 1:
            return Delivery(DELIVERING, "starting")
        return Delivery(READY, "Slurm back", env={"SLURM_CONF": "/new/slurm.conf"})

    def remove(self, cluster_id: str) -> Delivery:
        raise AssertionError("nothing is removed on a restart")


def test_a_restart_delivers_again_what_was_recorded_ready(db, tmp_path):
    names = ["use1-h200-0000", "use1-h200-0001", "use1-h200-0002"]
    db.add(sched_tables.SchedulerDelivery(cluster_id="c1", tenant_id="t1", kind="slurm", state="ready", nodes=names))
    db.commit()
    made = orm.sessionmaker(engine.make_engine(f"sqlite:///{tmp_path / 'cp.db'}"))
    service = _Service()
    redelivery = scheduler_resume.Redelivery(made, service)
    redelivery.start(every_s=3600.0)  # the test steps it
    try:

        def condition() -> dict:
            with made() as s:
                c = s.get(models.Cluster, "c1")
                return {x["type"]: x for x in c.conditions}["SchedulerReady"]

        assert (condition()["status"], condition()["reason"]) == ("False", "Redelivering")
        redelivery.step()
        assert condition()["reason"] == "Redelivering" and "c1" in redelivery.pending
        redelivery.step()
        assert (condition()["status"], condition()["reason"]) == ("True", "Delivered") and not redelivery.pending
        (target,) = {t.cluster_id: t for t in service.asked}.values()
        assert target.nodes == dict.fromkeys(names, "hgx-h200-8g") and target.tenant == "acme"
        with made() as s:
            row = s.query(sched_tables.SchedulerDelivery).one()
            assert row.env == {"SLURM_CONF": "/new/slurm.conf"}
            assert s.get(models.Cluster, "c1").events[-1]["reason"] == "SchedulerRedelivered"
    finally:
        redelivery.stop()
