"""``velyrix plan examples/acme-pretrain.tf`` against the floor of merely parsing the same file.

Both are whole processes (what a user waits for), alternated in one run so that machine noise hits
both alike; the figure is the median of per-round ratios. Target: at most 2.0.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILE = ROOT / "examples" / "acme-pretrain.tf"
ROUNDS = 15


def _time(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - start


def main() -> None:
    velyrix = [str(Path(sys.executable).parent / "velyrix"), "plan", str(FILE)]
    floor = [sys.executable, "-c", f"import hcl2; hcl2.load(open({str(FILE)!r}))"]
    _time(velyrix), _time(floor)  # warm the page cache and .pyc files
    plan_s, parse_s, ratios = [], [], []
    for _ in range(ROUNDS):
        p = _time(velyrix)
        f = _time(floor)
        plan_s.append(p)
        parse_s.append(f)
        ratios.append(p / f)
    print(f"velyrix plan: median {statistics.median(plan_s) * 1000:.0f} ms over {ROUNDS} runs")
    print(f"hcl2 parse only: median {statistics.median(parse_s) * 1000:.0f} ms over {ROUNDS} runs")
    print(f"median ratio plan/parse: {statistics.median(ratios):.2f} (target <= 2.0)")


if __name__ == "__main__":
    main()
