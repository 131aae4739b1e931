"""Speed of the Figure-2 SGD loop: ms per step, one seed and five stacked seeds.

    PYTHONPATH=. python benchmarks/experiments_speed.py [--steps 2000] [--parameterizations CACO,FAFO]

For each parameterization it times, over the same number of SGD steps
(sampling included, batch 32, seq_len 64):

* ``plain``: a plain NumPy loop of the same procedure for one seed -- one
  vectorized multinomial draw of the batch's counts per step, 2-D arrays,
  forward and backward written out directly (:func:`plain_loop`), the
  baseline of the issue (~0.2 ms/step);
* ``plain-tickets``: the same loop drawing the counts the trainer's way
  (uniform tickets, table look-up, ``bincount``; same distribution), so the
  stacked speed-up can be read with and without the sampler's share;
* ``one``: :func:`numerics.experiments.sgd.train_fig2` with one seed;
* ``five``: ``train_fig2`` with five seeds stacked;

and prints ms/step, the speed-up of ``five`` over five plain single-seed runs
(``5 * plain / five``, and the same with ``plain-tickets``) and over five
``one`` runs.  It also times the matrix products alone of one five-seed step
(:func:`matmul_floor`: the forward and backward products of the output
circuit, each five float64 products of ``50 x 50`` or ``50 x 32`` factors):
no stacked step can be faster than that, so ``5 * plain / floor`` bounds the
speed-up any NumPy float64 implementation of this step can reach (before
sampling and every element-wise operation).  Timings are the best of
``--repeat`` rounds (the four timed in turn in every round); on a shared
machine wall-clock timings are inflated and scattered by the load, and
``--clock cpu`` (process CPU time) gives steadier ratios.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

from numerics.experiments import models, sgd
from numerics.experiments.task_sampling import AUTHORS

V = AUTHORS.T


def plain_loop(parameterization, steps, seed=0, lr=0.01, batch=32, seq_len=64, sampler="multinomial"):
    """One seed, one step at a time: the straightforward NumPy implementation.

    ``sampler="multinomial"``: the counts of a batch from one ``rng.multinomial``
    call (the obvious way); ``"tickets"``: the trainer's sampler (uniform tickets,
    a table look-up and a ``bincount``) written out for one batch."""
    rng = np.random.default_rng(seed)
    p = models.init_params(AUTHORS, parameterization, "uniform", rng)
    probs = AUTHORS.probabilities
    sq = np.sqrt(V)
    table = AUTHORS.ticket_tokens
    rows = np.arange(batch)
    for _ in range(steps):
        cls = rng.integers(0, 4, size=batch)
        q = AUTHORS.query[cls]
        y = AUTHORS.label[cls]
        if sampler == "multinomial":
            counts = rng.multinomial(seq_len - 2, probs[cls]).astype(float)
        else:
            tok = table[cls[:, None], rng.integers(0, AUTHORS.tickets, size=(batch, seq_len - 2))]
            counts = np.bincount((tok + V * rows[:, None]).ravel(),
                                 minlength=batch * V).reshape(batch, V).astype(float)
        counts[rows, q] += 1
        A = p["W_QK"] if "W_QK" in p else p["W_Q"] @ p["W_K"].T
        s = A[q] / sq
        s -= s.max(1, keepdims=True)
        e = counts * np.exp(s)
        a = e / e.sum(1, keepdims=True)
        if "W_OV" in p:
            z = a @ p["W_OV"].T
        else:
            h = a @ p["W_V"].T
            z = h @ p["W_O"].T
        z -= z.max(1, keepdims=True)
        pr = np.exp(z)
        pr /= pr.sum(1, keepdims=True)
        pr[np.arange(batch), y] -= 1
        pr /= batch
        g = {}
        if "W_OV" in p:
            g["W_OV"] = pr.T @ a
            gc = pr @ p["W_OV"]
        else:
            g["W_O"] = pr.T @ h
            gh = pr @ p["W_O"]
            g["W_V"] = gh.T @ a
            gc = gh @ p["W_V"]
        gs = a * (gc - (a * gc).sum(1, keepdims=True)) / sq
        dA = np.zeros((V, V))
        np.add.at(dA, q, gs)
        if "W_QK" in p:
            g["W_QK"] = dA
        else:
            g["W_Q"] = dA @ p["W_K"]
            g["W_K"] = dA.T @ p["W_Q"]
        for k in p:
            p[k] -= lr * g[k]
    return p


def matmul_floor(parameterization, seeds=5, batch=32, repeat=2000, clock=time.perf_counter, dtype=np.float64):
    """Seconds per step of the matrix products alone of one stacked step (``seeds`` runs):
    the logits and the output circuit's gradients, as the trainer computes them (class-major
    activations ``(S, V, B)``, weights ``(S, V, V)`` C-contiguous): 3 products for a collapsed
    output (``W a^T``, ``g^T a``, ``W^T g^T``), 6 for a factorized one; in ``dtype``."""
    rng = np.random.default_rng(0)
    a, aT = rng.random((seeds, batch, V)).astype(dtype), rng.random((seeds, V, batch)).astype(dtype)
    gT = rng.random((seeds, V, batch)).astype(dtype)
    W1, W2 = rng.random((seeds, V, V)).astype(dtype), rng.random((seeds, V, V)).astype(dtype)
    T = (lambda x: x.swapaxes(-1, -2))
    if parameterization[2] == "C":
        def step():
            np.matmul(W1, aT), np.matmul(gT, a), np.matmul(T(W1), gT)
    else:
        def step():
            hT = np.matmul(W1, aT)
            np.matmul(W2, hT), np.matmul(gT, a), np.matmul(T(W2), gT)
            np.matmul(gT, a), np.matmul(T(W1), gT)
    step()

    def steps():
        for _ in range(repeat):
            step()
    return _best_interleaved([steps], 3, clock)[0] / repeat


def _best_interleaved(funs, repeat, clock):
    """Best time of each function over ``repeat`` rounds, the functions interleaved in every
    round so that a burst of load on a shared machine hits all of them alike."""
    best = [np.inf] * len(funs)
    for _ in range(repeat):
        for i, fun in enumerate(funs):
            t0 = clock()
            fun()
            best[i] = min(best[i], clock() - t0)
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="SGD steps per timing (default 2000)")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions, best taken (default 3)")
    parser.add_argument("--parameterizations", default="CACO,CAFO,FACO,FAFO", help="comma-separated list")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall: time.perf_counter (default); cpu: time.process_time, the CPU time of "
                             "this process, less sensitive to other jobs on a loaded machine (BLAS runs "
                             "these 32 x 50 x 50 products on one thread)")
    args = parser.parse_args(argv)
    clock = time.perf_counter if args.clock == "wall" else time.process_time
    steps = args.steps
    K = 100
    print(f"steps per timing: {steps}; {args.clock} clock; load average {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} CPUs")
    print("param   plain ms/step  plain-tickets   one ms/step   five ms/step   5*plain/five"
          "   5*plain-tickets/five   5*one/five   floor ms/step   5*plain/floor")
    for p in args.parameterizations.split(","):
        cfg = sgd.Fig2Config(p, epochs=max(1, steps // K), steps_per_epoch=K, stop="none", init="uniform")
        funs = [lambda: plain_loop(p, steps), lambda: plain_loop(p, steps, sampler="tickets"),
                lambda: sgd.train_fig2(cfg, [1234]), lambda: sgd.train_fig2(cfg, [1234, 1235, 1236, 1237, 1238])]
        t_plain, t_plain_t, t_one, t_five = (t / steps for t in _best_interleaved(funs, args.repeat, clock))
        floor = matmul_floor(p, clock=clock)
        print(f"{p}    {1e3 * t_plain:13.3f}  {1e3 * t_plain_t:13.3f}   {1e3 * t_one:11.3f}   "
              f"{1e3 * t_five:12.3f}   {5 * t_plain / t_five:12.2f}   {5 * t_plain_t / t_five:20.2f}"
              f"   {5 * t_one / t_five:10.2f}   {1e3 * floor:13.3f}   {5 * t_plain / floor:13.2f}")


if __name__ == "__main__":
    main()
