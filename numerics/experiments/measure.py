r"""Measurements on trained models: the Figure-2 heatmap, separability, loss, accuracy.

All measurements use fresh batches from the seed's evaluation stream
(:func:`numerics.experiments.sgd.eval_rng`), never training data.

Per sequence (:func:`evaluate`):

* ``relevant_attention`` :math:`x = \sum_{v \in R} a_v`, the attention summed over
  positions holding a relevant token (ids > 9 in the authors' task);
* ``self_attention``: the attention on the query's own token -- its own
  position and every copy of that token in the context (the models have no
  positions, so the copies are one mechanism);
* ``other_attention``: the attention on all other positions (the three shares
  sum to 1, :func:`attention_shares`);
* ``label_probability`` :math:`y = \operatorname{softmax}(z)_{\text{label}}`;
* ``separability``: the largest attention on one relevant position minus the
  smallest attention on one other position (the query position included),
  ``nan`` for a sequence without one of them;
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

import functools

import numpy as np

from ..validation import check_int
from . import models, proxies, sampler

__all__ = ["BIN_EDGES", "attention_shares", "evaluate", "measurements", "heatmap", "summarize_one",
           "combine_summaries"]

#: Histogram edges on both axes.
BIN_EDGES = np.linspace(0.0, 1.0, 6)


def attention_shares(attention, query, relevant) -> dict:
    r"""Where the query's attention goes: relevant tokens, its own token, all other positions.

    Parameters
    ----------
    attention : array_like, shape ``(..., T)``
        Token attention masses :math:`a_v` (the attention summed over the
        positions holding token :math:`v`; each row sums to 1), e.g.
        ``models.forward(...)["attention"]`` or the expected-count model's.
    query : array_like of int, shape ``(...)``
        The query token of each row.
    relevant : array_like of bool, shape ``(T,)`` or ``(..., T)``
        Relevant tokens.

    Returns
    -------
    dict
        ``relevant_attention`` :math:`\sum_{v \in R} a_v`, ``self_attention``
        :math:`a_q` (the query position and every copy of the query token in the
        context; counted as relevant instead if the query token is relevant, which
        it never is in the authors' task) and ``other_attention``, the rest; each
        of shape ``(...)``, summing to 1 row by row (up to rounding); the keys of
        :data:`derivations.core.vocabulary.SHARES`, in its order.

    >>> from derivations.core import SHARES
    >>> a = np.array([[0.5, 0.2, 0.3], [0.1, 0.1, 0.8]])
    >>> s = attention_shares(a, np.array([1, 0]), np.array([False, False, True]))
    >>> [s[k].tolist() for k in SHARES]
    [[0.3, 0.8], [0.2, 0.1], [0.5, 0.1]]
    """
    a = np.asarray(attention, dtype=float)
    query = np.asarray(query)
    relevant = np.asarray(relevant, dtype=bool)
    if relevant.ndim == 1:
        rel_share = a[..., relevant].sum(-1)
    else:
        rel_share = np.where(relevant, a, 0.0).sum(-1)
    own = np.arange(a.shape[-1]) == query[..., None]
    own &= ~np.broadcast_to(relevant, own.shape)
    self_share = np.where(own, a, 0.0).sum(-1)
    other_share = np.where(own | relevant, 0.0, a).sum(-1)
    return {"relevant_attention": rel_share, "self_attention": self_share,
            "other_attention": other_share}


def evaluate(st, params: dict, rng: np.random.Generator, eval_batches: int = 200, batch_size: int = 32,
             seq_len: int = 64) -> dict:
    """Per-sequence measurements of one trained model on fresh batches.

    Parameters
    ----------
    st : numerics.experiments.task_sampling.SampledTask
    params : dict
        Unstacked matrices (:func:`numerics.experiments.models.param_shapes`).
    rng : numpy.random.Generator
        The seed's evaluation stream.
    eval_batches, batch_size, seq_len : int

    Returns
    -------
    dict
        Arrays of length ``eval_batches * batch_size`` (:func:`measurements`) and the
        interpretability proxies (:data:`numerics.experiments.proxies.PROXIES`; the query's
        position attended where the task says so).

    Raises
    ------
    ValueError
        ``params`` not the finite matrices of one parameterization in the task's shapes, or
        ``eval_batches``, ``batch_size`` not integers >= 1, ``seq_len`` not an integer >= 3.
    TypeError
        ``rng`` not a :class:`numpy.random.Generator`.
    """
    _check_params(st, params)
    eval_batches = check_int("eval_batches", eval_batches, 1)
    b = sampler.sample_batches(st, rng, eval_batches, batch_size, seq_len)
    counts, query, target = b.counts.reshape(-1, st.T), b.query.reshape(-1), b.target.reshape(-1)
    relevant = st.relevant_of(b.label_class.reshape(-1))
    fwd = models.forward(st, params, counts, query)
    out = measurements(fwd, counts, query, target, relevant)
    out.update(proxies.measure(fwd, counts, query, target, relevant, functools.partial(models.forward, st, params),
                               query_attended=st.query_in_context))
    return out


def _check_params(st, params) -> None:
    """``params`` the matrices of one parameterization, each finite and of its shape in ``st``
    (:func:`~numerics.experiments.models.param_shapes`); else ValueError naming the matrix."""
    from derivations.core.vocabulary import PARAMETERIZATIONS
    keys = set(params) if isinstance(params, dict) else None
    P = next((P for P in PARAMETERIZATIONS if keys == set(models.param_keys(P))), None)
    if P is None:
        choices = "; ".join(f"{P}: {', '.join(models.param_keys(P))}" for P in PARAMETERIZATIONS)
        shown = sorted(keys) if keys is not None else type(params).__name__
        raise ValueError(f"params must be a dict of one parameterization's matrices ({choices}); got {shown}")
    for key, shape in models.param_shapes(st, P).items():
        a = np.asarray(params[key])
        if a.shape != shape or a.dtype.kind not in "iuf" or not np.all(np.isfinite(a)):
            raise ValueError(f"params[{key!r}] must be finite numbers of shape {shape}; "
                             f"got {a.dtype} of shape {a.shape}")


def measurements(forward, counts, query, target, relevant) -> dict:
    """The per-sequence measurements of a forward pass.

    Parameters
    ----------
    forward : dict
        Of :func:`numerics.experiments.models.forward` (``attention``, ``position_attention``,
        ``logits``, ``log_probs``) on ``counts``.
    counts : ndarray, shape (N, T)
    query, target : ndarray of int, shape (N,)
    relevant : ndarray of bool, shape (T,) or (N, T)

    Returns
    -------
    dict
        The shares of :func:`attention_shares` (``relevant_attention``, ``self_attention``,
        ``other_attention``), ``label_probability``, ``separability`` (the largest
        per-position attention of a present relevant token minus the smallest of a present
        other token; nan for a sequence without one of them), ``loss``, ``correct``.
    """
    a, pos, logp = forward["attention"], forward["position_attention"], forward["log_probs"]
    present = counts > 0
    rel = present & relevant
    other = present & ~relevant
    max_rel = np.where(rel, pos, -np.inf).max(axis=-1)
    min_other = np.where(other, pos, np.inf).min(axis=-1)
    sep = np.where(rel.any(-1) & other.any(-1), max_rel - min_other, np.nan)
    lp = np.take_along_axis(logp, target[:, None], -1)[:, 0]
    return {
        **attention_shares(a, query, relevant),
        "label_probability": np.exp(lp),
        "separability": sep,
        "loss": -lp,
        "correct": forward["logits"].argmax(-1) == target,
    }


def heatmap(relevant_attention, label_probability) -> np.ndarray:
    """5 x 5 histogram in percent (rows: attention bins; columns: label-probability bins).

    Parameters
    ----------
    relevant_attention, label_probability : array_like, shape (N,)

    Returns
    -------
    ndarray, shape (5, 5)

    Raises
    ------
    ValueError
        Arrays of different or zero length.
    """
    x = np.asarray(relevant_attention, dtype=float)
    y = np.asarray(label_probability, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or x.size == 0:
        raise ValueError("relevant_attention and label_probability must be equal-length non-empty 1-D arrays")
    h, _, _ = np.histogram2d(x, y, bins=[BIN_EDGES, BIN_EDGES])
    return 100.0 * h / x.size


def summarize_one(e: dict) -> dict:
    """JSON-ready summary of one seed's :func:`evaluate` result (the proxies' means over the
    sequences that define them, :func:`numerics.experiments.proxies.summary_means`).

    Parameters
    ----------
    e : dict

    Returns
    -------
    dict
        ``heatmap``, ``final_loss``, ``accuracy``, ``relevant_attention``,
        ``label_probability`` (means), the separability moments and the mean shares.
    """
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
        "self_attention": float(e["self_attention"].mean()),
        "other_attention": float(e["other_attention"].mean()),
        **proxies.summary_means(e),
    }


def combine_summaries(per_seed: list) -> dict:
    """Across-seed heatmap mean/std and pooled separability.

    Parameters
    ----------
    per_seed : list of dict
        :func:`summarize_one` dicts.

    Returns
    -------
    dict
        ``heatmap`` (mean over seeds), ``heatmap_std`` (population standard deviation),
        ``separability`` (``mean``, ``std`` over all sequences).
    """
    H = np.array([s["heatmap"] for s in per_seed])
    n = sum(s["separability_n"] for s in per_seed)
    tot = sum(s["separability_sum"] for s in per_seed)
    sq = sum(s["separability_sumsq"] for s in per_seed)
    mean = tot / n if n else float("nan")
    var = max(sq / n - mean ** 2, 0.0) if n else float("nan")
    return {"heatmap": H.mean(0).tolist(), "heatmap_std": H.std(0).tolist(),
            "separability": {"mean": mean, "std": float(np.sqrt(var))}}
