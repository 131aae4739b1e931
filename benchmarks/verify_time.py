r"""Wall time of ``numerics.verify`` (quick and full) and of its slowest piece.

Prints one line per run: the settings, the seconds, and the check counts.
Timings on a shared machine are inflated by its load: compare runs made
together. Run::

    python benchmarks/verify_time.py [--full] [--ratios 1e-4,1e4]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from numerics.verify import run_checks, summarize  # noqa: E402


def timed(label, **kw):
    t0 = time.perf_counter()
    checks = run_checks(**kw)
    dt = time.perf_counter() - t0
    s = summarize(checks)
    print(f"{label:<40} {dt:7.1f} s   {s['n_pass']} pass, {s['n_fail']} fail, "
          f"{s['n_not_verifiable']} N/V, {s['n_info']} info")
    return dt


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--full", action="store_true", help="also time the full (default) run")
    p.add_argument("--ratios", default="1e-4,1e4",
                   help="extreme ratios to time with --quick (default 1e-4,1e4)")
    args = p.parse_args(argv)
    run_checks("CACO", quick=True, kinds=["flow"])          # warm-up: imports, generated code
    timed("quick (paper setting, ratio 1)", quick=True)
    for r in args.ratios.split(","):
        timed(f"quick, ratio {float(r):g}", ratios=[float(r)], quick=True)
    timed("quick, m = 1e-6", quick=True, m=1e-6)
    if args.full:
        timed("full (ratios 0.1, 1, 10)")


if __name__ == "__main__":
    main()
