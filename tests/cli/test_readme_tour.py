"""The README's tour works as written: every shell variable it uses is set by it first (``$KEY`` from
``admin create-tenant``), every file it writes goes to ``$T`` (not into the repository), and the lines that
write files and create the first key run as shown and leave the repository untouched."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from fastapi.testclient import TestClient

ROOT = Path(__file__).resolve().parents[2]
ENVIRONMENT = {"T", "VELYRIX_HOME"}
"""What the tour's introduction has the reader set before the first command."""
WRITES = re.compile(r"(?:--picture|--topology-out|--slurm-topology|--out)\s+(\S+)|(?<![&2])>\s*(\S+)")


def tour_lines() -> list[str]:
    """The commands of the README's ``sh`` blocks, continuation lines joined, comments dropped."""
    blocks = re.findall(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    lines = []
    for block in blocks:
        for line in block.replace("\\\n", " ").splitlines():
            code = re.sub(r"\s+#.*$", "", line).strip()
            if code:
                lines.append(code)
    return lines


def test_every_variable_the_tour_uses_is_set_first() -> None:
    known = set(ENVIRONMENT)
    for line in tour_lines():
        used = set(re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", line)) - {"ARGV"}
        assigned = set(re.findall(r"(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)=", line))
        for name in used - known - assigned:
            raise AssertionError(f"the README uses ${name} before setting it: {line}")
        known |= assigned


def test_the_tour_writes_its_files_into_t_only() -> None:
    for line in tour_lines():
        for match in WRITES.finditer(line):
            target = (match.group(1) or match.group(2)).strip('"')
            if target.startswith("/tmp/") or target == "/dev/null" or target.startswith("&"):
                continue
            assert target.startswith("$T/"), f"the README writes {target} outside $T: {line}"


def test_the_file_writing_and_first_key_lines_run_as_written(tmp_path: Path) -> None:
    lines = [ln for ln in tour_lines() if '"$T/' in ln and ln.startswith(".venv/bin/velyrix fabric")]
    lines += [ln for ln in tour_lines() if ln.startswith("KEY=$(")]
    assert len(lines) == 3, lines
    t_dir, home = tmp_path / "t", tmp_path / "home"
    t_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("VELYRIX_")}
    env |= {"T": str(t_dir), "VELYRIX_HOME": str(home)}
    before = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout
    script = "set -e\n" + "\n".join(lines) + '\nprintf "%s" "$KEY" > "$T/key"\n'
    run = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    after = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout
    assert after == before  # nothing written into the repository
    assert {p.name for p in t_dir.iterdir()} >= {"pod.svg", "topology.json", "topology.conf"}
    key = (t_dir / "key").read_text()
    assert key.startswith("vlx_") and "\n" not in key
    from velyrix.controlplane.api import create_app

    app = create_app(f"sqlite:///{home / 'velyrix.db'}")
    got = TestClient(app).get("/v1/tenants", headers={"Authorization": f"Bearer {key}"})
    assert got.status_code == 200 and [t["name"] for t in got.json()["items"]] == ["acme"]
