"""``velyrix report proactive``: how much of a running twin's failures the control plane caught before their
fault (``velyrix.ops.proactive``, served at ``GET /v1/sim/proactive`` by ``velyrix up``)."""

from __future__ import annotations

from typing import Any

import typer

from velyrix.cli import common


def register(app: typer.Typer) -> None:
    for info in app.registered_groups:
        if info.name == "report" and info.typer_instance is not None:
            info.typer_instance.command(name="proactive")(report_proactive)
            return
    group = typer.Typer(name="report", help="Reports: acceptance, ...", no_args_is_help=True)
    group.command(name="proactive")(report_proactive)
    app.add_typer(group, name="report")


def _pct(share: float | None) -> str:
    return "n/a" if share is None else f"{100.0 * share:.1f}%"


def report_proactive(
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """On `velyrix up --spontaneous-faults`: the twin's failures so far, how many the control plane caught
    before their fault (proactive share), and whether every fault was detected (needs a provider key)."""
    from velyrix.cli import client as client_mod

    body: dict[str, Any] = client_mod.Client.from_login().get("/v1/sim/proactive")
    if json_out:
        common.print_json(body)
        return
    con = common.console()
    con.print(
        f"twin: {body['nodes']} nodes, {body['days']:g} simulated days, seed {body['seed']}\n"
        f"failures on nodes in service: {body['failures']}, detected {body['detected']}"
        f" (median {_secs(body['detection_s']['median'])}, max {_secs(body['detection_s']['max'])} after the fault)\n"
        f"with a precursor: {body['precursor_failures']}, caught before the fault {body['caught_before_fault']}\n"
        f"proactive share (caught before the fault / failures with a precursor): "
        f"[bold]{_pct(body['proactive_share'])}[/]; of all failures: {_pct(body['caught_share_of_all_failures'])}",
        highlight=False,
    )
    for miss in body["missed"]:
        con.print(
            f"[red]not detected[/]: {miss['hostname']} {miss['cause']} ({miss['kind']}) at {miss['fault_s']:.0f} s"
        )


def _secs(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f} s"
