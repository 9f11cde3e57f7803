"""Run every benchmark module (``bench/bench_*.py``) in turn, or the ones named on the command line.

Each module has a ``main()`` that prints its figures; results are recorded by hand in
docs/benchmarks.md with the command, the machine and the date.
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    names = argv or sorted(p.stem for p in here.glob("bench_*.py"))
    failed = 0
    for name in names:
        module = importlib.import_module(f"bench.{name if name.startswith('bench_') else 'bench_' + name}")
        print(f"=== {module.__name__} ===", flush=True)
        start = time.perf_counter()
        try:
            module.main()
        except Exception as exc:  # a failing benchmark must not hide the others
            failed += 1
            print(f"!!! {module.__name__} failed: {type(exc).__name__}: {exc}", flush=True)
        print(f"--- {module.__name__}: {time.perf_counter() - start:.1f} s\n", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
