"""Delivering connectivity on the twin: each cluster's edge configuration (``planners.bird_config``)
written to ``<directory>/<cluster>.bird.conf`` (0600: it holds MD5 passwords) and parsed by the real
BIRD 2 (``bird -p -c FILE``, Debian's bird2). A configuration the parser refuses is an
``ExternalToolError`` naming BIRD's own file:line:column message; nothing is reported delivered."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from velyrix import errors
from velyrix.declarations import connectivity_specs as specs
from velyrix.planners import bird_config

BIRD = "bird"


def bird_binary() -> str | None:
    """The path of ``bird`` (BIRD 2), or None where it is not installed."""
    return shutil.which(BIRD) or (str(Path("/usr/sbin/bird")) if Path("/usr/sbin/bird").exists() else None)


@dataclass(frozen=True)
class Delivered:
    """One cluster's edge configuration, parsed by BIRD."""

    cluster: str
    path: Path
    bgp_sessions: int


def check(path: Path) -> None:
    """``bird -p -c path``; ``ExternalToolError`` with BIRD's message when it refuses the file."""
    binary = bird_binary()
    if binary is None:
        raise errors.ExternalToolError("bird (BIRD 2) is not installed", hint="apt-get install bird2")
    done = subprocess.run([binary, "-p", "-c", str(path)], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise errors.ExternalToolError(f"BIRD refused {path}: {(done.stderr or done.stdout).strip()}")


def deliver(conn: specs.ConnectivityFile, directory: Path) -> list[Delivered]:
    """Render, write and parse-check the edge configuration of every cluster with routing."""
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    for cluster in bird_config.clusters_with_routing(conn):
        text = bird_config.render(conn, cluster)
        path = directory / f"{cluster}.bird.conf"
        path.touch(mode=0o600)
        path.write_text(text)
        check(path)
        out.append(Delivered(cluster, path, text.count("\nprotocol bgp ")))
    return out
