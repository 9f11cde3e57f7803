"""``velyrix rollout plan|apply FILE``, ``rollout status|pause|resume|abort NAME`` (through the API of
``velyrix login``, a provider key with ``fleet:operate``) and ``velyrix sim defect COMPONENT VERSION
--effect E``. The HCL file is checked here first (file:line:column, exit code 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from velyrix.cli import common

rollout_app = typer.Typer(help="Staged rollouts of firmware, drivers and inference engines.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    from velyrix.cli.sim_exporter import sim_group

    app.add_typer(rollout_app, name="rollout")
    sim_group(app).command(name="defect")(defect)


def _client() -> Any:
    from velyrix.cli import client as client_mod

    return client_mod.Client.from_login()


def _body(file: Path) -> dict[str, Any]:
    from velyrix import errors
    from velyrix.declarations import rollout as decl
    from velyrix.ops.rollouts import bodies

    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise errors.InvalidInputError(f"cannot read {file}: {exc.strerror or exc}") from None
    specs = decl.loads(text, str(file))
    if len(specs) != 1:
        raise errors.InvalidInputError(f"{file} declares {len(specs)} rollouts; give one per file")
    return bodies.body_of(specs[0])


def _esc(text: Any) -> str:
    from rich.markup import escape

    return escape(str(text))


def _print_plan(plan: dict[str, Any]) -> None:
    from rich.table import Table

    out = common.console()
    also = f" (with {', '.join(plan['also_installs'])})" if plan["also_installs"] else ""
    out.print(
        f"[bold]{_esc(plan['name'])}[/]: {plan['component']} {plan['version']}{also} on {plan['nodes']} nodes, "
        f"at most {plan['max_unavailable_nodes']} down at once, {plan['wave_seconds'] / 60:.0f} min per wave; "
        f"{len(plan['skipped'])} already on it"
    )
    table = Table(title="Waves")
    for col in ("wave", "stage", "nodes", "cluster", "tenant", "window (UTC)", "starts"):
        table.add_column(col)
    for w in plan["waves"]:
        window = f"{w['window_start'][:16]} .. {w['window_end'][11:16]}" if w["window_start"] else "-"
        starts = (w["starts_at"] or "")[:16] or "-"
        table.add_row(
            str(w["index"]), w["stage"], str(len(w["nodes"])), w["cluster"] or "-", w["tenant"] or "-", window, starts
        )
    out.print(table)
    for b in plan["blocks"]:
        out.print(f"[bold red]blocked[/] {b['code']}: {_esc(b['message'])}")
    if not plan["blocks"]:
        out.print("nothing blocks: `velyrix rollout apply` announces the windows to the tenants now")


@rollout_app.command("plan")
def plan(
    file: Path = typer.Argument(..., help="HCL file with one velyrix_rollout."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Waves, nodes per wave, the windows they fall in per tenant, and what blocks."""
    body = _body(file)  # a bad file is refused before any login or request
    result = _client().post("/v1/rollouts/plan", body)
    if json_out:
        common.print_json(result)
    else:
        _print_plan(result)


def _print_status(s: dict[str, Any]) -> None:
    from rich.table import Table

    out = common.console()
    out.print(
        f"[bold]{_esc(s['name'])}[/] {s['component']} {s['version']}: [bold]{s['state']}[/] ({_esc(s['reason'])})"
    )
    table = Table()
    for col in ("wave", "stage", "cluster", "nodes", "upgraded", "finished", "gate"):
        table.add_column(col)
    for w in s["waves"]:
        gate = "-" if w["gate"] is None else ("passed" if w["gate"].get("holds") else "FAILED")
        table.add_row(
            str(w["index"]),
            w["stage"],
            w["cluster"] or "-",
            str(w["nodes"]),
            str(w["upgraded"]),
            "yes" if w["finished"] else "no",
            gate,
        )
    out.print(table)
    if s["halted_at"]:
        h = s["halted_at"]
        failed = h["gate"].get("failed_nodes", {})
        first = next(iter(failed.items()), None)
        why = (
            f"{len(failed)} nodes failed, e.g. {first[0]}: {first[1][0]}"
            if first
            else "; ".join(h["gate"].get("problems", []))
        )
        out.print(f"halted at wave {h['wave']} ({h['stage']}): {_esc(why)}")
    if s["rolled_back_nodes"]:
        out.print(f"rolled back: {len(s['rolled_back_nodes'])} nodes")


@rollout_app.command("apply")
def apply(
    file: Path = typer.Argument(..., help="HCL file with one velyrix_rollout."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Apply the rollout: refused if its plan is blocked; the tenants are told of their windows now."""
    body = _body(file)
    result = _client().post("/v1/rollouts", body)
    if json_out:
        common.print_json(result)
    else:
        _print_status(result)


@rollout_app.command("status")
def status(
    name: str = typer.Argument(..., help="Rollout name or id."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """The rollout's state, waves, gates and rollbacks."""
    result = _client().get(f"/v1/rollouts/{name}")
    if json_out:
        common.print_json(result)
    else:
        _print_status(result)


def _act(name: str, action: str) -> None:
    _print_status(_client().post(f"/v1/rollouts/{name}/actions", {"action": action}))


@rollout_app.command("pause")
def pause(name: str = typer.Argument(..., help="Rollout name or id.")) -> None:
    """Stop between steps (nodes being upgraded finish their step first)."""
    _act(name, "pause")


@rollout_app.command("resume")
def resume(name: str = typer.Argument(..., help="Rollout name or id.")) -> None:
    """Continue a paused rollout where it stopped."""
    _act(name, "resume")


@rollout_app.command("abort")
def abort(name: str = typer.Argument(..., help="Rollout name or id.")) -> None:
    """Stop and roll back every node the rollout upgraded (re-validated, returned)."""
    _act(name, "abort")


def defect(
    component: str = typer.Argument(..., help="Component, e.g. gpu_driver."),
    version: str = typer.Argument(..., help="Version, e.g. 580.95.05."),
    effect: str = typer.Option(..., "--effect", help="xid:79, slow_gemm:0.5 or no_boot."),
) -> None:
    """Ship a bad version in the twin: nodes that install it misbehave (provider key)."""
    from velyrix.fleet.drivers.sim import defects

    defects.parse(component, version, effect)  # bad input: exit 2 before any request
    result = _client().post("/v1/sim/defects", {"component": component, "version": version, "effect": effect})
    common.console().print(f"twin ships {result['component']} {result['version']} with {result['effect']}")
