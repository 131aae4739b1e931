r"""Attention interpretability proxies on the count representation: entropy, plausibility, faithfulness.

The models have no positions: a sequence is its token-count vector :math:`n`
(the attended positions) and its query :math:`q`.  Every position holding token
:math:`v` gets the same attention weight

.. math:: w_v = \frac{e^{s_v}}{\sum_u n_u e^{s_u}}, \qquad \sum_v n_v w_v = 1,

(``position_attention`` of :func:`numerics.experiments.models.forward`), so the positions of one token
are always tied.  The *context* positions are the attended ones less the query's
own position, :math:`\tilde n = n - [\text{query attended}]\, e_q` (the authors'
task attends to the query, an engine task where its ``query_in_context`` says
so); :math:`L = \sum_v \tilde n_v`.  The rationale is the set of context
positions holding a relevant token, :math:`R = \sum_{v \in \mathcal R} \tilde n_v`
positions.  Per sequence:

* entropy :math:`H = -\sum_v n_v w_v \log w_v` over all attended positions
  (nats), and :math:`H / \log \sum_v n_v` (``nan`` for one position);
* plausibility (the context positions scored by their weight, as ERASER scores a
  document's tokens): average precision :math:`\mathrm{AP} = \sum_j (R_j -
  R_{j-1}) P_j` over the distinct weights :math:`t_1 > t_2 > \dots`, with
  :math:`P_j, R_j` the precision and recall of the positions of weight
  :math:`\ge t_j` -- scikit-learn's ``average_precision_score`` (tied positions
  enter together); and the token F1 of the :math:`k = R` top-ranked positions,
  which is :math:`\mathrm{TP}/R` since precision and recall share the
  denominator; both ``nan`` without a rationale (AP also ``nan`` when every
  context position is relevant: ERASER drops single-class documents);
* faithfulness, with :math:`p(\cdot)` the label probability of a count vector:
  comprehensiveness :math:`\frac15 \sum_f [p(n) - p(n - r_f)]` and sufficiency
  :math:`\frac15 \sum_f [p(n) - p(n - \tilde n + r'_f)]` over the bins
  :math:`f \in` :data:`BINS`, where :math:`r_f` are the :math:`L - \lfloor
  (1-f) L \rfloor` top-ranked context positions (removed) and :math:`r'_f` the
  :math:`\lfloor f L \rfloor` top-ranked ones (the only ones kept); the query
  position is never removed.  Removing a position lowers its token's count by one.
  Where no position is left (an engine task whose query is not attended, at the
  smallest sufficiency bins) nothing is attended: the context vector is 0, the
  logits are 0 (the models have no bias) and :math:`p = 1/n_{out}`.  Every proxy of a sequence
  with a weight that is not finite (a diverged model's) is ``nan`` (:func:`undefined_weights`).

Ranking and ties follow ERASER's reference implementation
(``jayded/eraserbenchmark``, ``rationale_benchmark/models/encode_attend.py``
at 36467f1): the kept documents are ``heapq.nlargest(int(f * len(doc)),
zip(attentions, doc))`` and ``nsmallest(int((1 - f) * len(doc)), ...)``, so
positions are ranked by weight, ties broken by the larger token id, and the
comprehensiveness document is the complement of the top ones; its AOPC
(``metrics.py``, ``_instances_aopc``) is the plain mean of the five differences.
One departure: ERASER takes the probability of the *predicted* class, these
take the *label*'s.  Two weights are tied when they differ by at most
:data:`TIE_RTOL` relative or :data:`TIE_ATOL` (the count models compute :math:`w_v = a_v / n_v`,
which leaves equal scores a few units in the last place apart: below the smallest normal
double, a few of its fixed absolute steps).

All functions act on the last axis (tokens) and broadcast over any leading
axes: stacked seeds and evaluated sequences.  Counts may be real (expected
counts); the faithfulness bins need integers.

Worked example (``docs/proxies.md``): tokens 0..3 with counts 3, 1, 2, 1, token 3
the query (attended once, its own position), tokens 1 and 2 relevant, scores 1, 1, 0.5, 0

>>> import numpy as np
>>> counts = np.array([3., 1., 2., 1.]); e = np.exp([1., 1., 0.5, 0.])
>>> w = e / (counts * e).sum()
>>> h, hn = attention_entropy(w, counts)
>>> ap, f1 = plausibility(w, counts, 3, np.array([False, True, True, False]))
>>> [round(float(x), 4) for x in (h, hn, ap, f1)]
[1.894, 0.9733, 0.4167, 0.3333]
>>> order, _ = ranking(w, context_counts(counts, 3))
>>> order.tolist(), top_positions(order, context_counts(counts, 3), [1, 2, 3]).tolist()
([1, 0, 2, 3], [[0.0, 1.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [2.0, 1.0, 0.0, 0.0]])
"""
from __future__ import annotations

import numpy as np

__all__ = ["BINS", "PROXIES", "THEORY_PROXIES", "TIE_RTOL", "TIE_ATOL", "attention_entropy", "undefined_weights",
           "context_counts", "ranking", "top_positions", "plausibility", "faithfulness", "measure", "summary_means",
           "expected_count_proxies", "BETTER", "trends", "format_trends"]

#: ERASER's AOPC bins: fractions of the context positions removed or kept.
BINS = (0.01, 0.05, 0.1, 0.2, 0.5)
#: The per-sequence proxies of :func:`measure`, in the order of the sweep's columns.
PROXIES = ("attention_entropy", "attention_entropy_normalized", "plausibility_auprc", "plausibility_token_f1",
           "comprehensiveness", "sufficiency")
#: The proxies the expected-count theory gives (:func:`expected_count_proxies`): no faithfulness,
#: which needs sampled sequences to remove positions from.
THEORY_PROXIES = PROXIES[:4]
#: Relative difference up to which two position weights are one tie.
TIE_RTOL = 1e-12
#: Absolute difference up to which two position weights are one tie: 4 steps of the subnormal doubles,
#: where :math:`a_v / n_v` rounds to a step, not to a relative precision.
TIE_ATOL = 4 * 2.0 ** -1074


def attention_entropy(position_attention, counts):
    r"""Entropy of the attention over the attended positions.

    Parameters
    ----------
    position_attention : array_like, shape ``(..., T)``
        Weight :math:`w_v` of one position holding token :math:`v` (any value where :math:`n_v = 0`).
    counts : array_like, shape ``(..., T)``
        Attended positions per token, :math:`n_v \ge 0`.

    Returns
    -------
    entropy, normalized : ndarray, shape ``(...)``
        :math:`H = -\sum_v n_v w_v \log w_v` in nats, and :math:`H / \log \sum_v n_v` (``nan`` for a single position);
        both ``nan`` where an attended position's weight is not finite (:func:`undefined_weights`). Where the other
        tokens hold :math:`\rho = \sum_{v \ne u} n_v w_v < 10^{-3}` (:math:`u` the top token) the top's term is
        :math:`-(1 - \rho)(\log(1 - \rho) - \log n_u)` (``log1p``; :math:`\sum_v n_v w_v = 1`): near one-hot,
        :math:`\log w_u` is rounding. :math:`H \le \log \sum_v n_v` (Jensen): clipped there (rounding passes it).
    """
    w = np.asarray(position_attention, dtype=float)
    n = np.asarray(counts, dtype=float)
    live = (n > 0) & (w > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = -np.where(live, n * w * np.log(np.where(live, w, 1.0)), 0.0)
        share = np.where(live, n * w, 0.0)
        top = np.arange(n.shape[-1]) == np.argmax(share, -1)[..., None]
        rho, n_top = np.where(top, 0.0, share).sum(-1), np.where(top, n, 0.0).sum(-1)
        sharp = np.where(top, 0.0, terms).sum(-1) - (1.0 - rho) * (np.log1p(-rho) - np.log(n_top))
        h = np.where(undefined_weights(w, n), np.nan, np.where((rho < 1e-3) & live.any(-1), sharp, terms.sum(-1)))
        h = np.where((h > (log_n := np.log(n.sum(-1)))) & (n.sum(-1) > 0), log_n, h)
    return h, np.where(n.sum(-1) > 1, h / log_n, np.nan)


def undefined_weights(position_attention, counts):
    """Where a position's weight is not finite (a diverged model's ``nan``): its sequence has no
    entropy, ranking or proxy (``nan``), not the number a ``nan`` would sort or sum to.

    Parameters
    ----------
    position_attention, counts : array_like, shape ``(..., T)``
        Position weights and positions per token (only tokens with positions count).

    Returns
    -------
    ndarray of bool, shape ``(...)``
    """
    return np.any((np.asarray(counts, dtype=float) > 0) & ~np.isfinite(np.asarray(position_attention, float)), -1)


def context_counts(counts, query):
    r"""The context positions :math:`\tilde n = n - e_q`: the attended ones less the query's own.

    Parameters
    ----------
    counts : array_like, shape ``(..., T)``
        Attended positions per token.
    query : array_like of int, shape ``(...)``, or None
        The query token of each row, or None when the query is not attended
        (then every attended position is context).

    Returns
    -------
    ndarray, shape ``(..., T)``

    Raises
    ------
    ValueError
        If a count is not a finite number >= 0, or a row does not attend to its query
        (``counts[..., q] < 1``).
    """
    n = np.asarray(counts, dtype=float)
    bad = n[~(np.isfinite(n) & (n >= 0))]
    if bad.size:
        raise ValueError(f"counts must be finite numbers >= 0 (positions per token); got {float(bad[0])!r}")
    if query is None:
        return n.copy()
    own = np.arange(n.shape[-1]) == np.asarray(query)[..., None]
    ctx = n - own
    if np.any(ctx < 0):
        raise ValueError("counts must hold at least one position of each row's query token")
    return ctx


def ranking(position_attention, context):
    """Tokens in ERASER's rank order: weight descending (ties within :data:`TIE_RTOL` or :data:`TIE_ATOL`), then token
    id descending; absent tokens (no context position) last.

    Parameters
    ----------
    position_attention, context : array_like, shape ``(..., T)``
        Weights and context positions per token.

    Returns
    -------
    order : ndarray of int, shape ``(..., T)``
        Token ids, highest ranked first.
    group : ndarray of int, shape ``(..., T)``
        Tie group of each ranked entry (``group[..., i]`` of ``order[..., i]``), non-decreasing.
    """
    w = np.where(np.asarray(context) > 0, np.asarray(position_attention, dtype=float), -np.inf)
    T = w.shape[-1]
    by_weight = np.argsort(-w, axis=-1, kind="stable")
    ws = np.take_along_axis(w, by_weight, -1)
    with np.errstate(invalid="ignore"):
        tied = (ws[..., :-1] - ws[..., 1:]) <= np.maximum(TIE_RTOL * np.abs(ws[..., :-1]), TIE_ATOL)
    gs = np.concatenate([np.zeros(ws.shape[:-1] + (1,), dtype=np.intp), np.cumsum(~tied, axis=-1)], axis=-1)
    group = np.empty_like(gs)
    np.put_along_axis(group, by_weight, gs, -1)
    order = np.argsort(group * T + (T - 1 - np.arange(T)), axis=-1, kind="stable")
    return order, np.take_along_axis(group, order, -1)


def top_positions(order, context, k):
    r"""Per token, how many of its context positions are among the ``k`` top-ranked.

    Parameters
    ----------
    order : array_like of int, shape ``(..., T)``
        :func:`ranking`'s order.
    context : array_like, shape ``(..., T)``
        Context positions per token.
    k : array_like, shape ``(...)`` or ``(K, ...)``
        Positions to take (a leading axis gives several ``k`` at once).

    Returns
    -------
    ndarray, shape ``k.shape + (T,)``
        :math:`\min(\tilde n_v, \max(0, k - \text{positions ranked before } v))`.
    """
    ctx = np.take_along_axis(np.asarray(context, dtype=float), order, -1)
    before = np.cumsum(ctx, axis=-1) - ctx
    k = np.asarray(k, dtype=float)[..., None]
    taken = np.clip(k - before, 0.0, ctx)
    out = np.empty(np.broadcast_shapes(taken.shape, order.shape))
    np.put_along_axis(out, np.broadcast_to(order, out.shape), taken, -1)
    return out


def plausibility(position_attention, counts, query, relevant):
    r"""Average precision and top-:math:`R` token F1 of the context weights for the rationale.

    Parameters
    ----------
    position_attention, counts : array_like, shape ``(..., T)``
        Position weights and attended positions per token.
    query : array_like of int, shape ``(...)``, or None
        See :func:`context_counts`.
    relevant : array_like of bool, shape ``(T,)`` or ``(..., T)``
        Relevant tokens (the rationale is their context positions).

    Returns
    -------
    auprc, token_f1 : ndarray, shape ``(...)``
        See the module docstring (``nan`` where undefined, and where a context weight is not
        finite: :func:`undefined_weights`).
    """
    ctx = context_counts(counts, query)
    rel = np.broadcast_to(np.asarray(relevant, dtype=bool), ctx.shape)
    order, group = ranking(position_attention, ctx)
    c = np.take_along_axis(ctx, order, -1)
    r = np.where(np.take_along_axis(rel, order, -1), c, 0.0)
    n_rel, n_all = r.sum(-1), c.sum(-1)
    tp, pos = np.cumsum(r, -1), np.cumsum(c, -1)
    T = c.shape[-1]
    end = np.ones(group.shape, dtype=bool)
    end[..., :-1] = group[..., 1:] != group[..., :-1]
    last = np.where(end, np.arange(T), T - 1)                  # the end of each entry's tie group
    last = np.flip(np.minimum.accumulate(np.flip(last, -1), axis=-1), -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.take_along_axis(np.where(pos > 0, tp / pos, 0.0), last, -1)
        ap = (r * precision).sum(-1) / n_rel
        taken = top_positions(order, ctx, n_rel)
        f1 = np.where(rel, taken, 0.0).sum(-1) / n_rel
    defined = ~undefined_weights(position_attention, ctx)
    ap = np.where((n_rel > 0) & (n_rel < n_all) & defined, ap, np.nan)
    return ap, np.where((n_rel > 0) & defined, f1, np.nan)


def faithfulness(label_probability, position_attention, counts, query, target, bins=BINS, *,
                 query_attended: bool = True, full=None):
    """ERASER's comprehensiveness and sufficiency AOPC of the attention ranking.

    Parameters
    ----------
    label_probability : callable
        ``label_probability(counts, query, target)`` -> the model's probability of ``target``,
        for ``counts`` ``(..., M, T)`` and ``query``, ``target`` ``(..., M)`` (any ``M``).
    position_attention, counts : array_like, shape ``(..., N, T)``
        Position weights and attended positions (integers) of ``N`` sequences.
    query : array_like of int, shape ``(..., N)``
        The query of each sequence (passed to ``label_probability``).
    target : array_like of int, shape ``(..., N)``
        The label of each sequence.
    bins : sequence of float
        Fractions of the context positions (default :data:`BINS`).
    query_attended : bool
        Whether the query's own position is attended (then it is never removed; default True).
    full : array_like, shape ``(..., N)``, optional
        The label probabilities of the sequences themselves, if known (default: computed).

    Returns
    -------
    comprehensiveness, sufficiency : ndarray, shape ``(..., N)``
        Mean over the bins of :math:`p(n) - p(\\cdot)`; see the module docstring (``nan`` where a
        context weight is not finite, which ranks nothing: :func:`undefined_weights`).

    Raises
    ------
    ValueError
        If ``bins`` is empty or has a value outside (0, 1), or a count is not a whole number >= 0
        (positions are removed one by one).
    """
    f = np.asarray(bins, dtype=float)
    if f.ndim != 1 or f.size == 0 or np.any(~((f > 0) & (f < 1))):
        raise ValueError(f"bins must be fractions in (0, 1), got {bins!r}")
    n = np.asarray(counts, dtype=float)
    part = n[np.isfinite(n) & (n != np.floor(n))]
    if part.size:
        raise ValueError(f"counts must be whole numbers of positions for the faithfulness bins; got {float(part[0])!r}")
    query, target = np.asarray(query), np.asarray(target)
    ctx = context_counts(n, query if query_attended else None)
    order, _ = ranking(position_attention, ctx)
    L = ctx.sum(-1)
    shape = (-1,) + (1,) * L.ndim
    removed = top_positions(order, ctx, L - np.floor((1.0 - f).reshape(shape) * L))
    kept = top_positions(order, ctx, np.floor(f.reshape(shape) * L))
    variants = np.concatenate(([n[None]] if full is None else [])
                              + [n - removed, n - ctx + kept])                  # ([1 +] 2K, ..., N, T)
    k = variants.shape[0]
    flat = np.moveaxis(variants, 0, -3).reshape(n.shape[:-2] + (k * n.shape[-2], n.shape[-1]))
    tile = (lambda x: np.broadcast_to(x[..., None, :], x.shape[:-1] + (k, x.shape[-1]))
            .reshape(x.shape[:-1] + (k * x.shape[-1],)))
    p = np.asarray(label_probability(flat, tile(query), tile(target)), dtype=float)
    p = p.reshape(n.shape[:-2] + (k, n.shape[-2]))
    if full is None:
        full, p = p[..., 0, :], p[..., 1:, :]
    full = np.asarray(full, dtype=float)[..., None, :]
    undefined = undefined_weights(position_attention, ctx)
    parts = (p[..., :f.size, :], p[..., f.size:, :])
    return tuple(np.where(undefined, np.nan, (full - part).mean(-2)) for part in parts)


def measure(forward_out, counts, query, target, relevant, forward, *, query_attended: bool = True) -> dict:
    """Every proxy of :data:`PROXIES`, per sequence, of one evaluation.

    Parameters
    ----------
    forward_out : dict
        The model's forward pass on ``counts`` (its ``position_attention`` and ``log_probs``).
    counts : array_like, shape ``(..., N, T)``
        Attended positions per token of ``N`` sequences (leading axes: stacked runs).
    query, target : array_like of int, shape ``(..., N)``
        Query and label of each sequence.
    relevant : array_like of bool, shape ``(T,)`` or ``(..., N, T)``
        Relevant tokens.
    forward : callable
        ``forward(counts, query)`` -> a dict with ``log_probs`` ``(..., M, n_out)``: the same model on
        modified counts (for the faithfulness proxies).
    query_attended : bool
        Whether the query's own position is among the attended ones (default True).

    Returns
    -------
    dict
        ``{name: ndarray (..., N)}`` for each name of :data:`PROXIES`.
    """
    def label_probability(c, q, t):
        with np.errstate(divide="ignore", invalid="ignore"):
            logp = forward(c, q)["log_probs"]
        p = np.exp(np.take_along_axis(logp, np.asarray(t)[..., None], -1)[..., 0])
        return np.where(c.sum(-1) > 0, p, 1.0 / logp.shape[-1])      # nothing attended: c = 0, z = 0

    w = forward_out["position_attention"]
    h, hn = attention_entropy(w, counts)
    ap, f1 = plausibility(w, counts, query if query_attended else None, relevant)
    full = np.exp(np.take_along_axis(forward_out["log_probs"], np.asarray(target)[..., None], -1)[..., 0])
    comp, suff = faithfulness(label_probability, w, counts, query, target, query_attended=query_attended,
                              full=full)
    return dict(zip(PROXIES, (h, hn, ap, f1, comp, suff)))


def summary_means(evaluation: dict) -> dict:
    """``{name: mean}`` of each proxy of an evaluation over its defined (finite) values; None where
    no sequence defines it (e.g. the plausibility of sequences without relevant positions).

    Parameters
    ----------
    evaluation : dict
        Per-sequence values of each proxy of :data:`PROXIES` (arrays, NaN where undefined).

    Returns
    -------
    dict[str, float or None]
    """
    defined = {name: np.asarray(evaluation[name], dtype=float) for name in PROXIES}
    return {name: float(v[np.isfinite(v)].mean()) if np.isfinite(v).any() else None for name, v in defined.items()}


def expected_count_proxies(attention, instance, *, query_attended: bool = True) -> dict:
    r"""Entropy and plausibility of the expected-count model's attention, averaged over its classes.

    The expected counts :math:`\bar n_k` (real numbers) stand for the positions: the proxies of
    :func:`attention_entropy` and :func:`plausibility` at :math:`n = \bar n_k`,
    :math:`w = a_k / \bar n_k`, weighted by the class weights :math:`\pi_k`.

    Parameters
    ----------
    attention : array_like, shape ``(K, T)``
        Token attention masses :math:`a_k` of the classes (``TaskModel.attention``).
    instance : numerics.model.TaskInstance
        Its ``counts``, ``query``, ``relevant`` and ``weights``.
    query_attended : bool
        Whether the counts hold the query's own position (the authors' task: yes).

    Returns
    -------
    dict
        ``{name: float}`` for each name of :data:`THEORY_PROXIES` (None where no class defines it).
    """
    a = np.asarray(attention, dtype=float)
    n = np.asarray(instance.counts, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.where(n > 0, a / n, 0.0)
    h, hn = attention_entropy(w, n)
    ap, f1 = plausibility(w, n, np.asarray(instance.query) if query_attended else None, instance.relevant)
    pi = np.asarray(instance.weights, dtype=float)
    out = {}
    for name, v in zip(THEORY_PROXIES, (h, hn, ap, f1)):
        ok = np.isfinite(v)
        out[name] = float(v[ok] @ pi[ok] / pi[ok].sum()) if ok.any() else None
    return out


#: +1 where a larger value reads as more interpretable (or better), -1 where a smaller one does.
BETTER = {"attention_entropy": -1, "attention_entropy_normalized": -1, "plausibility_auprc": 1,
          "plausibility_token_f1": 1, "comprehensiveness": 1, "sufficiency": -1, "accuracy": 1,
          "label_probability": 1}


def _seed_values(rows, p, ratio, target, key):
    return [float(r[key]) for r in rows if r["parameterization"] == p and float(r["ratio"]) == ratio
            and float(r["target_loss"]) == target and r.get(key) not in (None, "") and np.isfinite(float(r[key]))]


def trends(rows, target_loss, *, keys=tuple(BETTER), min_change: float = 0.01) -> dict:
    """Per parameterization, whether each measure improves from the lowest ratio to the highest.

    Parameters
    ----------
    rows : list of dict
        Rows of a sweep's ``results.csv``: numbers, or the strings of :class:`csv.DictReader`
        (an empty cell, or None, is a missing value).
    target_loss : float
        The target whose rows are compared.
    keys : sequence of str
        Measures (keys of :data:`BETTER`).
    min_change : float
        Smallest change that counts (default 0.01).

    Returns
    -------
    dict
        ``{parameterization: {key: {"low", "high", "change", "verdict"}}}``: the means over seeds at
        the lowest and the highest ratio, their difference, and ``"improves"`` / ``"worsens"``
        when the change in the better direction (:data:`BETTER`) exceeds both ``min_change`` and
        the seed spread (the larger standard deviation over seeds at the two ratios), else ``"flat"``
        (None where a ratio has no value).
    """
    out = {}
    for p in dict.fromkeys(r["parameterization"] for r in rows):
        ratios = sorted({float(r["ratio"]) for r in rows if r["parameterization"] == p})
        out[p] = {}
        for key in keys:
            lo, hi = (_seed_values(rows, p, ratios[i], target_loss, key) for i in (0, -1))
            if not lo or not hi:
                out[p][key] = {"low": None, "high": None, "change": None, "verdict": None}
                continue
            change = float(np.mean(hi) - np.mean(lo))
            spread = max(np.std(lo, ddof=1) if len(lo) > 1 else 0.0, np.std(hi, ddof=1) if len(hi) > 1 else 0.0)
            better = BETTER[key] * change
            verdict = ("improves" if better > max(min_change, spread) else
                       "worsens" if -better > max(min_change, spread) else "flat")
            out[p][key] = {"low": float(np.mean(lo)), "high": float(np.mean(hi)), "change": change,
                           "verdict": verdict}
    return out


def format_trends(table) -> str:
    """:func:`trends` as a Markdown table: one row per parameterization, one column per measure
    (``low -> high`` and the verdict).

    Parameters
    ----------
    table : dict
        ``{parameterization: {measure: {"low", "high", "change", "verdict"}}}`` (:func:`trends`).

    Returns
    -------
    str
    """
    keys = list(next(iter(table.values()))) if table else []
    lines = ["| parameterization | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
    for p, cells in table.items():
        shown = [("n/a" if c["verdict"] is None else f"{c['low']:.3f} → {c['high']:.3f} {c['verdict']}")
                 for c in cells.values()]
        lines.append(f"| {p} | " + " | ".join(shown) + " |")
    return "\n".join(lines)
