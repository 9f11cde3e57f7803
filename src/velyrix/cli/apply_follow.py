"""How ``velyrix apply`` and ``velyrix destroy`` follow a cluster: its new events as lines, a progress bar
along the phases this run reaches, and the seconds the control plane recorded for the run."""

from __future__ import annotations

import time
from typing import Any

from velyrix.cli import common
from velyrix.controlplane.reconcile import phases

PHASE_ORDER = phases.ORDER
SETTLED = (*phases.SETTLED_PHASES, phases.DELETED)
DELETION_TRACK = ("", phases.DELETING, phases.DELETED)
"""The steps a deletion's progress bar counts (Deleting is 1 of 2)."""


def event_line(ev: dict[str, Any], history: list[dict[str, Any]]) -> str:
    """One cluster event for people. A phase change pairs its message (what the phase it leaves achieved)
    with that phase: ``Networking: tenant networks attached -> Storage``; ``history`` is the cluster's
    ``phase_history``, which says the phase each move came from."""
    reason, message = str(ev.get("reason", "")), str(ev.get("message", ""))
    if not (reason.startswith("Phase") and len(reason) > 5):
        return f"{reason}: {message}"
    phase = reason[5:]
    came_from = next(
        (h.get("from") for h in reversed(history) if h.get("phase") == phase and h.get("at") == ev.get("at")), None
    )
    if came_from:
        return f"{came_from}: {message} -> {phase}" if message else f"{came_from} -> {phase}"
    return f"{message} -> {phase}" if message else f"-> {phase}"


def follow(
    client: Any,
    cluster_id: str,
    *,
    since_phases: int,
    want: tuple[str, ...],
    timeout_s: float,
    con: Any,
    seen: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Poll the cluster until it settles after ``since_phases`` recorded phases; show a progress bar and the
    cluster's events, except those in ``seen`` (the events it had before this run). The bar counts the
    phases of ``phases.ORDER`` this run reached and the seconds the control plane recorded for it. Returns
    the last cluster object."""
    from rich.progress import BarColumn, Progress, TextColumn

    shown = {_event_key(ev) for ev in seen or []}
    deadline = time.monotonic() + timeout_s
    grace = time.monotonic() + 10.0
    started: str | None = None
    cluster: dict[str, Any] = {}
    with Progress(
        TextColumn("[bold]{task.description:<13}"),
        BarColumn(bar_width=36),
        TextColumn("{task.completed}/{task.total} phases {task.fields[took]}"),
        console=con,
        transient=False,
    ) as bar:
        track = DELETION_TRACK if phases.DELETED in want else PHASE_ORDER
        task = bar.add_task("Waiting", total=len(track) - 1, took="")
        while time.monotonic() < deadline:
            cluster = client.get(f"/v1/clusters/{cluster_id}")
            st = cluster["status"]
            history = st.get("phase_history") or []
            for ev in st.get("events") or []:
                if _event_key(ev) in shown:
                    continue
                shown.add(_event_key(ev))
                started = started or str(ev.get("at", ""))
                style = "yellow" if ev.get("type") == "Warning" else "dim"
                bar.console.print(f"  [{style}]{common.safe(event_line(ev, history))}[/]")
            moved = len(history) > since_phases
            run = history[since_phases:] if moved else []
            started = started or (str(run[0].get("at", "")) if run else None)
            done = _reached(run)
            bar.update(task, description=st["phase"] if moved else "Waiting", completed=done, took=_took(started, run))
            if st["phase"] in want and (moved or time.monotonic() > grace):
                break
            time.sleep(0.3)
        else:
            raise _timeout(cluster, timeout_s)
    return cluster


def follow_deletion(client: Any, live: dict[str, Any], timeout_s: float, con: Any) -> dict[str, Any]:
    """``follow`` a cluster whose deletion was just requested; ``live`` is the object from before the request."""
    st = live.get("status") or {}
    return follow(
        client,
        live["id"],
        since_phases=len(st.get("phase_history") or []),
        want=(phases.DELETED,),
        timeout_s=timeout_s,
        con=con,
        seen=st.get("events") or [],
    )


def _event_key(ev: dict[str, Any]) -> tuple[str, str, str]:
    return (str(ev.get("at", "")), str(ev.get("reason", "")), str(ev.get("message", "")))


def _reached(run: list[dict[str, Any]]) -> int:
    """How many steps along ``phases.ORDER`` the phases of this run got (a Failed run counts the phase it
    failed in as not done)."""
    track = DELETION_TRACK if any(h.get("phase") in DELETION_TRACK for h in run) else PHASE_ORDER
    indices = [track.index(h["phase"]) for h in run if h.get("phase") in track]
    return max(indices, default=0)


def _took(started: str | None, run: list[dict[str, Any]]) -> str:
    """Seconds from the first record of this run to its latest phase record, by the control plane's clock."""
    import datetime as dt

    if not started or not run:
        return ""
    try:
        span = dt.datetime.fromisoformat(str(run[-1]["at"])) - dt.datetime.fromisoformat(started)
    except (KeyError, ValueError):
        return ""
    return f"{max(span.total_seconds(), 0.0):.0f} s"


def _timeout(cluster: dict[str, Any], timeout_s: float) -> Exception:
    from velyrix import errors

    phase = cluster.get("status", {}).get("phase", "?")
    return errors.VelyrixError(
        f"cluster still in phase {phase} after {timeout_s:g} s", hint="check it later with: velyrix status NAME"
    )
