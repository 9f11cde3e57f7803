"""``velyrix apply``, ``velyrix destroy`` and ``velyrix status``: converge the declared clusters on a control
plane, Terraform style (diff, confirm, follow the phases)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from velyrix.cli import common, diff_text
from velyrix.cli.apply_follow import event_line, follow, follow_deletion
from velyrix.fleet.hardware import StoredHardware

DIFF_FIELDS = ("node_count", "fabric", "scheduler", "storage", "workload", "acceptance")

APPLY_HELP = """Create or update the clusters declared in FILE on the control plane you are logged in to, then \
follow them through their phases until they are Ready (exit 0) or Failed/Degraded (exit 1).

Examples:

  velyrix apply examples/acme-pretrain.tf

  velyrix apply cluster.tf -auto-approve -var node_count=32
"""


def register(app: typer.Typer) -> None:
    app.command(name="apply", help=APPLY_HELP)(apply)
    app.command(name="destroy")(destroy)
    app.command(name="status")(status_cmd)


def _load(file: Path, var: list[str] | None, var_file: list[Path] | None) -> Any:
    from velyrix.declarations import loader

    return loader.load(file, variables=common.parse_vars(var), var_files=var_file or [])


def diff(body: dict[str, Any], live: dict[str, Any] | None) -> tuple[str, list[tuple[str, Any, Any]]]:
    """``("create"|"update"|"noop", [(field, live, desired)])`` for one cluster body against its live object."""
    if live is None or live.get("desired_state") == "absent" or live["status"]["phase"] == "Deleted":
        return "create", [
            (f, None, diff_text.norm(body.get(f)))
            for f in ("name", "region", "node_type", *DIFF_FIELDS)
            if body.get(f) is not None and diff_text.norm(body.get(f)) != {}
        ]
    spec = live.get("spec") or {}
    changes = [
        (f, spec.get(f), body.get(f)) for f in DIFF_FIELDS if diff_text.norm(spec.get(f)) != diff_text.norm(body.get(f))
    ]
    return ("update" if changes else "noop"), changes


def render_diff(con: Any, address: str, action: str, changes: list[tuple[str, Any, Any]]) -> None:
    sign = {"create": "[green]+[/]", "update": "[yellow]~[/]", "destroy": "[red]-[/]", "noop": " "}[action]
    verb = {
        "create": "will be created",
        "update": "will be updated in-place",
        "destroy": "will be destroyed",
        "noop": "is up to date",
    }[action]
    con.print(f"  {sign} [bold]{address}[/] {verb}")
    for field, old, new in changes:
        if action == "create":
            con.print(f"      [green]+[/] {field} = {common.safe(_hcl(new))}")
        elif isinstance(old, dict) or isinstance(new, dict):
            con.print(f"      [yellow]~[/] {field} {{")
            for key, a, b in diff_text.block_changes(old, new):
                con.print(f"          [yellow]~[/] {key} = {common.safe(_hcl(a))} [dim]->[/] {common.safe(_hcl(b))}")
            con.print("        }")
        else:
            con.print(f"      [yellow]~[/] {field}: {common.safe(_hcl(old))} [dim]->[/] {common.safe(_hcl(new))}")


def _hcl(value: Any) -> str:
    """HCL notation, except the mask of a sensitive value (``cli.state.MASK``), which prints as is."""
    from velyrix.cli import state

    return value if value == state.MASK else diff_text.hcl(value)


def confirm(con: Any, auto_approve: bool, what: str) -> None:
    """Terraform-style confirmation: only 'yes' proceeds."""
    if auto_approve:
        return
    con.print(f"\n[bold]Do you want to {what}?[/]\n  Only 'yes' will be accepted to approve.")
    answer = typer.prompt("  Enter a value", default="", show_default=False)
    if answer.strip() != "yes":
        con.print("Apply cancelled.")
        raise typer.Exit(1)


def reasons(cluster: dict[str, Any]) -> list[str]:
    """The messages of the cluster's failing conditions."""
    return [
        f"{c['type']}: {c['reason']} - {c['message']}"
        for c in cluster["status"].get("conditions", [])
        if c["status"] == "False"
    ]


def render_changes(con: Any, planned: list[Any]) -> None:
    """Each planned change of ``cli.state`` as a diff, then Terraform's summary line."""
    from velyrix.cli import state

    con.print("\nVelyrix will perform the following actions:\n")
    for change in planned:
        if change.action == "replace":
            con.print(f"  [red]-[/]/[green]+[/] [bold]{change.address}[/] must be replaced")
            for f, old, new in change.fields:
                con.print(f"      [yellow]~[/] {f}: {old} [dim]->[/] {new} [red](forces replacement)[/]")
            continue
        fields = [(f, *((state.MASK, state.MASK) if f in change.sensitive else (a, b))) for f, a, b in change.fields]
        render_diff(con, change.address, "destroy" if change.action == "delete" else change.action, fields)
    add, change_n, destroy_n = state.counts(planned)
    con.print(f"\n[bold]Plan:[/] {add} to add, {change_n} to change, {destroy_n} to destroy.")


TARGET_HELP = "Only plan/apply this resource address (repeatable), e.g. velyrix_cluster.training."


def apply(
    file: Path = typer.Argument(
        ...,
        help="HCL file or directory with velyrix_cluster resources, or a plan saved by plan -out.",
        show_default=False,
    ),
    auto_approve: bool = typer.Option(False, "-auto-approve", "--auto-approve", help="Skip the confirmation."),
    var: list[str] = typer.Option(None, "-var", "--var", metavar="NAME=VALUE", help="Set a variable (repeatable)."),
    var_file: list[Path] = typer.Option(None, "-var-file", "--var-file", metavar="FILE", help="A .tfvars file."),
    timeout_s: float = typer.Option(3600.0, "--timeout", help="Seconds to wait for the clusters to settle."),
    target: list[str] = typer.Option(None, "-target", "--target", metavar="ADDRESS", help=TARGET_HELP),
    refresh_only: bool = typer.Option(
        False, "-refresh-only", "--refresh-only", help="Read the live clusters and report drift; change nothing."
    ),
) -> None:
    from velyrix.cli import client as client_mod
    from velyrix.cli import state

    con = common.console()
    saved = state.read_saved(file)
    client = client_mod.Client.from_login()
    live = state.managed(client)
    if saved is not None:
        if var or var_file or target:
            from velyrix import errors

            raise errors.InvalidInputError("a saved plan cannot take -var, -var-file or -target", hint="plan again")
        state.check_saved(saved, live, client.endpoint)
        planned = state.from_saved(saved, live)
    else:
        spec_file = _load(file, var, var_file)
        if refresh_only:
            refresh_report(con, spec_file, live, target or [])
            return
        planned = state.changes(spec_file, live, diff, target or [])
    render_changes(con, planned)
    add, change_n, destroy_n = state.counts(planned)
    if saved is None and add + change_n + destroy_n:
        confirm(con, auto_approve, "perform these actions")
    if not _run(client, planned, con, timeout_s):
        raise typer.Exit(1)
    con.print("\n[green bold]Apply complete.[/]")


def refresh_report(con: Any, spec_file: Any, live: dict[str, dict[str, Any]], targets: list[str]) -> None:
    """``-refresh-only``: what the control plane holds for each managed cluster and where it differs from
    the configuration (changed outside this configuration); nothing is changed."""
    from velyrix.cli import state
    from velyrix.controlplane import specs

    declared = {c.address: specs.to_body(c) for c in spec_file.clusters}
    shown = 0
    for address, cluster in sorted(live.items()):
        if not state.matches(address, targets):
            continue
        shown += 1
        st = cluster["status"]
        con.print(f"  [bold]{address}[/] ({cluster['name']}): {st['phase']}, {cluster['node_count']} nodes")
        body = declared.get(address)
        if body is None:
            con.print("      [yellow]not in the configuration[/] (velyrix apply would destroy it)")
            continue
        _, fields = diff(body, cluster)
        for f, old, new in fields:
            con.print(
                f"      [yellow]~[/] {f}: live {common.safe(_hcl(old))} [dim]/ declared[/] {common.safe(_hcl(new))}"
            )
        for line in reasons(cluster):
            con.print(f"      [red]{line}[/]")
    con.print(
        f"\n[bold]Refresh:[/] {shown} clusters read from the control plane; nothing was changed "
        "(the control plane is the state, so there is nothing to record)."
    )


def _run(client: Any, planned: list[Any], con: Any, timeout_s: float) -> bool:
    """Carry out the planned changes in order; False when a cluster ended Failed or Degraded."""
    failed = False
    for change in planned:
        if change.action in ("delete", "replace") and change.live is not None:
            client.post(f"/v1/clusters/{change.live['id']}/destroy", {"delete_volumes": False})
            con.print(f"\n[bold]{change.address}[/] ({change.live['id']}): destroying")
            follow_deletion(client, change.live, timeout_s, con)
            con.print(f"[green]{change.live['name']}: destroyed[/] (volumes kept)")
        if change.action == "delete":
            continue
        body, live = change.body, change.live
        action = "create" if change.action == "replace" else change.action
        before = 0 if action == "create" or live is None else len(live["status"].get("phase_history") or [])
        cluster: dict[str, Any] | None = client.apply_cluster(body) if action != "noop" else live
        assert cluster is not None
        con.print(f"\n[bold]{change.address}[/] ({cluster['id']}):")
        cluster = follow(
            client,
            cluster["id"],
            since_phases=before if action != "noop" else 0,
            want=("Ready", "Degraded", "Failed"),
            timeout_s=timeout_s,
            con=con,
            seen=(live or {}).get("status", {}).get("events") or [] if action != "create" else [],
        )
        phase = cluster["status"]["phase"]
        if phase == "Ready":
            con.print(f"[green]{body['name']}: Ready[/] - acceptance report: velyrix report acceptance {body['name']}")
        else:
            failed = True
            con.print(f"[red]{body['name']}: {phase}[/]")
            for line in reasons(cluster):
                con.print(f"  [red]{common.safe(line)}[/]")
    return not failed


def destroy(
    file: Path = typer.Argument(..., help="HCL file whose clusters to destroy.", show_default=False),
    auto_approve: bool = typer.Option(False, "-auto-approve", "--auto-approve", help="Skip the confirmation."),
    delete_volumes: bool = typer.Option(False, "--delete-volumes", help="Also delete the clusters' volumes."),
    var: list[str] = typer.Option(None, "-var", "--var", metavar="NAME=VALUE", help="Set a variable (repeatable)."),
    var_file: list[Path] = typer.Option(None, "-var-file", "--var-file", metavar="FILE", help="A .tfvars file."),
    timeout_s: float = typer.Option(3600.0, "--timeout", help="Seconds to wait for the teardown."),
    target: list[str] = typer.Option(None, "-target", "--target", metavar="ADDRESS", help=TARGET_HELP),
) -> None:
    """Destroy the clusters declared in FILE: nodes are drained, sanitized and returned; volumes are kept
    unless --delete-volumes. Resources whose lifecycle sets prevent_destroy are refused."""
    from velyrix.cli import client as client_mod
    from velyrix.cli import state

    con = common.console()
    spec_file = _load(file, var, var_file)
    chosen = [c for c in spec_file.clusters if state.matches(c.address, target or [])]
    state.check_destroy(spec_file, [c.address for c in chosen])
    client = client_mod.Client.from_login()
    targets = []
    for c in chosen:
        live = client.find_cluster(c.name)
        if live is None or live["status"]["phase"] == "Deleted":
            continue
        targets.append(live)
        render_diff(con, c.address, "destroy", [])
    con.print(f"\n[bold]Plan:[/] 0 to add, 0 to change, {len(targets)} to destroy.")
    if not targets:
        return
    confirm(con, auto_approve, "destroy these clusters")
    for live in targets:
        client.post(f"/v1/clusters/{live['id']}/destroy", {"delete_volumes": delete_volumes})
        cluster = follow_deletion(client, live, timeout_s, con)
        con.print(f"[green]{cluster['name']}: destroyed[/] (volumes {'deleted' if delete_volumes else 'kept'})")


def status_cmd(
    name: str = typer.Argument(None, help="A cluster name (default: every cluster).", show_default=False),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Show your clusters and their phases, or one cluster with its conditions and latest events."""
    from rich.table import Table

    from velyrix import errors
    from velyrix.cli import client as client_mod

    client = client_mod.Client.from_login()
    con = common.console()
    if name is None:
        items = client.list_all("/v1/clusters")
        if json_out:
            common.print_json(items)
            return
        table = Table(title="Clusters")
        for col in ("name", "region", "node type", "nodes", "phase", "updated"):
            table.add_column(col)
        for c in items:
            table.add_row(
                c["name"],
                c["region"],
                c["node_type"],
                str(c["node_count"]),
                c["status"]["phase"],
                str(c["updated_at"])[:19],
            )
        con.print(table)
        return
    cluster = client.find_cluster(name)
    if cluster is None:
        raise errors.NotFoundError(kind="cluster", name=name)
    if json_out:
        common.print_json(cluster)
        return
    render_cluster(con, cluster, client.list_all("/v1/nodes", cluster_id=cluster["id"]))


def render_cluster(con: Any, cluster: dict[str, Any], nodes: list[dict[str, Any]]) -> None:
    """The delivered cluster: phase, conditions, nodes per scalable unit, latest events."""
    from collections import Counter

    from rich.table import Table

    st = cluster["status"]
    con.print(
        f"[bold]{cluster['name']}[/] ({cluster['id']}) in {cluster['region']}: "
        f"[bold]{st['phase']}[/], {cluster['node_count']} x {cluster['node_type']}"
    )
    cond = Table(title="Conditions", show_lines=False)
    for col in ("type", "status", "reason", "message"):
        cond.add_column(col)
    for c in st.get("conditions", []):
        cond.add_row(*(common.safe(c[k]) for k in ("type", "status", "reason", "message")))
    con.print(cond)
    if nodes:
        per_su = Counter(StoredHardware.from_dict(n.get("hardware")).su for n in nodes)
        states = Counter(n["provisioning_state"] for n in nodes)
        con.print(
            "Nodes: "
            + ", ".join(f"{v} {k}" for k, v in sorted(states.items()))
            + "; per scalable unit: "
            + ", ".join(f"SU{su}: {v}" for su, v in sorted(per_su.items(), key=lambda x: str(x[0])))
        )
    for ev in (st.get("events") or [])[-5:]:
        con.print(f"  [dim]{ev['at'][:19]} {common.safe(event_line(ev, st.get('phase_history') or []))}[/]")
