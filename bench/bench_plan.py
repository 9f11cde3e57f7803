"""``velyrix plan`` against the floor of merely parsing the same file, for three files.

- ``examples/acme-pretrain.tf``: one cluster, no workload block (target: at most 2.0x the parse);
- ``examples/acme-405b.tf``: one cluster with a workload block: storage sizing search, data feed and
  the goodput Monte Carlo (target: at most 2.0x);
- a generated file of 100 clusters, each with a workload block and its own node count, model, interval
  and mode (so nothing is planned twice; target: at most 3.0x).

Both are whole processes (what a user waits for), alternated in one run so that machine noise hits
both alike; the figure is the median of per-round ratios.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 15
ROUNDS_100 = 5

MODELS = (  # (model_params, tp, pp) of typical jobs
    (8e9, 8, 1),
    (70e9, 8, 4),
    (405e9, 8, 16),
)


def hundred_clusters() -> str:
    """HCL of 100 velyrix_cluster resources with workload blocks, no two planned alike."""
    out = ['provider "velyrix" { region = "us-east-1" }\n']
    for i in range(100):
        params, tp, pp = MODELS[i % len(MODELS)]
        nodes = 16 * (1 + i % 8) if pp < 16 else 64 * (1 + i % 2)
        out.append(
            f'''
resource "velyrix_cluster" "c{i:03d}" {{
  name       = "tenant-{i:03d}"
  node_type  = "hgx-h200-8g"
  node_count = {nodes}
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
  storage {{
    parallel_fs_tb = {400 + 50 * (i % 13)}
    object_tb      = 2000
  }}
  workload {{
    model_params            = {params:.0f}
    tp                      = {tp}
    pp                      = {pp}
    zero_stage              = 1
    checkpoint_interval_s   = {900 + 60 * i}
    checkpoint_mode         = "{"async" if i % 3 == 0 else "sync"}"
    step_time_s             = {4 + i % 9}
    max_checkpoint_overhead = 0.0{2 + i % 4}
    goodput_target          = 0.9{5 + i % 4}
    keep_checkpoints        = {2 + i % 3}
    promote_every           = {2 + i % 5}
    archive_after_days      = 14
  }}
}}
'''
        )
    return "".join(out)


def _time(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - start


def compare(file: Path, rounds: int, target: float, *flags: str) -> float:
    """Print plan and parse medians and the median per-round ratio for ``file``; returns the ratio."""
    velyrix = [str(Path(sys.executable).parent / "velyrix"), "plan", *flags, str(file)]
    floor = [sys.executable, "-c", f"import hcl2; hcl2.load(open({str(file)!r}))"]
    _time(velyrix), _time(floor)  # warm the page cache and .pyc files
    plan_s, parse_s, ratios = [], [], []
    for _ in range(rounds):
        p = _time(velyrix)
        f = _time(floor)
        plan_s.append(p)
        parse_s.append(f)
        ratios.append(p / f)
    ratio = statistics.median(ratios)
    label = " ".join([file.name, *flags])
    print(f"{label}: velyrix plan median {statistics.median(plan_s) * 1000:.0f} ms over {rounds} runs")
    print(f"{label}: hcl2 parse only median {statistics.median(parse_s) * 1000:.0f} ms over {rounds} runs")
    print(f"{label}: median ratio plan/parse: {ratio:.2f} (target <= {target})")
    return ratio


def main() -> None:
    compare(ROOT / "examples" / "acme-pretrain.tf", ROUNDS, 2.0)
    compare(ROOT / "examples" / "acme-405b.tf", ROUNDS, 2.0)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "hundred-clusters.tf"
        path.write_text(hundred_clusters(), encoding="utf-8")
        compare(path, ROUNDS_100, 3.0, "--json")
        compare(path, ROUNDS_100, 3.0)


if __name__ == "__main__":
    main()
