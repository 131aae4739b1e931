r"""Timing of the authors' Figure-2 prediction (expected-count gradient flow on 50x50 matrices).

For every parameterization and ratio eta_QK/eta_OV, integrates the full-matrix gradient flow
(:func:`numerics.experiments.theory.flow_to_losses`, DOP853, rtol 1e-8) from 1e-6 I to the target loss
and prints the predicted relevant attention, the query-token attention, the flow time in SGD steps,
the number of gradient evaluations and the wall time; then the convergence of the prediction
(rtol 1e-8 vs 1e-10). Run::

    python benchmarks/authors_prediction.py [--target-loss 0.1] [--ratios 1,2,5,10,20]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from derivations.core import PARAMETERIZATIONS  # noqa: E402
from numerics.experiments.task_sampling import AUTHORS  # noqa: E402
from numerics.experiments.theory import flow_to_losses  # noqa: E402


def flow_to_loss(P, r, target, **tolerances):
    """The record of one flow from 1e-6 I, with its gradient evaluations and seconds."""
    out = flow_to_losses(AUTHORS, P, r, [target], init="identity", **tolerances)
    return {**out["records"][0], "nfev": out["nfev"], "seconds": out["seconds"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target-loss", type=float, default=0.1)
    ap.add_argument("--ratios", default="1,2,5,10,20")
    a = ap.parse_args()
    ratios = [float(r) for r in a.ratios.split(",")]
    t_all = time.perf_counter()
    worst = 0.0
    print(f"target loss {a.target_loss}; seq_len 64; init 1e-6 I; lr_ov 0.01")
    print("param  ratio  rel.att    query.att  steps        nfev  seconds  |rtol 1e-8 - 1e-10|")
    for P in PARAMETERIZATIONS:
        for r in ratios:
            row = flow_to_loss(P, r, a.target_loss)
            ref = flow_to_loss(P, r, a.target_loss, rtol=1e-10, atol=1e-15)
            dev = abs(row["relevant_attention"] - ref["relevant_attention"])
            worst = max(worst, dev)
            print(f"{P:6} {r:5g}  {row['relevant_attention']:.6f}  {row['self_attention']:.6f}"
                  f"  {row['steps']:11.1f} {row['nfev']:6d}  {row['seconds']:6.3f}   {dev:.1e}")
    print(f"worst tolerance deviation {worst:.1e}; total {time.perf_counter() - t_all:.1f} s "
          "(both tolerances)")


if __name__ == "__main__":
    main()
