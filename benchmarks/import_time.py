"""Time of ``import fnx`` in a fresh interpreter, and whether it imported CuPy.

    python3 benchmarks/import_time.py [runs]

Each run starts a new Python process (so nothing is cached in ``sys.modules``) and times the
import alone; prints the median and the fastest run. ``import fnx`` must not import CuPy: the GPU
backend is found when the first array is made.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys

CODE = ("import time, sys; t = time.perf_counter(); import fnx; "
        "print(time.perf_counter() - t, 'cupy' in sys.modules)")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def one_run() -> tuple[float, bool]:
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    seconds, has_cupy = out.stdout.split()
    return float(seconds), has_cupy == "True"


def main(runs: int = 5):
    results = [one_run() for _ in range(runs)]
    times = [t for t, _ in results]
    print(f"import fnx: median {statistics.median(times) * 1e3:.0f} ms, fastest "
          f"{min(times) * 1e3:.0f} ms over {runs} fresh interpreters; "
          f"imports CuPy: {any(c for _, c in results)}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
