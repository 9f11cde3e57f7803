"""``velyrix plan`` against the floor of merely parsing the same file, for three files.

- ``examples/acme-pretrain.tf``: one cluster, no workload block (target: at most 2.0x the parse);
- ``examples/acme-405b.tf``: one cluster with a workload block: storage sizing search, data feed and
  the goodput section, whose expected ETTR is a closed form (target: at most 2.0x); for reference, not a
  target, the same with ``--simulate`` (the seeded Monte Carlo, which imports numpy);
- a generated file of 100 clusters, each with a workload block and its own node count, model, interval
  and mode (so nothing is planned twice; target: at most 3.0x).

Both are whole processes (what a user waits for), alternated in one run so that machine noise hits
both alike; ``velyrix plan`` writes to a pipe (``/dev/null``), where its tables are the plain renderer's
(``cli/tables.py``: rich's bytes without rich); for reference, not a target, acme-405b's tables written to a
pseudo-terminal, which rich draws (with colours). The figure is the median of per-round ratios, of wall time
and of CPU time (user + system seconds of the child process, from ``getrusage``: what the machine's load does
not change).

Like with like: both processes load their modules from bytecode. hcl2 and lark have theirs from pip; Velyrix
(an editable install) gets its ``__pycache__`` from ``compileall`` before the first run, as a wheel install
has it, so a ``PYTHONDONTWRITEBYTECODE`` environment does not make ``velyrix plan`` compile its own
sources on every run. The runs get an empty ``VELYRIX_HOME``: a ``velyrix login`` on the machine would make
``plan`` ask a control plane. ``VELYRIX_BENCH_PLAN_ROUNDS`` (15) and ``VELYRIX_BENCH_PLAN_ROUNDS_100`` (5) set
the rounds.
"""

from __future__ import annotations

import compileall
import os
import pty
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = int(os.environ.get("VELYRIX_BENCH_PLAN_ROUNDS", "15"))
ROUNDS_100 = int(os.environ.get("VELYRIX_BENCH_PLAN_ROUNDS_100", "5"))

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


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(cmd: list[str], env: dict[str, str], terminal: bool = False) -> tuple[float, float]:
    """(wall s, CPU s) of one run of ``cmd``, its stdout a pipe to /dev/null or (``terminal``) a pseudo-terminal
    read to the end."""
    cpu = _children_cpu_s()
    start = time.perf_counter()
    if terminal:
        _on_terminal(cmd, env)
    else:
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=ROOT, env=env)
    return time.perf_counter() - start, _children_cpu_s() - cpu


def _on_terminal(cmd: list[str], env: dict[str, str]) -> None:
    leader, follower = pty.openpty()
    proc = subprocess.Popen(cmd, stdout=follower, cwd=ROOT, env={**env, "COLUMNS": "120", "TERM": "xterm-256color"})
    os.close(follower)
    try:
        while os.read(leader, 65536):
            pass
    except OSError:  # EIO: the process closed the terminal
        pass
    os.close(leader)
    if proc.wait() != 0:
        raise subprocess.CalledProcessError(proc.returncode, cmd)


def compare(file: Path, rounds: int, target: float | None, *flags: str, terminal: bool = False) -> float:
    """Print plan and parse medians (wall and CPU) and the median per-round ratios for ``file`` (``terminal``:
    the plan written to a pseudo-terminal); returns the wall ratio."""
    velyrix = [str(Path(sys.executable).parent / "velyrix"), "plan", *flags, str(file)]
    floor = [sys.executable, "-c", f"import hcl2; hcl2.load(open({str(file)!r}))"]
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "VELYRIX_HOME": home}
        _time(velyrix, env, terminal), _time(floor, env)  # warm the page cache
        runs = [(_time(velyrix, env, terminal), _time(floor, env)) for _ in range(rounds)]
    label = " ".join([file.name, *flags] + (["(on a terminal)"] if terminal else []))
    goal = f"target <= {target}" if target else "for reference, no target"
    for what, i in (("wall", 0), ("CPU", 1)):
        plan_s = statistics.median(p[i] for p, _ in runs)
        parse_s = statistics.median(f[i] for _, f in runs)
        ratio = statistics.median(p[i] / f[i] for p, f in runs)
        print(
            f"{label}: {what}: velyrix plan median {plan_s * 1000:.0f} ms, hcl2 parse only median "
            f"{parse_s * 1000:.0f} ms over {rounds} runs; median ratio plan/parse {ratio:.2f} ({goal})"
        )
    return statistics.median(p[0] / f[0] for p, f in runs)


def main() -> None:
    compileall.compile_dir(str(ROOT / "src" / "velyrix"), quiet=1)  # bytecode, as an installed wheel has it
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    compare(ROOT / "examples" / "acme-pretrain.tf", ROUNDS, 2.0)
    compare(ROOT / "examples" / "acme-405b.tf", ROUNDS, 2.0)
    compare(ROOT / "examples" / "acme-405b.tf", ROUNDS, None, "--simulate")  # what the default was
    compare(ROOT / "examples" / "acme-405b.tf", ROUNDS, None, terminal=True)  # rich's tables, with colours
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "hundred-clusters.tf"
        path.write_text(hundred_clusters(), encoding="utf-8")
        compare(path, ROUNDS_100, 3.0, "--json")
        compare(path, ROUNDS_100, 3.0)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
