r"""The expected-count prediction against plain SGD on sampled sequences (a spot check).

SGD as in the authors' notebooks (batch 32, seq_len 64, fresh batch every step, rates
``lr_ov = 0.01`` and ``ratio * 0.01``, no momentum), on the same position-free model
(:class:`numerics.model.TaskModel` with the sampled count vectors), from ``1e-6 I``,
until the mean training loss over the last 100 steps is <= the target; then the relevant
attention averaged over 50 fresh batches, next to :func:`numerics.experiments.theory.flow_to_losses`.
The full comparison (seeds, intervals, every ratio) is the sweep of ``numerics.experiments``;
this script is the quick independent check of the prediction. Run::

    python benchmarks/authors_prediction_vs_sgd.py CACO 1,20 [--target-loss 0.1] [--seed 0]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from numerics.experiments import theory  # noqa: E402
from numerics.experiments.task_sampling import AUTHORS, theory_instance  # noqa: E402
from numerics.model import TaskInstance, TaskModel  # noqa: E402


def sample(rng, batch=32, seq_len=64):
    probs = AUTHORS.probabilities
    cls = rng.integers(0, AUTHORS.K, size=batch)
    counts = np.stack([rng.multinomial(seq_len - 2, probs[k]) for k in cls]).astype(float)
    q, y = AUTHORS.query[cls], AUTHORS.label[cls]
    counts[np.arange(batch), q] += 1.0          # the query attends to itself
    return counts, q, y


def model_of(P, ratio, counts, query, label, lr_ov=0.01):
    """The full-matrix model of the authors' task on the count vectors ``counts``."""
    E = theory_instance(AUTHORS, 64).embeddings
    inst = TaskInstance(E, counts, query, label, AUTHORS.n_out, AUTHORS.relevant, score_scale=AUTHORS.score_scale,
                        h_QK=AUTHORS.d, h_OV=AUTHORS.d)
    return TaskModel(inst, P, eta_QK=ratio * lr_ov, eta_OV=lr_ov)


def sgd_to_loss(P, ratio, target, *, seed=0, lr_ov=0.01, max_steps=1_000_000):
    rng = np.random.default_rng(seed)
    model = model_of(P, ratio, sample(rng)[0], np.tile(AUTHORS.query, 8), np.tile(AUTHORS.label, 8), lr_ov)
    vec = model.flatten(theory.init_matrices(AUTHORS, model, "identity", 1e-6))
    rates = model.rates_vector()
    steps = 0
    while steps < max_steps:
        total = 0.0
        for _ in range(100):
            m = model_of(P, ratio, *sample(rng), lr_ov)
            L, g = m.loss_and_grad_flat(vec)
            vec -= rates * g
            total += L
            steps += 1
        if total / 100 <= target:
            break
    att = []
    for _ in range(50):
        c, q, y = sample(rng)
        m = model_of(P, ratio, c, q, y)
        att.append(m.alpha(m.unflatten(vec)))
    return steps, float(np.mean(att))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("parameterization")
    ap.add_argument("ratios")
    ap.add_argument("--target-loss", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    for r in (float(x) for x in a.ratios.split(",")):
        t0 = time.perf_counter()
        steps, att = sgd_to_loss(a.parameterization, r, a.target_loss, seed=a.seed)
        pred = theory.flow_to_losses(AUTHORS, a.parameterization, r, [a.target_loss], init="identity")["records"][0]
        print(f"{a.parameterization} ratio {r:g}: SGD {att:.4f} after {steps} steps | prediction "
              f"{pred['relevant_attention']:.4f} at {pred['steps']:.0f} steps "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
