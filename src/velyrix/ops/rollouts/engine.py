"""The rollout controller: one ``tick`` takes the next steps of one rollout and returns what it waits for.

A wave: (tenant waves) open an announced maintenance window of the cluster that leaves room for the wave;
take the group's all-reduce baseline; drain each node through the scheduler seam (reason names the
rollout), lend a spare to a cluster promised at full size; install through the driver; validate (the node
type's acceptance tests, gated XIDs); judge the gates; return the nodes (and spares). A canary then soaks
and is validated again. A failed gate halts the rollout, and with ``rollback = "automatic"`` every node it
upgraded goes back to its previous version, re-validated, and returns. Every step goes through the journal
(recorded before it is acted on; ``velyrix.ops.rollouts.journal``), so a controller killed at any point
resumes without installing anything twice or leaving a node drained.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import errors
from velyrix.catalog import versions
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import rollouts as models_rollouts
from velyrix.controlplane.reconcile import store
from velyrix.declarations import rollout as decl
from velyrix.fleet import clock
from velyrix.fleet import states as fleet_states
from velyrix.fleet.drivers import base
from velyrix.ops.rollouts import baseline, gates, notices, states
from velyrix.ops.rollouts.journal import WAIT, Journal, utc
from velyrix.ops.rollouts.world import World
from velyrix.planners import rollout as planner

SOURCE = "rollout"


@dataclass
class Outcome:
    """What a tick left: the rollout's state, and the time it waits for (None: a driver request, poll)."""

    state: str
    waiting_until: dt.datetime | None = None


def move(rollout: models_rollouts.Rollout, to: str, reason: str) -> None:
    """Move the rollout's state along ``states.MOVES``; ``ConflictError`` for a move the table forbids."""
    if to not in states.MOVES.get(rollout.state, frozenset()):
        allowed = ", ".join(sorted(states.MOVES.get(rollout.state, frozenset()))) or "nothing (finished)"
        raise errors.ConflictError(
            f"rollout {rollout.name} is {rollout.state}: it cannot become {to}", hint=f"it may become: {allowed}"
        )
    rollout.state, rollout.reason = to, reason
    rollout.version_no += 1


class Controller:
    """Drives one rollout (``rollout_id``) on ``world``; ``sender`` delivers notices (None: events only)."""

    def __init__(
        self, session: orm.Session, rollout_id: str, world: World, sender: notices.Sender | None = None
    ) -> None:
        self.session = session
        self.world = world
        self.sender = sender
        self.rollout = session.get(models_rollouts.Rollout, rollout_id) or _missing(rollout_id)
        self.spec = decl.from_dict(self.rollout.spec)
        self.journal = Journal(session, self.rollout, world.before_commit)
        self.waves = [dict(w) for w in self.rollout.plan["waves"]]
        self.clusters: dict[str, dict[str, Any]] = dict(self.rollout.plan.get("clusters", {}))

    # --- the loop ---------------------------------------------------------------------------------

    def tick(self) -> Outcome:
        """Take the next steps; returns the state and what it waits for."""
        self.session.refresh(self.rollout)
        state = self.rollout.state
        if state == states.PENDING:
            move(self.rollout, states.RUNNING, "first wave")
            self.session.commit()
            state = states.RUNNING
        if state == states.RUNNING:
            return self._forward()
        if state == states.ROLLING_BACK:
            return self._rollback()
        return Outcome(state)

    def _forward(self) -> Outcome:
        for wave in self.waves:
            if self.journal.done(f"w{wave['index']}/finished") is not None:
                continue
            out = self._wave(wave)
            if out is not None:
                return out
        image = getattr(self.world.driver, "firmware_image", None)
        what = (self.spec.component, self.spec.version, image)
        self.journal.step("baseline", "baseline", None, lambda _: baseline.follow(self.session, self.rollout, *what))
        move(self.rollout, states.COMPLETED, f"every wave passed; {self.spec.component} {self.spec.version} everywhere")
        self._tell_all("RolloutCompleted", f"{self.spec.component} {self.spec.version} installed on every planned node")
        self.session.commit()
        return Outcome(states.COMPLETED)

    def _wave(self, wave: dict[str, Any]) -> Outcome | None:
        i, nodes = wave["index"], list(wave["nodes"])
        if wave.get("cluster") and self.journal.done(f"w{i}/window") is None:
            opened = self._open_window(wave)
            if opened is not None:
                return opened
        group = wave.get("cluster") or f"w{i}"
        members = self.clusters.get(wave.get("cluster") or "", {}).get("nodes") or nodes
        if "all_reduce_baseline" in self.spec.gates and self._cluster_test(f"baseline/{group}", members) is None:
            return Outcome(states.RUNNING)
        if not self._take(i, wave, nodes):
            return Outcome(states.RUNNING)
        if not self._all(nodes, lambda n: self._install(f"w{i}/upgrade/{n}", n, self.spec.version)):
            return Outcome(states.RUNNING)
        if not self._all(nodes, lambda n: self._validate(f"w{i}/validate/{n}", f"w{i}/upgrade/{n}", n)):
            return Outcome(states.RUNNING)
        if not self._gate(i, group, nodes, members, f"w{i}/validate"):
            return Outcome(self.rollout.state)
        for n in nodes:
            self.journal.step(f"w{i}/return/{n}", "return", n, functools.partial(self._return, n, i))
        if wave["stage"] == "canary" and self.spec.canary_soak_s > 0:
            soaked = self._soak(i, group, nodes, members)
            if soaked is not None:
                return soaked
        self.journal.step(f"w{i}/finished", "wave", None, lambda _: self._finished(wave))
        return None

    def _take(self, i: int, wave: dict[str, Any], nodes: list[str]) -> bool:
        """Drain the wave's nodes (lending spares where promised); True once every one is free of jobs."""
        for n in nodes:
            self.journal.step(f"w{i}/drain/{n}", "drain", n, functools.partial(self._drain, n))
            if self.clusters.get(wave.get("cluster") or "", {}).get("full_size"):
                self.journal.step(f"w{i}/lend/{n}", "lend", n, functools.partial(self._lend, n))
        return self._all(nodes, lambda n: self._free(f"w{i}/free/{n}", n))

    # --- steps ------------------------------------------------------------------------------------

    def _reason(self) -> str:
        return f"{self.spec.component} {self.spec.version} ({self.rollout.name})"

    def _slurm_source(self) -> str:
        """The holder of the rollout's drains in a delivered Slurm: its reason reads
        ``velyrix:rollout-NAME: COMPONENT VERSION (NAME)`` (``velyrix.ops.scheduler.slurm_drains``)."""
        return f"{SOURCE}-{self.rollout.name}"

    def _drain(self, node: str, _: dict[str, Any]) -> dict[str, Any]:
        self.world.seam.drain(node, self._reason(), f"{SOURCE}:{self.rollout.name}")
        slurm = self.world.scheduler_of(self.session, node)
        if slurm is not None:  # the cluster's own Slurm: no new job starts there; the running one finishes
            slurm.drain(node, self._reason(), self._slurm_source())
        return {"drained": True, "slurm": slurm is not None}

    def _free(self, key: str, node: str) -> bool:
        """True once no job of the cluster's delivered Slurm runs on ``node`` (a step only where one runs)."""
        slurm = self.world.scheduler_of(self.session, node)
        if slurm is None or not hasattr(slurm, "busy"):
            return True
        return self.journal.step(key, "free", node, lambda _: WAIT if slurm.busy(node) else {"free": True}) is not None

    def _return(self, node: str, wave: int, _: dict[str, Any]) -> dict[str, Any]:
        slurm = self.world.scheduler_of(self.session, node)
        if slurm is not None:  # resumed in the cluster's Slurm once re-validated (others' drains stay)
            slurm.undrain(node, self._slurm_source())
        self.world.seam.undrain(node, f"{SOURCE}:{self.rollout.name}")
        lent = self.journal.done(f"w{wave}/lend/{node}") or {}
        return {"returned": True, "spare_back": lent.get("spare")}

    def _lend(self, node: str, _: dict[str, Any]) -> dict[str, Any]:
        """A spare for a cluster promised at full size: a free node already on the new version, not lent."""
        lent = {r.detail.get("spare") for r in self.journal.by_action("lend") if r.status == "done"}
        back = {r.detail.get("spare_back") for r in self.journal.by_action("return") if r.status == "done"}
        busy = lent - back
        ready = [
            n
            for w in self.waves
            if w.get("cluster") is None and w["stage"] == "production"
            for n in w["nodes"]
            if self.journal.done(f"w{w['index']}/finished") is not None and n not in busy
        ]
        return {"spare": ready[0] if ready else None, "short": not ready}

    def _install(self, key: str, node: str, version: str) -> bool:
        """Install ``version`` on ``node`` once (step ``key``); True when done."""
        intent = (
            None if self.journal.get(key) else {"from": self.world.installed(self.session, node)[self.spec.component]}
        )

        def act(recorded: dict[str, Any]) -> dict[str, Any] | None:
            op = self._op(key)
            if op is None and self.world.installed(self.session, node)[self.spec.component] == version:
                return {"to": version, "observed": True, "booted": True, "xids": []}  # installed before a restart
            if op is None:
                op = self.world.driver.upgrade(
                    node, component=self.spec.component, version=version, request_id=self.journal.request_id(key)
                )
            if not op.done:
                return WAIT
            result = dict(op.result or {}) if op.status == base.SUCCEEDED else {"booted": False, "error": op.error}
            self._store_version(node, version)
            return result

        return self.journal.step(key, "upgrade", node, act, intent) is not None

    def _op(self, key: str) -> base.Operation | None:
        """The driver's request of step ``key`` if the driver knows it (None: never submitted, or forgotten
        by a restarted driver)."""
        try:
            return self.world.driver.operation(self.journal.request_id(key))
        except errors.NotFoundError:
            return None

    def _store_version(self, node: str, version: str) -> None:
        row = self.session.scalar(sa.select(models.Node).where(models.Node.name == node))
        if row is not None:
            hw = dict(row.hardware or {})
            firmware = dict(hw.get("firmware", {}))
            for name in (self.spec.component, *versions.companions(self.spec.component)):
                firmware[versions.component(name).installed_key] = version
            row.hardware = {**hw, "firmware": firmware}

    def _validate(self, key: str, install_key: str, node: str) -> bool:
        def act(_: dict[str, Any]) -> dict[str, Any] | None:
            installed = self.journal.done(install_key) or {}
            if not installed.get("booted", True):
                return gates.judge_node("", {}, installed)
            op = self._op(key)
            if op is None:
                op = self.world.driver.run_acceptance(node, request_id=self.journal.request_id(key))
            if not op.done:
                return WAIT
            if op.status != base.SUCCEEDED:
                return {"acceptance": [f"acceptance could not run: {op.error}"], "xids": []}
            return gates.judge_node(str((op.result or {}).get("node_type")), op.result or {}, installed)

        return self.journal.step(key, "validate", node, act) is not None

    def _cluster_test(self, key: str, nodes: list[str]) -> dict[str, Any] | None:
        if len(nodes) < 2:
            return self.journal.step(key, "all_reduce", None, lambda _: {"all_reduce_busbw_gb_s": None})

        def act(_: dict[str, Any]) -> dict[str, Any] | None:
            op = self._op(key)
            if op is None:
                op = self.world.driver.run_cluster_tests(
                    nodes, request_id=self.journal.request_id(key), tests=("all_reduce",)
                )
            if not op.done:
                return WAIT
            return {
                "all_reduce_busbw_gb_s": (op.result or {}).get("all_reduce_busbw_gb_s")
                if op.status == base.SUCCEEDED
                else 0.0
            }

        return self.journal.step(key, "all_reduce", None, act)

    def _all(self, nodes: list[str], each: Callable[[str], bool]) -> bool:
        return all([each(n) for n in nodes])  # every node's step submitted before waiting on any

    def _gate(self, i: int, group: str, nodes: list[str], members: list[str], prefix: str) -> bool:
        """Judge the wave's gates (a step); on failure halt, or roll back when automatic. True: passed."""
        after = None
        if "all_reduce_baseline" in self.spec.gates:
            test = self._cluster_test(f"{prefix}/all_reduce", members)
            if test is None:
                return False
            after = test.get("all_reduce_busbw_gb_s")
        baseline = (self.journal.done(f"baseline/{group}") or {}).get("all_reduce_busbw_gb_s")
        validations = {n: self.journal.done(f"{prefix}/{n}") or {} for n in nodes}
        v = gates.verdict(self.spec.gates, validations, baseline, after)
        result = self.journal.step(
            f"{prefix}/gate", "gate", None, lambda _: {**v.to_dict(), "holds": v.holds(self.spec.failed_node_limit)}
        )
        if result is not None and result["holds"]:
            return True
        self._halt(i, v)
        return False

    def _halt(self, i: int, v: gates.Verdict) -> None:
        why = "; ".join([*v.problems, *(f"{n}: {r[0]}" for n, r in v.failed.items())])[:2000]
        automatic = self.spec.rollback == "automatic"
        move(self.rollout, states.ROLLING_BACK if automatic else states.HALTED, f"wave {i} failed its gates: {why}")
        self._tell_all("RolloutHalted", f"rollout {self.rollout.name} halted at wave {i}: {why}", warning=True)
        self.session.commit()

    def _soak(self, i: int, group: str, nodes: list[str], members: list[str]) -> Outcome | None:
        ends = self.journal.step(
            f"w{i}/soak",
            "soak",
            None,
            lambda _: {"until": (clock.now() + dt.timedelta(seconds=self.spec.canary_soak_s)).isoformat()},
        )
        until = dt.datetime.fromisoformat(str((ends or {})["until"]))
        if clock.now() < until:
            return Outcome(states.RUNNING, until)
        if not self._all(nodes, lambda n: self._validate(f"w{i}/soaked/{n}", f"w{i}/upgrade/{n}", n)):
            return Outcome(states.RUNNING)
        if not self._gate(i, group, nodes, members, f"w{i}/soaked"):
            return Outcome(self.rollout.state)
        return None

    def _finished(self, wave: dict[str, Any]) -> dict[str, Any]:
        cluster = self._cluster_row(wave.get("cluster"))
        if cluster is None:
            return {"finished": True}
        what = f"{self.spec.component} {self.spec.version}"
        text = f"{what} installed on {len(wave['nodes'])} nodes of {cluster.name}; returned to service"
        return notices.tell(
            cluster, self.rollout, "RolloutWaveDone", text, self.rollout.spec.get("notify", []), self.sender
        )

    # --- windows ----------------------------------------------------------------------------------

    def _cluster_row(self, name: str | None) -> models.Cluster | None:
        if not name:
            return None
        q = sa.select(models.Cluster).where(models.Cluster.name == name, models.Cluster.region == self.rollout.region)
        return self.session.scalars(q).first()

    def _open_window(self, wave: dict[str, Any]) -> Outcome | None:
        """None when an announced window of the wave's cluster is open with room for the wave (recorded);
        otherwise what to wait for (announcing the cluster's next window when none is left)."""
        cluster = self._cluster_row(wave["cluster"])
        if cluster is None:
            raise errors.NotFoundError(kind="cluster", name=str(wave["cluster"]))
        now, wave_s = clock.now(), dt.timedelta(seconds=float(self.rollout.plan["wave_seconds"]))
        notice = dt.timedelta(hours=self.spec.notice_hours)
        upcoming = []
        for w in notices.windows(self.session, self.rollout, cluster.id):
            start, end = utc(w.starts_at), utc(w.ends_at)
            if w.announced_at is None or utc(w.announced_at) > start - notice:
                continue
            if start <= now and now + wave_s <= end:
                self.journal.step(
                    f"w{wave['index']}/window",
                    "window",
                    None,
                    functools.partial(_span, start, end),
                )
                return None
            if start > now:
                upcoming.append(start)
        if upcoming:
            return Outcome(states.RUNNING, min(upcoming))
        spec_window = self.clusters.get(cluster.name, {}).get("window")
        window = (
            decl.WindowSpec(**{**spec_window, "days": tuple(spec_window["days"])}) if spec_window else self.spec.window
        )
        start, end = next(planner.occurrences(window, now + notice))
        key = f"announce/{cluster.name}/{start.isoformat()}"
        self.journal.step(key, "announce", None, lambda _: self._announce(cluster, start, end))
        return Outcome(states.RUNNING, start)

    def _announce(self, cluster: models.Cluster, start: dt.datetime, end: dt.datetime) -> dict[str, Any]:
        return notices.announce(
            self.session, self.rollout, cluster, start, end, self.rollout.spec.get("notify", []), self.sender
        )

    def _tell_all(self, reason: str, text: str, warning: bool = False) -> None:
        for name in self.clusters:
            notices.tell(self._cluster_row(name), self.rollout, reason, text, [], None, warning)
        notices.send(
            self.rollout.spec.get("notify", []),
            {"priority": "P3" if warning else "P4", "incident": f"rollout {self.rollout.name}", "title": text},
            self.sender,
        )

    # --- rollback ---------------------------------------------------------------------------------

    def _rollback(self) -> Outcome:
        touched: dict[str, str] = {}
        for row in self.journal.by_action("upgrade"):
            if not row.key.startswith("rb/") and row.node and row.node not in touched:
                touched[row.node] = str(row.detail.get("from"))
        outcomes = {node: self._back(node, previous) for node, previous in touched.items()}
        if None in outcomes.values():
            return Outcome(states.ROLLING_BACK)
        quarantined = {n: why for n, why in outcomes.items() if why}
        if quarantined:
            return self._halt_quarantined(len(touched), quarantined)
        move(self.rollout, states.ROLLED_BACK, f"{len(touched)} nodes back on their previous version")
        self._tell_all("RolloutRolledBack", f"rollout {self.rollout.name} rolled back on {len(touched)} nodes")
        self.session.commit()
        return Outcome(states.ROLLED_BACK)

    def _back(self, node: str, previous: str) -> str | None:
        """Roll ``node`` back to ``previous``, re-validated: "" once returned to service, why it failed its
        validation once quarantined instead (not returned, still drained), None while waiting."""
        self.journal.step(f"rb/drain/{node}", "drain", node, functools.partial(self._drain, node))
        if (
            not self._free(f"rb/free/{node}", node)
            or not self._install(f"rb/upgrade/{node}", node, previous)
            or not self._validate(f"rb/validate/{node}", f"rb/upgrade/{node}", node)
        ):
            return None
        v = gates.verdict(NODE_GATES, {node: self.journal.done(f"rb/validate/{node}") or {}}, None, None)
        if v.failed:
            why = "; ".join(v.failed[node])[:500]
            self.journal.step(f"rb/quarantine/{node}", "quarantine", node, lambda _: self._quarantine(node, why))
            return why
        self.journal.step(f"rb/return/{node}", "return", node, functools.partial(self._return, node, -1))
        return ""

    def _quarantine(self, node: str, why: str) -> dict[str, Any]:
        """Quarantine ``node`` through the fleet's transition table (``reconcile.store.move``, recorded; the
        reconciler replaces a cluster's quarantined member from its spares)."""
        row = self.session.scalar(sa.select(models.Node).where(models.Node.name == node))
        if row is not None:
            reason = f"rollout {self.rollout.name}: failed validation after the rollback: {why}"
            store.move(
                self.session, row, fleet_states.QUARANTINED, actor=f"{SOURCE}:{self.rollout.name}", reason=reason
            )
        return {"quarantined": row is not None, "why": why}

    def _halt_quarantined(self, touched: int, quarantined: dict[str, str]) -> Outcome:
        names = ", ".join(sorted(quarantined))
        why = (
            f"rolled back {touched - len(quarantined)} of {touched} nodes; quarantined {names} "
            "(failed validation after the rollback)"
        )
        move(self.rollout, states.HALTED, why)
        self._tell_all("RolloutHalted", f"rollout {self.rollout.name} halted: {why}", warning=True)
        self.session.commit()
        return Outcome(states.HALTED)


NODE_GATES = ("acceptance", "no_new_xids")
"""What a node must pass after a rollback to return to service (whatever gates the rollout declared)."""


def _span(start: dt.datetime, end: dt.datetime, _: dict[str, Any]) -> dict[str, Any]:
    return {"from": start.isoformat(), "to": end.isoformat()}


def _missing(rollout_id: str) -> models_rollouts.Rollout:
    raise errors.NotFoundError(kind="rollout", name=rollout_id)
