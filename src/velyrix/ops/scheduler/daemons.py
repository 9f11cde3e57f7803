"""Daemons started by the local Slurm (``local_slurm``): each in its own session with its output under
``log/<name>.out``; ``stop`` ends exactly those (reverse order, SIGTERM then SIGKILL after 15 s), and
``end_leftovers`` the job steps a stopped slurmd leaves behind."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from velyrix import errors

START_TIMEOUT_S = 120.0
"""How long one daemon may take to come up (a loaded 2-core machine starts slurmd slowly)."""


class Daemons:
    """Processes started under ``log_dir``'s owner, by name (see the module doc)."""

    def __init__(self, log_dir: Path, environ: Callable[[], dict[str, str]]) -> None:
        self.log_dir = log_dir
        self.environ = environ
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def spawn(self, name: str, argv: list[str]) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_dir / f"{name}.out", "ab") as log:  # the child keeps its own descriptor
            self.procs[name] = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, env=self.environ(), start_new_session=True
            )

    def wait(self, ready: Callable[[], bool], what: str, timeout_s: float = START_TIMEOUT_S) -> None:
        """Poll ``ready`` until it holds; ExternalToolError when a daemon exits or ``timeout_s`` passes."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise errors.ExternalToolError(
                        f"{name} exited with {proc.returncode} while waiting for {what}: {self.last_words(name)}",
                        hint=f"see {self.log_dir}",
                    )
            if ready():
                return
            time.sleep(0.2)
        raise errors.ExternalToolError(f"timed out waiting for {what}", hint=f"see {self.log_dir}")

    def last_words(self, name: str) -> str:
        """The last line ``name`` wrote to its output (what a daemon says before it exits)."""
        try:
            lines = (self.log_dir / f"{name}.out").read_text(errors="replace").strip().splitlines()
        except OSError:
            return "no output"
        return lines[-1][:300] if lines else "no output"

    def stop(self, names: list[str] | None = None) -> None:
        """Stop ``names`` (default: all, in reverse start order) and forget them."""
        chosen = [n for n in reversed(list(self.procs)) if names is None or n in names]
        for name in chosen:
            if self.procs[name].poll() is None:
                self.procs[name].terminate()
        deadline = time.monotonic() + 15
        for name in chosen:
            proc = self.procs.pop(name)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def running(self, name: str) -> bool:
        proc = self.procs.get(name)
        return proc is not None and proc.poll() is None


def end_leftovers(marker: str) -> None:
    """SIGKILL each ``slurmstepd`` whose environment holds ``marker`` (the job steps of slurmds started here)
    and every process below it (the job's own)."""
    needle, parent, roots = marker.encode() + b"\0", {}, []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            parent[int(proc.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            if stat.split("(", 1)[1].startswith("slurmstepd") and needle in (proc / "environ").read_bytes():
                roots.append(int(proc.name))
        except (OSError, ValueError, IndexError):
            continue  # gone already, or not ours to read

    def below(pid: int) -> bool:
        seen = 0
        while pid > 1 and seen < 64:
            if pid in roots:
                return True
            pid, seen = parent.get(pid, 0), seen + 1
        return False

    for pid in [p for p in parent if below(p)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
