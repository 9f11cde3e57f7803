"""Running Slurm's tools: one small wrapper that sets ``SLURM_CONF``, times out, and turns failures
into ``ExternalToolError`` with the tool's own message. Every module here talks to Slurm through it, so
tests can point it at a twin and users at ``/etc/slurm``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field

from velyrix import errors

DEFAULT_CONF = "/etc/slurm/slurm.conf"
"""Where the Slurm tools look for their configuration when SLURM_CONF is not set (Debian's slurm-wlm)."""
NO_CONFIG = "Could not establish a configuration source"
"""What the Slurm tools print when they find neither a slurm.conf nor a configless slurmctld."""
CONFIG_HINT = (
    "pass --slurm-conf PATH (or set SLURM_CONF) to the cluster's slurm.conf, on a host that reaches "
    "slurmctld and slurmdbd; `velyrix scheduler config` writes one for a declared cluster"
)


@dataclass
class Slurm:
    """Where Slurm's client tools are and which slurm.conf they read.

    ``conf``: path of slurm.conf (None: the tools' default, ``/etc/slurm/slurm.conf``).
    ``bin_dir``: directory of sacctmgr, sacct, ... (None: ``PATH``). ``timeout_s``: per command.
    """

    conf: str | None = None
    bin_dir: str | None = None
    timeout_s: float = 60.0
    env: dict[str, str] = field(default_factory=dict)
    log: list[list[str]] = field(default_factory=list)
    """Every command run, in order (``apply`` shows them; tests read them)."""

    def environ(self) -> dict[str, str]:
        """The environment the tools run with."""
        env = dict(os.environ)
        if self.conf:
            env["SLURM_CONF"] = self.conf
        env.update(self.env)
        return env

    def binary(self, tool: str) -> str:
        """Absolute path of ``tool``; ExternalToolError when it is not installed."""
        path = os.path.join(self.bin_dir, tool) if self.bin_dir else shutil.which(tool)
        if not path or not os.path.exists(path):
            raise errors.ExternalToolError(
                f"{tool} not found", hint="install Slurm's client tools (Debian: slurm-client)"
            )
        return path

    def run(self, tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run ``tool args...``; returns the completed process. ``check``: raise on a non-zero exit."""
        cmd = [self.binary(tool), *args]
        env = self.environ()
        conf = env.get("SLURM_CONF")
        if conf and not os.path.isfile(conf):
            # The Slurm tools would retry a missing slurm.conf for 60 s before failing.
            raise errors.InvalidInputError(f"slurm.conf not found: {conf}", hint=CONFIG_HINT)
        self.log.append([tool, *args])
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=self.timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise errors.ExternalToolError(
                f"{tool} timed out after {self.timeout_s:.0f} s",
                hint="is slurmctld (or slurmdbd) running and reachable?",
            ) from exc
        if check and proc.returncode != 0 and NO_CONFIG in proc.stderr:
            raise errors.ExternalToolError(
                f"{tool} found no Slurm configuration (no {conf or DEFAULT_CONF} and no configless DNS SRV record)",
                hint=CONFIG_HINT,
            )
        if check and proc.returncode != 0:
            msg = (proc.stderr.strip() or proc.stdout.strip() or f"exit {proc.returncode}").splitlines()
            raise errors.ExternalToolError(
                f"{tool} {' '.join(args[:3])} failed: {' '.join(msg[-3:])}",
                hint="check that slurmctld and slurmdbd are up (scontrol ping)",
            )
        return proc

    def out(self, tool: str, *args: str) -> str:
        """Standard output of a successful ``tool args...``."""
        return self.run(tool, *args).stdout


def parse_pipe(text: str) -> list[dict[str, str]]:
    """Rows of ``-P`` (parsable, '|'-separated, header first) output as dicts keyed by the header."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return []
    header = lines[0].split("|")
    return [dict(zip(header, ln.split("|"), strict=False)) for ln in lines[1:]]
