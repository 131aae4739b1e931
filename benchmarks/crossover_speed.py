r"""Timing of where attention goes (issue 27 "Done when"): ``boundary`` for CACO on one setting
and one loss under 5 s, a 20 x 20 phase-diagram grid (self minus relevant share over
(s/m, Lambda)) under 2 minutes on the 2-core development machine.

Prints wall and process (CPU) seconds of each: on a shared machine the CPU time is the one that
does not depend on the other processes. Run::

    python benchmarks/crossover_speed.py
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from numerics.dynamics import boundary, master_shares  # noqa: E402


def timed(label, fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    print(f"{label}: {time.perf_counter() - w:.2f} s wall, {time.process_time() - c:.2f} s CPU")
    return out


def grid():
    m, n, R = 10.0, 40.0, 5.0
    frac, lams = np.linspace(0.05, 1.25, 20), np.geomspace(1e-3, 1e3, 20)
    return [[float(np.subtract(*[master_shares(lam, s=f * m, m=m, n=n, R=R)[k]
                                 for k in ("self_attention", "relevant_attention")]))
             for f in frac] for lam in lams]


def main():
    [rec] = timed("boundary (query-copies s=2, R=5, m=5, n=10, M=4, b=2; L=0.2)",
                  lambda: boundary(s=2, m=5, n=10, R=5, target_loss=0.2, M=4, b=2))
    print(f"  crossover_ratio {rec['crossover_ratio']:.6g}, crossover_lambda {rec['crossover_lambda']:.6g}")
    timed("20 x 20 phase-diagram grid (m=10, n=40, R=5)", grid)


if __name__ == "__main__":
    main()
