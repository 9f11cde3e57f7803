"""``velyrix volume create|list|write|read``: volumes, and small objects on them encrypted with each volume's
own data key (the twin's storage tier, ``velyrix up``). Objects are read from and written to files
(``-`` for standard input and output)."""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import Any

import typer

from velyrix import errors
from velyrix.cli import customer_keys

volume_app = typer.Typer(help="Volumes and their encrypted objects.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(volume_app, name="volume")


def _client() -> Any:
    from velyrix.cli import client

    return client.Client.from_login()


def resolve(name_or_id: str) -> dict[str, Any]:
    """The volume called or numbered ``name_or_id`` in your tenant."""
    volumes = _client().list_all("/v1/volumes")
    for v in volumes:
        if name_or_id in (v["id"], v["name"]):
            return dict(v)
    known = ", ".join(v["name"] for v in volumes[:20]) or "(none)"
    raise errors.InvalidInputError(f"no volume {name_or_id!r}", hint=f"your volumes: {known} (velyrix volume list)")


@volume_app.command("create")
def create(
    name: str = typer.Argument(..., help="volume name"),
    region: str = typer.Option(..., "--region", help="e.g. us-east-1"),
    tier: str = typer.Option(..., "--tier", help="a storage tier of the catalog, e.g. object"),
    size_tb: float = typer.Option(..., "--size-tb", help="size in decimal TB"),
    cmk: str = typer.Option(None, "--cmk", help="customer key (name or cmk_ id) that wraps the volume's data key"),
) -> None:
    """Create a volume; with --cmk its own AES-256-GCM data key is wrapped by your key."""
    from velyrix.cli import common

    body: dict[str, Any] = {"name": name, "region": region, "tier": tier, "size_tb": size_tb}
    if cmk:
        body["cmk_id"] = customer_keys.resolve(cmk)["id"]
    v = _client().post("/v1/volumes", body)
    under = f", data key wrapped by {cmk}" if cmk else ""
    common.console().print(f"volume {v['id']} ({v['name']}): {v['tier']}, {v['size_tb']} TB{under}", markup=False)


@volume_app.command("list")
def list_volumes(json_out: bool = typer.Option(False, "--json", help="print the volumes as JSON")) -> None:
    """Your volumes."""
    from velyrix.cli import common

    items = _client().list_all("/v1/volumes")
    if json_out:
        common.print_json(items)
        return
    for v in items:
        common.console().print(f"{v['id']}  {v['name']}  {v['tier']}  {v['size_tb']} TB  {v['state']}", markup=False)


@volume_app.command("write")
def write(
    volume: str = typer.Argument(..., help="volume (name or vol_ id)"),
    name: str = typer.Argument(..., help="object name"),
    file: str = typer.Option(..., "--file", help="what to store (- for standard input), up to 1 MiB"),
) -> None:
    """Store an object, encrypted by the storage tier with the volume's data key."""
    from velyrix.cli import common

    data = sys.stdin.buffer.read() if file == "-" else _read(file)
    v = resolve(volume)
    body = {"name": name, "data_b64": base64.b64encode(data).decode()}
    done = _client().request("PUT", f"/v1/volumes/{v['id']}/objects", json_body=body)[0]
    common.console().print(f"{name}: {done['bytes']} bytes written to {v['name']}, encrypted", markup=False)


@volume_app.command("read")
def read(
    volume: str = typer.Argument(..., help="volume (name or vol_ id)"),
    name: str = typer.Argument(..., help="object name"),
    out: str = typer.Option("-", "--out", help="where to write it (- for standard output)"),
) -> None:
    """Read an object back, decrypted with the volume's data key (unwrapped by your key)."""
    v = resolve(volume)
    got = _client().get(f"/v1/volumes/{v['id']}/objects", name=name)
    data = base64.b64decode(got["data_b64"])
    if out == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        Path(out).write_bytes(data)


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise errors.InvalidInputError(f"--file {path}: {exc.strerror or exc}", hint="pass a readable file") from None
