"""``velyrix audit``: checkpoints, log copies, verification of the log and of inclusion proofs.

The checkpoints this client has seen are kept in ``$VELYRIX_HOME/audit/checkpoints.jsonl`` (one signed
document a line, with the endpoint); each new one is checked for consistency with the last one first.
The audit key is pinned on first use (``$VELYRIX_HOME/audit/key.json``) unless ``--public-key`` is given.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from velyrix.cli import audit_forward, common

group = typer.Typer(
    name="audit", help="The tamper-evident audit log: checkpoints, copies, proofs.", no_args_is_help=True
)
PUBLIC_KEY = typer.Option(None, "--public-key", help="Pin the audit key (base64, GET /v1/audit-log/key).")


def register(app: typer.Typer) -> None:
    group.command(name="checkpoint")(checkpoint)
    group.command(name="export")(export)
    group.command(name="verify")(verify)
    group.command(name="prove")(prove)
    group.command(name="verify-proof")(verify_proof)
    group.command(name="forward")(audit_forward.forward)
    app.add_typer(group, name="audit")


def _console(stderr: bool = False) -> Any:
    """A console that never wraps hashes and ids (tests and scripts grep them)."""
    con = common.console(stderr=stderr)
    con.soft_wrap = True
    return con


def _state_dir() -> Path:
    from velyrix import settings

    return settings.load().paths.home / "audit"


def _seen(endpoint: str) -> list[dict[str, Any]]:
    path = _state_dir() / "checkpoints.jsonl"
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r["checkpoint"] for r in rows if r.get("endpoint") == endpoint]


def _remember(endpoint: str, document: dict[str, Any]) -> None:
    import os

    path = _state_dir() / "checkpoints.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a") as fh:
        fh.write(json.dumps({"endpoint": endpoint, "checkpoint": document}, sort_keys=True) + "\n")


def _pinned_key(client: Any, given: str | None) -> str:
    """``given``, else the key pinned for this endpoint, else the server's (pinned now: trust on first use)."""
    if given:
        return given
    path = _state_dir() / "key.json"
    pinned = json.loads(path.read_text()) if path.exists() else {}
    if client.endpoint not in pinned:
        pinned[client.endpoint] = client.get("/v1/audit-log/key")["public_key"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(pinned, sort_keys=True))
    return str(pinned[client.endpoint])


def _take_checkpoint(client: Any, key: str) -> dict[str, Any]:
    """A new checkpoint, checked (signature, consistency with the last one seen) and remembered."""
    from velyrix import errors
    from velyrix.controlplane.audit import merkle, verify

    document = client.post("/v1/audit-log/checkpoints", {})
    bad = verify.check_checkpoints([document], key)
    if bad:
        raise errors.VelyrixError(f"the server's checkpoint is not valid: {bad[0].message}")
    seen = _seen(client.endpoint)
    if seen:
        old, new = seen[-1]["report"], document["report"]
        first, second = int(old["tree_size"]), int(new["tree_size"])
        proof: list[str] = []
        if 0 < first < second:
            proof = client.get("/v1/audit-log/proofs/consistency", first=first, second=second)["proof"]
        ok = first == 0 or merkle.verify_consistency(
            first,
            second,
            bytes.fromhex(old["root_hash"]),
            bytes.fromhex(new["root_hash"]),
            [bytes.fromhex(p) for p in proof],
        )
        if not ok:
            raise errors.VelyrixError(
                f"the log of {second} leaves is not an extension of the one of {first} leaves seen before: "
                "the history was rewritten",
                hint="run: velyrix audit verify (names the first missing or altered event)",
            )
    _remember(client.endpoint, document)
    return dict(document)


def checkpoint(public_key: str = PUBLIC_KEY) -> None:
    """Ask for a signed checkpoint now, check it extends the last one seen, and remember it."""
    from velyrix.cli import client as client_mod

    client = client_mod.Client.from_login()
    body = _take_checkpoint(client, _pinned_key(client, public_key))["report"]
    _console().print(f"checkpoint: {body['tree_size']} events, root {body['root_hash']} at {body['timestamp']}")


def _live_entries(client: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    start: int | None = 0
    while start is not None:
        page = client.get("/v1/audit-log/entries", start=start, limit=1000)
        items.extend(page["items"])
        start = page["next_start"]
    return items


def export(out: Path = typer.Option(..., "--out", help="Where to write the log copy (JSON lines).")) -> None:
    """Write a copy of the log (every leaf the key may see, with its event) to ``--out``."""
    from velyrix.cli import client as client_mod

    entries = _live_entries(client_mod.Client.from_login())
    out.write_text("".join(json.dumps(e, sort_keys=True) + "\n" for e in entries))
    _console(stderr=True).print(f"wrote {len(entries)} leaves to {out}")


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    from velyrix import errors

    out = []
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise errors.InvalidInputError(f"cannot read {path}: {exc.strerror}") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise errors.InvalidInputError(
                f"{path}:{n}:{exc.colno}: not JSON ({exc.msg})",
                hint="write a copy with: velyrix audit export --out FILE",
            ) from None
    return out


def verify(
    log_copy: Path = typer.Option(
        None, "--log", help="Verify this copy (velyrix audit export) instead of the live log."
    ),
    public_key: str = PUBLIC_KEY,
) -> None:
    """Check the log against the checkpoints this client saw; name the first missing or altered event.
    Exit 0 when it holds, 1 when not."""
    from velyrix.cli import client as client_mod
    from velyrix.controlplane.audit import verify as verify_mod

    client = client_mod.Client.from_login()
    key = _pinned_key(client, public_key)
    seen = _seen(client.endpoint)
    con = _console()
    if not seen:
        seen = [_take_checkpoint(client, key)]
        con.print("[yellow]no checkpoint seen before: took one now (it vouches only for the log as it is)[/]")
    entries = _read_jsonl(log_copy) if log_copy else _live_entries(client)
    result = verify_mod.check(entries, seen, key)
    if result.ok:
        con.print(f"[green]log holds[/]: {result.checked} events match {len(seen)} signed checkpoints")
        return
    first = result.first
    assert first is not None
    con.print(f"[red]TAMPERED[/]: {first.message}")
    for more in result.findings[1:6]:
        con.print(f"  also: {more.message}")
    raise typer.Exit(1)


def prove(
    event_id: str = typer.Argument(..., help="Audit event id (aud_...).", show_default=False),
    out: Path = typer.Option(None, "--out", help="Write the proof here (default: stdout)."),
) -> None:
    """Fetch the inclusion proof of an event with a signed checkpoint (verify it offline: verify-proof)."""
    from velyrix.cli import client as client_mod

    bundle = client_mod.Client.from_login().get(f"/v1/audit-log/proofs/inclusion/{event_id}")
    if out is None:
        common.print_json(bundle)
        return
    out.write_text(json.dumps(bundle, indent=2, sort_keys=True))
    _console(stderr=True).print(f"proof of {event_id} (leaf {bundle['leaf_index']}) written to {out}")


def verify_proof(
    file: Path = typer.Argument(..., help="A proof written by `velyrix audit prove`.", show_default=False),
    public_key: str = PUBLIC_KEY,
) -> None:
    """Verify an inclusion proof offline (no server): exit 0 when valid, 1 when not."""
    from velyrix import errors
    from velyrix.controlplane.audit import verify as verify_mod

    try:
        bundle = json.loads(file.read_text())
    except (OSError, ValueError) as exc:
        raise errors.InvalidInputError(
            f"cannot read {file}: {exc}", hint="write one with: velyrix audit prove ID --out FILE"
        ) from None
    ok, reason = verify_mod.check_inclusion(bundle, public_key)
    con = _console()
    if ok:
        con.print(
            f"[green]valid[/]: {reason}" + ("" if public_key else " [yellow](key not pinned: use --public-key)[/]")
        )
        return
    con.print(f"[red]INVALID[/]: {reason}")
    raise typer.Exit(1)
