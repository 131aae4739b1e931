"""Throughput of a sweep on one worker: SGD steps per second per run, stacked against plain loops.

    PYTHONPATH=. python benchmarks/sweep_throughput.py [--steps 500] [--parameterizations CACO,FAFO]
                                                      [--dtypes float64,float32]

For each parameterization, a sweep of 6 ratios (1, 2, 5, 10, 20, 50; ``lr_ov``
0.01) x 5 seeds = 30 runs, every run trained for ``--steps`` steps (no stop
rule, so every run costs the same; batch 32, seq_len 64, the sweep's 100 steps
per epoch), one process, for each step dtype of ``--dtypes`` (float64, float32).  It times

* ``plain``: the plain single-run NumPy loop of the same procedure
  (``benchmarks/experiments_speed.py``'s :func:`plain_loop`, multinomial
  counts, float64: the reference of every dtype), one run after the other (timed on 5
  runs, per run-step);
* ``per-ratio``: the layout of the sweep before stacking the ratios, one
  :func:`numerics.experiments.sgd.train_fig2` of 5 stacked seeds per ratio;
* ``stacked``: all 30 runs in one :func:`numerics.experiments.stack.train_stack`
  (the sweep's jobs stack every ratio of a block of three seeds: 18 runs here; see ``--runs-per-job``);
* ``floor``: the matrix products alone of one 30-run step, in the dtype
  (``experiments_speed.matmul_floor``);

and prints run-steps per second (wall clock and process CPU time: on a shared
machine the CPU time is the steadier figure) and the speed-ups over ``plain``.
Timings are the best of ``--repeat`` rounds, the variants interleaved.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from experiments_speed import matmul_floor, plain_loop  # noqa: E402

from numerics.experiments import sgd, stack  # noqa: E402

RATIOS = (1.0, 2.0, 5.0, 10.0, 20.0, 50.0)
SEEDS = (1234, 1235, 1236, 1237, 1238)
LR_OV = 0.01


def _timed(fun):
    """(wall seconds, CPU seconds) of one call."""
    w0, c0 = time.perf_counter(), time.process_time()
    fun()
    return time.perf_counter() - w0, time.process_time() - c0


def variants(parameterization, steps, runs_per_job, dtype="float64"):
    """``{name: (function, run-steps it trains)}`` of one parameterization, the step in ``dtype``."""
    k = min(100, steps)
    base = sgd.Fig2Config(parameterization, lr_qk=LR_OV, lr_ov=LR_OV, epochs=-(-steps // k), steps_per_epoch=k,
                          stop="none", max_steps=steps,
                          **({"dtype": dtype} if dtype != "float64" else {}))   # (runs on code without dtype)
    pairs = [(r, s) for s in SEEDS for r in RATIOS]              # seed-major: a job's runs are contiguous
    configs = [replace(base, lr_qk=r * LR_OV) for r, _ in pairs]
    seeds = [s for _, s in pairs]

    def plain():
        for s in SEEDS:
            plain_loop(parameterization, steps, seed=s, lr=LR_OV)

    def per_ratio():
        for r in RATIOS:
            sgd.train_fig2(replace(base, lr_qk=r * LR_OV), list(SEEDS))

    def stacked():
        for i in range(0, len(pairs), runs_per_job):
            stack.train_stack(configs[i:i + runs_per_job], seeds[i:i + runs_per_job])
    n = len(pairs) * steps
    return {"plain": (plain, len(SEEDS) * steps), "per-ratio": (per_ratio, n), "stacked": (stacked, n)}


def measure(parameterization, steps, repeat, runs_per_job, dtypes=("float64",)):
    """``{name: (wall run-steps/s, CPU run-steps/s)}``, best of ``repeat`` interleaved rounds: ``plain``
    once, ``per-ratio`` and ``stacked`` of every dtype (named ``"stacked float32"``, ...)."""
    funs = {}
    for dtype in dtypes:
        for name, fun in variants(parameterization, steps, runs_per_job, dtype).items():
            if name == "plain":
                funs.setdefault(name, fun)
            else:
                funs[f"{name} {dtype}"] = fun
    best = {name: [np.inf, np.inf] for name in funs}
    for _ in range(repeat):
        for name, (fun, _) in funs.items():
            wall, cpu = _timed(fun)
            best[name] = [min(best[name][0], wall), min(best[name][1], cpu)]
    return {name: (funs[name][1] / best[name][0], funs[name][1] / best[name][1]) for name in funs}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500, help="SGD steps per run (default 500)")
    parser.add_argument("--repeat", type=int, default=2, help="rounds, best taken (default 2)")
    parser.add_argument("--parameterizations", default="CACO,CAFO,FACO,FAFO", help="comma-separated list")
    parser.add_argument("--dtypes", default="float64,float32", help="step dtypes (default float64,float32)")
    parser.add_argument("--runs-per-job", type=int, default=30,
                        help="runs per stack in 'stacked' (default 30: all; the sweep's jobs stack 18: "
                             "3 seeds x 6 ratios)")
    args = parser.parse_args(argv)
    dtypes = tuple(args.dtypes.split(","))
    print(f"6 ratios x 5 seeds, {args.steps} steps per run, one process; best of {args.repeat}; "
          f"{args.runs_per_job} runs per stack; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print("run-steps per second (wall / CPU); speed-up over plain (the float64 single-run loop; wall / CPU); "
          "floor: products alone of a 30-run step in the dtype, per run-step (CPU)")
    print(f"{'param':6} {'dtype':7} {'plain':>15} {'per-ratio':>15} {'stacked':>15} {'per-ratio x':>13}"
          f" {'stacked x':>13} {'floor x':>9} {'stacked/floor':>13}")
    for p in args.parameterizations.split(","):
        m = measure(p, args.steps, args.repeat, args.runs_per_job, dtypes)
        for dtype in dtypes:
            floor = matmul_floor(p, seeds=30, repeat=500, clock=time.process_time,
                                 dtype=np.dtype(dtype)) / 30                         # CPU s per run-step
            row = {"plain": m["plain"], "per-ratio": m[f"per-ratio {dtype}"], "stacked": m[f"stacked {dtype}"]}
            ratio = (lambda name: f"{row[name][0] / m['plain'][0]:5.2f}/{row[name][1] / m['plain'][1]:5.2f}")
            print(f"{p:6} {dtype:7} " + " ".join(f"{row[k][0]:7.0f}/{row[k][1]:7.0f}"
                                                 for k in ("plain", "per-ratio", "stacked"))
                  + f" {ratio('per-ratio'):>13} {ratio('stacked'):>13} {1 / floor / m['plain'][1]:9.2f}"
                  f" {1 / floor / row['stacked'][1]:13.2f}")


if __name__ == "__main__":
    main()
