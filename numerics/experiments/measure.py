r"""Measurements on trained models: the Figure-2 heatmap, separability, loss, accuracy.

All measurements use fresh batches from the seed's evaluation stream
(:func:`numerics.experiments.sgd.eval_rng`), never training data.

Per sequence (:func:`evaluate_fig2`):

* ``relevant_attention`` :math:`x = \sum_{v > 9} a_v`, the attention summed over
  positions holding a relevant id;
* ``label_probability`` :math:`y = \operatorname{softmax}(z)_{\text{label}}`;
* ``separability``: the largest attention on one relevant position minus the
  smallest attention on one common position (the query position included),
  ``nan`` for a sequence without relevant positions;
* ``loss`` (cross-entropy) and ``correct`` (arg-max logit is the label).

:func:`heatmap` is the 2-D histogram of :math:`(x, y)` with edges
0, .2, .4, .6, .8, 1 on both axes, in percent of sequences:
``H[i, j]`` counts attention bin ``i`` and label-probability bin ``j`` (bins
low to high, the value 1 in the last bin).

>>> import numpy as np
>>> H = heatmap(np.array([0.1, 0.95, 1.0]), np.array([0.5, 0.99, 0.2]))   # bins are [lo, hi)
>>> np.argwhere(H).tolist(), float(H.sum())
([[0, 2], [4, 1], [4, 4]], 100.0)
"""
from __future__ import annotations

import numpy as np

from . import data, models

__all__ = ["BIN_EDGES", "evaluate_fig2", "heatmap", "summarize_fig2"]

#: Histogram edges on both axes.
BIN_EDGES = np.linspace(0.0, 1.0, 6)


def evaluate_fig2(params: dict, rng: np.random.Generator, eval_batches: int = 200,
                  batch_size: int = 32, seq_len: int = 64) -> dict:
    """Per-sequence measurements of one trained Figure-2 model on fresh batches.

    ``params`` unstacked ``(V, V)`` arrays.  Returns arrays of length
    ``eval_batches * batch_size``: ``relevant_attention``,
    ``label_probability``, ``separability``, ``loss``, ``correct``.
    """
    b = data.sample_fig2_batches(rng, eval_batches, batch_size, seq_len)
    counts = b.counts.reshape(-1, data.V)
    query = b.query.reshape(-1)
    target = b.target.reshape(-1)
    f = models.forward(params, counts, query)
    a, pos, logp = f["attention"], f["position_attention"], f["log_probs"]
    present = counts > 0
    rel = present & data.RELEVANT
    com = present & ~data.RELEVANT
    max_rel = np.where(rel, pos, -np.inf).max(axis=-1)
    min_com = np.where(com, pos, np.inf).min(axis=-1)
    sep = np.where(rel.any(-1), max_rel - min_com, np.nan)
    lp = np.take_along_axis(logp, target[:, None], -1)[:, 0]
    return {
        "relevant_attention": a[:, data.RELEVANT].sum(-1),
        "label_probability": np.exp(lp),
        "separability": sep,
        "loss": -lp,
        "correct": f["logits"].argmax(-1) == target,
    }


def heatmap(relevant_attention, label_probability) -> np.ndarray:
    """5 x 5 histogram in percent (rows: attention bins; columns: label-probability bins)."""
    x = np.asarray(relevant_attention, dtype=float)
    y = np.asarray(label_probability, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or x.size == 0:
        raise ValueError("relevant_attention and label_probability must be equal-length non-empty 1-D arrays")
    h, _, _ = np.histogram2d(x, y, bins=[BIN_EDGES, BIN_EDGES])
    return 100.0 * h / x.size


def summarize_fig2(evals: list) -> dict:
    """Per-seed summaries and the across-seed heatmap of a list of :func:`evaluate_fig2` results.

    Returns ``heatmap`` (mean over seeds, 5 x 5 percent), ``heatmap_std``
    (population standard deviation over seeds, 0 for one seed),
    ``separability`` (``mean`` and ``std`` over all sequences of all seeds)
    and ``per_seed``: a list of dicts with ``heatmap``, ``final_loss``,
    ``accuracy``, ``relevant_attention``, ``label_probability`` (means) and
    the separability moments.
    """
    per_seed = [summarize_one(e) for e in evals]
    return combine_summaries(per_seed)


def summarize_one(e: dict) -> dict:
    """JSON-ready summary of one seed's :func:`evaluate_fig2` result."""
    sep = e["separability"][np.isfinite(e["separability"])]
    return {
        "heatmap": heatmap(e["relevant_attention"], e["label_probability"]).tolist(),
        "final_loss": float(e["loss"].mean()),
        "accuracy": float(e["correct"].mean()),
        "relevant_attention": float(e["relevant_attention"].mean()),
        "label_probability": float(e["label_probability"].mean()),
        "separability_n": int(sep.size),
        "separability_sum": float(sep.sum()),
        "separability_sumsq": float((sep ** 2).sum()),
    }


def combine_summaries(per_seed: list) -> dict:
    """Across-seed heatmap mean/std and pooled separability from :func:`summarize_one` dicts."""
    H = np.array([s["heatmap"] for s in per_seed])
    n = sum(s["separability_n"] for s in per_seed)
    tot = sum(s["separability_sum"] for s in per_seed)
    sq = sum(s["separability_sumsq"] for s in per_seed)
    mean = tot / n if n else float("nan")
    var = max(sq / n - mean ** 2, 0.0) if n else float("nan")
    return {"heatmap": H.mean(0).tolist(), "heatmap_std": H.std(0).tolist(),
            "separability": {"mean": mean, "std": float(np.sqrt(var))}, "per_seed": per_seed}
