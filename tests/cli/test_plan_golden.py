"""``velyrix plan --json`` of every example, and the goodput figures of the bench's 100-cluster file, pinned
against goldens recorded by ``python -m tests.cli.test_plan_golden`` (run it only when a plan is meant to
change, and say why in the commit)."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from bench import bench_plan

from ..conftest import EXAMPLES

GOLDEN = Path(__file__).resolve().parent / "golden"
EXAMPLE_FILES = ("acme-405b.tf", "acme-connectivity.tf", "acme-pretrain.tf", "small-h100-k8s.tf")
"""Every example that ``velyrix plan`` plans (rollout-driver-580.tf is ``velyrix rollout plan``'s)."""


def _plan(run: Any, path: Path, *flags: str) -> dict[str, Any]:
    result = run("plan", "--json", *flags, str(path))
    assert result.exit_code == 0, result.stderr
    plan: dict[str, Any] = json.loads(result.stdout)
    plan.pop("file")  # the path as given on the command line
    return plan


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def hundred_summary(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """Per cluster of the 100-cluster file: its goodput figures, and a digest of everything else (the
    sensitivity rows and causes included)."""
    out = []
    for res in plan["resources"]:
        figures = {k: v for k, v in res["goodput"].items() if k not in ("sensitivity", "causes")}
        rest = {k: v for k, v in res.items() if k != "goodput"}
        rest["goodput"] = {k: res["goodput"][k] for k in ("sensitivity", "causes")}
        out.append({"address": res["address"], "goodput": figures, "rest_sha256": _digest(rest)})
    return out


@pytest.mark.parametrize("example", EXAMPLE_FILES)
def test_the_plan_of_each_example_is_the_golden(example: str, velyrix: Any) -> None:
    golden = json.loads((GOLDEN / f"plan_{example}.json").read_text())
    assert _plan(velyrix, EXAMPLES / example) == golden


def test_the_hundred_cluster_plans_are_the_golden(velyrix: Any, tmp_path: Path) -> None:
    path = tmp_path / "hundred.tf"
    path.write_text(bench_plan.hundred_clusters(), encoding="utf-8")
    golden = json.loads((GOLDEN / "plan_hundred_summary.json").read_text())
    assert hundred_summary(_plan(velyrix, path)) == golden


def _record() -> None:  # pragma: no cover - run by hand
    import subprocess
    import tempfile

    def run(*args: str) -> Any:
        proc = subprocess.run([sys.executable, "-m", "velyrix.cli.main", *args], capture_output=True, text=True)

        class R:
            exit_code, stdout, stderr = proc.returncode, proc.stdout, proc.stderr

        return R

    for example in EXAMPLE_FILES:
        text = json.dumps(_plan(run, EXAMPLES / example), indent=1) + "\n"
        (GOLDEN / f"plan_{example}.json").write_text(text)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "hundred.tf"
        path.write_text(bench_plan.hundred_clusters(), encoding="utf-8")
        summary = hundred_summary(_plan(run, path))
    (GOLDEN / "plan_hundred_summary.json").write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    _record()
