"""How far a float32 SGD step moves the published Figure-2 results: each run in float64 and in float32.

    PYTHONPATH=. python benchmarks/float32_deviation.py [--fraction 0.1] [--runs CACO,FAFO_ramp] [--json]

For every published Figure-2 run (:data:`numerics.experiments.reproduce.PUBLISHED_RUNS`; its
schedule scaled by ``--fraction``, 1 = the published schedule, with at least one epoch) it trains
the same job twice, ``dtype="float64"`` and ``dtype="float32"`` (same seeds, same batches), measures
both the usual way (float64 measurements of the trained matrices on the same fresh batches) and prints
per run: the largest absolute difference over the 25 heatmap cells (percentage points of the 6400
evaluation sequences, mean over seeds), the separability of both, and per seed the steps trained and
the final loss (mean loss on the evaluation batches) of both. CPU time of each dtype too.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

from numerics.experiments import jobs as jobs_mod
from numerics.experiments.reproduce import PUBLISHED_RUNS, published_jobs


def compare(name, job, fraction):
    """``{name, cpu64, cpu32, heatmap_max_abs, separability, seeds}`` of one published job."""
    config = dict(job["config"])
    config["epochs"] = max(1, round(config["epochs"] * fraction))
    out = {"run": name, "epochs": config["epochs"], "steps_per_epoch": config["steps_per_epoch"]}
    res = {}
    for dtype in ("float64", "float32"):
        t0 = time.process_time()
        res[dtype] = jobs_mod.fig2_job({**job, "config": {**config, "dtype": dtype}})
        out["cpu_" + dtype] = time.process_time() - t0
    summ = {d: jobs_mod.combine_runs(r["runs"]) for d, r in res.items()}
    if summ["float64"]["heatmap"] is not None and summ["float32"]["heatmap"] is not None:
        out["heatmap_max_abs"] = float(np.max(np.abs(np.subtract(summ["float64"]["heatmap"],
                                                                 summ["float32"]["heatmap"]))))
    out["separability"] = [summ[d]["separability"]["mean"] for d in ("float64", "float32")]
    out["seeds"] = [{"seed": a["seed"], "steps": [a["steps"], b["steps"]], "status": [a["status"], b["status"]],
                     "final_loss": [a["final_loss"], b["final_loss"]],
                     "relevant_attention": [a["relevant_attention"], b["relevant_attention"]]}
                    for a, b in zip(res["float64"]["runs"], res["float32"]["runs"])]
    return out


def _line(r):
    hm = r.get("heatmap_max_abs")
    losses = "; ".join(f"{s['seed']}: steps {s['steps'][0]}/{s['steps'][1]} loss {s['final_loss'][0]:.4g}/"
                       f"{s['final_loss'][1]:.4g}" for s in r["seeds"])
    return (f"{r['run']:13} {r['epochs']:5d}x{r['steps_per_epoch']:<4d} heatmap max|d| "
            f"{'n/a' if hm is None else f'{hm:6.3f}'} pp  separability {r['separability'][0]:.4g}/"
            f"{r['separability'][1]:.4g}  CPU {r['cpu_float64']:.0f}/{r['cpu_float32']:.0f} s  {losses}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fraction", type=float, default=1.0, help="fraction of each published schedule")
    parser.add_argument("--runs", default=None, help="comma-separated names (default: every Figure-2 run)")
    parser.add_argument("--json", action="store_true", help="one JSON object per run instead of a line")
    args = parser.parse_args(argv)
    named = dict(published_jobs(shortest_first=True))                  # shortest first
    names = args.runs.split(",") if args.runs else [n for n in named if PUBLISHED_RUNS[n][2] is not None]
    print("float64 / float32 of each published Figure-2 run (same seeds and batches); "
          f"schedules x {args.fraction:g}", flush=True)
    for name in names:
        r = compare(name, named[name], args.fraction)
        print(json.dumps(r) if args.json else _line(r), flush=True)


if __name__ == "__main__":
    main()
