r"""Timing of the theory's ``predict`` at the size of a sweep: 4 parameterizations x 5 ratios x
3 seeds x 3 targets (issue 17 "Speed": under 1 minute on the 2-core development machine).

One flow per (parameterization, ratio, seed) answers all three targets; seed-independent starts
(``identity``; ``authors`` for FACO and CAFO) run one flow for every seed. Prints the time of
each (parameterization, ratio) and the total. Run::

    python benchmarks/predict_speed.py [--init authors] [--ratios 1,2,5,10,20]
        [--target-loss 0.5,0.2,0.1] [--seeds 3]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from derivations.core import PARAMETERIZATIONS  # noqa: E402
from numerics.experiments.predict import predict  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--init", default="authors")
    ap.add_argument("--ratios", default="1,2,5,10,20")
    ap.add_argument("--target-loss", default="0.5,0.2,0.1")
    ap.add_argument("--seeds", type=int, default=3)
    a = ap.parse_args()
    ratios = [float(r) for r in a.ratios.split(",")]
    targets = [float(t) for t in a.target_loss.split(",")]
    t_all = time.perf_counter()
    n = 0
    print(f"init {a.init}; targets {targets}; seeds {a.seeds}")
    print("param  ratio  seconds  relevant attention per seed at the lowest target")
    for P in PARAMETERIZATIONS:
        for r in ratios:
            t0 = time.perf_counter()
            recs = predict([P], [r], targets, seeds=a.seeds, init=a.init)
            n += len(recs)
            low = [x["relevant_attention"] for x in recs if x["target_loss"] == min(targets)]
            print(f"{P:6} {r:5g}  {time.perf_counter() - t0:7.2f}  "
                  + "  ".join("-" if v is None else f"{v:.3f}" for v in low), flush=True)
    print(f"{n} records in {time.perf_counter() - t_all:.1f} s")


if __name__ == "__main__":
    main()
