r"""The experiments' attention models on token-count vectors, with analytic gradients.

Figure-2 model (learned attention)
----------------------------------
One query (the last input token :math:`q`) attends over all input positions,
itself included.  With one-hot embeddings the score of a position holding
token :math:`v` is a matrix entry, :math:`s_v = A_{qv}/\sqrt{V}`, where

* collapsed attention (``CA``): :math:`A = W_{QK}` (score
  :math:`(W_{QK} x_v)[q]/\sqrt V`);
* factorized attention (``FA``): :math:`A = W_Q^\top W_K` (score
  :math:`(W_Q x_q)^\top (W_K x_v)/\sqrt V`).

A sequence enters only through its token counts :math:`n_v` (context plus the
query), so the attention mass on token :math:`v` (summed over its positions),
which is also the context vector, is

.. math::

    a_v = c_v = \frac{n_v e^{s_v}}{\sum_u n_u e^{s_u}},

computed with the maximum score of the *present* tokens subtracted.  The
logits are :math:`z = W_{OV} c` (collapsed output, ``CO``) or
:math:`z = W_O W_V c` (factorized output, ``FO``) and the loss of a sequence
is the cross-entropy :math:`\ell = \operatorname{logsumexp}(z) - z_y` over all
:math:`V` logits.  A batch loss is :math:`\sum_b w_b \ell_b` with weights
:math:`w_b = 1/B` by default (PyTorch's mean reduction).

Gradients (per sequence, times :math:`w_b`, summed over the batch):
:math:`g_z = \operatorname{softmax}(z) - e_y`;
:math:`\partial W_{OV} = g_z c^\top`, or :math:`\partial W_O = g_z (W_V c)^\top`,
:math:`\partial W_V = W_O^\top g_z c^\top`; :math:`g_c = W_{OV}^\top g_z`;
:math:`g_{s,v} = a_v (g_{c,v} - a^\top g_c)`; :math:`\partial A = e_q\, g_s^\top/\sqrt V`;
and :math:`\partial W_Q = W_K\, \partial A^\top`, :math:`\partial W_K = W_Q\, \partial A`.

Counts may be real-valued (e.g. :func:`numerics.experiments.data.expected_counts`),
which gives the expected-count (population-limit) model of the task.

Shapes and stacking
-------------------
Parameters are a ``dict`` of arrays (keys :func:`param_keys`), each either
``(V, V)`` or stacked ``(S, V, V)`` over independent runs (seeds); counts are
``(B, V)`` or ``(S, B, V)``, query and target ids ``(B,)`` or ``(S, B)``.
Every operation acts slice by slice on the leading axis (batched ``matmul``,
reductions over trailing axes), so the numbers of a run do not depend on which
other runs are stacked with it.  Inside :func:`loss_and_grad` the output circuit
works on class-major activations ``(..., V, B)`` (logits ``W_OV @ a^T``):
every product then reads both factors as stored or as a plain transpose of a
weight (``W^T @ x``), never a right-hand factor transposed, which BLAS handles
at about 1.5 times the cost for these small matrices.

Figure-3 model (fixed attention)
--------------------------------
Attention is not learned: mass :math:`\alpha` is spread evenly over the
relevant positions (ids > 9) and :math:`1-\alpha` evenly over the others
(:func:`fixed_attention_context`).  Output circuit ``"collapsed"``:
:math:`z = W c + b`; ``"factorized"``: :math:`z = W_O (W_V c + b_V) + b_O`
(every PyTorch ``Linear`` has a bias by default).  :func:`fig3_loss_and_grad`.

Example: population loss and gradients of CACO at the authors' initialization

>>> import numpy as np
>>> from numerics.experiments import data
>>> params = init_params("CACO", "authors", np.random.default_rng(0))
>>> loss, grads = loss_and_grad(params, data.expected_counts(64), data.QUERY_TOKENS,
...                             data.LABEL_TOKENS)
>>> float(loss) > 3.8, sorted(grads)
(True, ['W_OV', 'W_QK'])
"""
from __future__ import annotations

import math

import numpy as np

from derivations.core.authors_setting import SCORE_SCALE_SQUARED as _SCORE_SCALE_SQUARED
from derivations.core.vocabulary import PARAMETERIZATIONS
from derivations.core.vocabulary import check_parameterization as _check_parameterization

from .cross_entropy import (cross_entropy as _cross_entropy, log_softmax as _log_softmax, ones_column as _ones_column,
                            ones_row as _ones_row, target_index as _target_index, underflow as _underflow)
from .data import RELEVANT, V

__all__ = [
    "INITS", "OUTPUT_CIRCUITS", "IDENTITY_SCALE", "param_keys", "circuit_of",
    "parameterization_of", "init_kinds", "init_params", "forward", "loss_and_grad", "stack_params",
    "unstack_params", "fixed_attention_context", "fig3_init", "fig3_logits", "fig3_loss_and_grad",
]

#: Figure-2 parameterizations: attention (CA/FA) then output (CO/FO) circuit.
#: Initializations: the notebooks' per-parameterization choice, 1e-6·I everywhere, PyTorch uniform.
INITS = ("authors", "identity", "uniform")
#: Figure-3 output circuits.
OUTPUT_CIRCUITS = ("collapsed", "factorized")

_KEYS = {"CA": ("W_QK",), "FA": ("W_Q", "W_K"), "CO": ("W_OV",), "FO": ("W_O", "W_V")}
_CIRCUIT = {"W_QK": "QK", "W_Q": "QK", "W_K": "QK", "W_OV": "OV", "W_O": "OV", "W_V": "OV"}
#: Initialization in the notebooks' row-1 runs: key -> "uniform" or "identity".
_AUTHORS_INIT = {
    "FAFO": {"W_Q": "uniform", "W_K": "uniform", "W_O": "identity", "W_V": "identity"},
    "FACO": {"W_Q": "identity", "W_K": "identity", "W_OV": "identity"},
    "CAFO": {"W_QK": "identity", "W_O": "identity", "W_V": "identity"},
    "CACO": {"W_QK": "uniform", "W_OV": "uniform"},
}
#: Scale of the identity initialization: ``1e-6 I`` as in the notebooks.
IDENTITY_SCALE = 1e-6
# attention scores are scaled by 1/sqrt(V): derivations.core.authors_setting.SCORE_SCALE_SQUARED
_SQRT_V = math.sqrt(_SCORE_SCALE_SQUARED[1] / _SCORE_SCALE_SQUARED[0])



def param_keys(parameterization: str) -> tuple:
    """Parameter names of a parameterization, QK circuit first.

    >>> param_keys("FAFO")
    ('W_Q', 'W_K', 'W_O', 'W_V')
    """
    p = _check_parameterization(parameterization)
    return _KEYS[p[:2]] + _KEYS[p[2:]]


def circuit_of(key: str) -> str:
    """``"QK"`` or ``"OV"``: the circuit a parameter belongs to (its learning rate)."""
    try:
        return _CIRCUIT[key]
    except KeyError:
        raise ValueError(f"unknown parameter name {key!r}; valid: {sorted(_CIRCUIT)}") from None


def parameterization_of(params: dict) -> str:
    """Infer the parameterization from the parameter names."""
    keys = set(params)
    for p in PARAMETERIZATIONS:
        if keys == set(param_keys(p)):
            return p
    raise ValueError(f"parameter names {sorted(keys)} match no parameterization {PARAMETERIZATIONS}")


def init_kinds(parameterization: str, init: str = "authors") -> dict:
    """``{key: "uniform" or "identity"}``: how :func:`init_params` builds each matrix.

    >>> init_kinds("FAFO")
    {'W_Q': 'uniform', 'W_K': 'uniform', 'W_O': 'identity', 'W_V': 'identity'}
    """
    keys = param_keys(parameterization)
    if init not in INITS:
        raise ValueError(f"init must be one of {INITS}, got {init!r}")
    if init == "authors":
        return dict(_AUTHORS_INIT[parameterization])
    return dict.fromkeys(keys, init)


def init_params(parameterization: str, init: str = "authors",
                rng: np.random.Generator | None = None, *,
                identity_scale: float = IDENTITY_SCALE, shapes: dict | None = None) -> dict:
    r"""Initial parameters of one run: the one builder of a seed's initial matrices, for SGD
    (:func:`numerics.experiments.sgd.train_fig2` passes ``numpy.random.default_rng(seed)``, then
    trains from the same generator) and for the theory (:func:`numerics.experiments.theory.authors_init`
    converts them to the expected-count model's convention), on the authors' task and any engine task.

    ``init="authors"``: the notebooks' row-1 choice (see the spec: FAFO :math:`W_Q, W_K` uniform
    and :math:`W_O = W_V = 10^{-6} I`; FACO and CAFO all :math:`10^{-6} I`; CACO uniform);
    ``"identity"``: every matrix :math:`10^{-6} I`; ``"uniform"``: every matrix i.i.d.
    :math:`U(-1/\sqrt{c}, 1/\sqrt{c})` for :math:`c` columns (PyTorch's default for a ``Linear`` with
    :math:`c` inputs: :math:`1/\sqrt{50}` for the authors' 50×50).  Uniform matrices are drawn from
    ``rng`` in the order of :func:`param_keys` (:func:`init_kinds` says which).  ``identity_scale``
    replaces :math:`10^{-6}` (the SGD experiments always use
    :data:`IDENTITY_SCALE`; the theory offers the scale as an option).  ``shapes``: ``{key: (rows,
    cols)}`` of an engine task (:func:`numerics.experiments.task_model.param_shapes`; the identity is
    then rectangular); default every matrix ``(V, V)``, the authors'.
    """
    kinds = init_kinds(parameterization, init)
    if rng is None and "uniform" in kinds.values():
        raise ValueError("rng (a numpy.random.Generator) is required for a uniform initialization")
    shapes = dict.fromkeys(kinds, (V, V)) if shapes is None else shapes
    out = {}
    for key in param_keys(parameterization):
        if kinds[key] == "uniform":
            bound = 1.0 / math.sqrt(shapes[key][1])        # == 1 / _SQRT_V for the authors' V columns
            out[key] = rng.uniform(-bound, bound, size=shapes[key])
        else:
            out[key] = identity_scale * np.eye(*shapes[key])
    return out


def stack_params(list_of_params) -> dict:
    """Stack per-run parameter dicts along a new leading axis."""
    keys = list(list_of_params[0])
    return {k: np.stack([p[k] for p in list_of_params]) for k in keys}


def unstack_params(params: dict) -> list:
    """Inverse of :func:`stack_params`: a list of per-run dicts (copies)."""
    n = len(next(iter(params.values())))
    return [{k: v[i].copy() for k, v in params.items()} for i in range(n)]


def _tr(a):
    return a.swapaxes(-1, -2)


def _score_table(params, ids):
    """Rows ``A[ids, :]`` of the score matrix, ``(..., U, V)``, for the sorted distinct
    query ids ``ids`` (an index array, or a slice when they are consecutive); also
    ``W_Q[:, ids]`` ``(..., V, U)`` for factorized attention, else None.

    Every sequence with query ``q`` uses row ``A[q, :]``, so only the ``U`` distinct
    rows (4 in the paper's task) are computed and exponentiated."""
    if "W_QK" in params:
        return params["W_QK"][..., ids, :], None
    wq_ids = params["W_Q"][..., :, ids]                                      # (..., V, U)
    return np.matmul(_tr(wq_ids), params["W_K"]), wq_ids


def _query_slots(query, ids, lead=None):
    """Flat row index into the score table ``lead + (U, V)`` viewed as ``(-1, V)``: the
    row ``A[q_b, :]`` of every sequence ``b``, shape ``lead + (B,)`` (``lead`` default:
    the leading shape of ``query``; a 1-D ``query`` is shared by all stacked runs)."""
    lead = query.shape[:-1] if lead is None else tuple(lead)
    lut = np.zeros(V, dtype=np.intp)
    lut[ids] = np.arange(ids.size)
    slot = lut[query]
    if lead:
        slot = slot + (np.arange(math.prod(lead)) * ids.size).reshape(lead + (1,))
    return slot


def _attention(table, counts, slot):
    """Token attention masses ``a`` (..., B, V) from the score rows ``table`` (..., U, V) of
    the distinct queries, counts, and each sequence's row ``slot`` (..., B) of ``table``
    viewed as ``(-1, V)`` (:func:`_query_slots`).

    The largest score of the row is subtracted before exponentiating (done once per
    distinct query); a row whose maximum sits on an absent token so far above the
    present ones that their terms would underflow (normalizer < 1e-280) is recomputed
    with the maximum over present tokens only (row by row, in the runs where it happens, so
    stacking is irrelevant).
    """
    e = table - np.maximum.reduce(table, axis=-1)[..., None]
    e *= 1.0 / _SQRT_V
    np.exp(e, out=e)
    e = e.reshape(-1, V).take(slot, axis=0)
    e *= counts
    z = np.matmul(e, _ones_column(e.dtype))                   # row sums (..., B, 1), one BLAS call
    # decided run by run: a run's nan (diverged) must not hide another run's underflow, nor the
    # reverse (the numbers of a run stay those of the run alone)
    tiny = _underflow(z.dtype)
    deep = np.minimum.reduce(z.reshape(z.shape[:-2] + (-1,)), axis=-1) < tiny
    if deep.any():
        bad = (z < tiny) & deep[..., None, None]
        rows = np.take(table.reshape(-1, V), slot, axis=0)
        s = np.where(counts > 0, rows, -np.inf)
        s = (s - s.max(axis=-1, keepdims=True)) * (1.0 / _SQRT_V)
        e2 = (np.exp(s) * counts).astype(e.dtype, copy=False)     # (float counts: e's dtype)
        e = np.where(bad, e2, e)
        z = np.where(bad, e2.sum(axis=-1, keepdims=True), z)
    e *= 1.0 / z
    return e


def _logits(params, a):
    if "W_OV" in params:
        return np.matmul(a, _tr(params["W_OV"])), None
    h = np.matmul(a, _tr(params["W_V"]))
    return np.matmul(h, _tr(params["W_O"])), h


def _as_ids(x, name):
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.integer):
        raise ValueError(f"{name} must hold integer token ids, got dtype {x.dtype}")
    return x


def forward(params: dict, counts, query) -> dict:
    """Forward pass of the Figure-2 model.

    Returns a dict with ``attention`` (token attention masses ``a``, which are
    also the context vector, ``(..., B, V)``), ``position_attention`` (the
    attention of one position holding each token, ``a_v / n_v``, 0 where
    ``n_v = 0``), ``logits`` and ``log_probs`` (``(..., B, V)``).
    """
    counts = np.asarray(counts, dtype=float)
    query = _as_ids(query, "query")
    ids = np.unique(query)
    table, _ = _score_table(params, ids)
    a = _attention(table, counts, _query_slots(query, ids, table.shape[:-2]))
    z, _ = _logits(params, a)
    with np.errstate(divide="ignore", invalid="ignore"):
        pos = np.where(counts > 0, a / counts, 0.0)
    return {"attention": a, "position_attention": pos, "logits": z, "log_probs": _log_softmax(z)}


def query_onehot_t(query, ids=None) -> np.ndarray:
    """``(..., U, B)`` float matrix ``[ids[u] == query[..., b]]``: the transposed one-hot
    matrix of the query ids restricted to the rows ``ids`` (default: all ``V`` ids).

    The trainer precomputes it for a whole epoch with ``ids`` the distinct
    queries of the epoch (4 in the paper's task), so the gradient of the score
    matrix costs ``U x B x V`` instead of ``V x B x V`` operations; rows outside
    ``ids`` are exactly zero either way.
    """
    ids = np.arange(V) if ids is None else np.asarray(ids)
    return (np.asarray(query)[..., None, :] == ids[:, None]).astype(float)


def _ov_grads(params, grads, gzT, a, hT):
    """The output-circuit part of :func:`loss_and_grad`'s backward pass, into ``grads``
    (from ``gzT`` (..., V, B), the gradient of the class-major logits); returns the
    gradient of the context ``gcT`` (..., V, B), a fresh array."""
    if hT is None:
        grads["W_OV"] = np.matmul(gzT, a)
        return np.matmul(_tr(params["W_OV"]), gzT)
    grads["W_O"] = np.matmul(gzT, np.ascontiguousarray(_tr(hT)))
    ghT = np.matmul(_tr(params["W_O"]), gzT)
    grads["W_V"] = np.matmul(ghT, a)
    return np.matmul(_tr(params["W_V"]), ghT)


def _qk_grads(params, grads, gcT, aT, onehot_t, ids, wq_ids, scale, sparse):
    """The query-key part of :func:`loss_and_grad`'s backward pass, into ``grads``: from
    ``gcT`` (..., V, B), the gradient of the context (overwritten), to ``scale`` times the
    gradient of the score matrix's rows ``ids`` and of ``W_QK`` or ``W_Q, W_K``."""
    gsT = gcT                                                 # (a fresh array: updated in place)
    gsT -= np.matmul(_ones_row(aT.dtype), aT * gcT)           # g_c - a.g_c
    gsT *= aT                                                 # sqrt(V) dL/dA[q, :] per sequence, (..., V, B)
    # dL/dA = E^T gs / sqrt(V) (E: one-hot queries): only the rows of the distinct queries are non-zero
    dA_rows = np.matmul(onehot_t.astype(gsT.dtype, copy=False), _tr(gsT))   # (..., U, V)
    dA_rows *= scale
    if wq_ids is None:
        grads["W_QK"] = dA_rows
    else:
        # dW_Q = W_K dA^T (non-zero in the columns ids only), dW_K = W_Q dA = W_Q[:, ids] dA_rows
        grads["W_Q"] = np.matmul(params["W_K"], _tr(dA_rows))       # (..., V, U)
        grads["W_K"] = np.matmul(wq_ids, dA_rows)
    if not sparse:
        qk = "W_QK" if wq_ids is None else "W_Q"
        full = np.zeros(gsT.shape[:-2] + (V, V), dtype=gsT.dtype)
        if wq_ids is None:
            full[..., ids, :] = grads[qk]
        else:
            full[..., :, ids] = grads[qk]
        grads[qk] = full


def loss_and_grad(params: dict, counts, query, target, *, weights=None, grad: bool = True,
                  _query_set=None, _sparse_qk=False, _rates=None):
    r"""Batch loss and its gradients for the Figure-2 model.

    Parameters
    ----------
    params : dict
        Parameters of one parameterization (:func:`param_keys`), each ``(V, V)``
        or stacked ``(S, V, V)``.
    counts : array_like, ``(..., B, V)``
        Token counts of the input (context and query); real values >= 0 are
        allowed (expected counts).
    query, target : array_like of int, ``(..., B)``
        Query (last input) token and target token of each sequence.
    weights : array_like, ``(..., B)``, optional
        Per-sequence weights :math:`w_b`; the loss is
        :math:`\sum_b w_b \ell_b`.  Default :math:`1/B` (the batch mean).
    grad : bool
        Also return the gradients (default True).
    _query_set : tuple, optional
        Private (the trainer's hot path, inputs already checked): ``(ids,
        onehot_t, slot, tidx)``, the distinct query ids (an array or a slice),
        :func:`query_onehot_t`, :func:`_query_slots` and the targets' flat index
        in the class-major logits, :func:`~numerics.experiments.cross_entropy.target_index` ``(target, class_axis=-2)``.
    _sparse_qk : bool
        Private (the trainer's hot path): return only the non-zero block of the
        query-side gradient, ``W_QK`` rows ``ids`` ``(..., U, V)`` or ``W_Q``
        columns ``ids`` ``(..., V, U)``, ``ids = np.unique(query)``.
    _rates : tuple of float, optional
        Private (the trainer's hot path): ``(lr_qk, lr_ov)``; return each
        circuit's gradient times its learning rate, the SGD step, with the
        rates folded into scalings the backward pass does anyway (no extra
        pass over the parameters).

    Returns
    -------
    loss : ndarray, shape ``(...)``
        One loss per stacked run (a 0-d array when unstacked).
    grads : dict or None
        Gradients with the same keys and shapes as ``params``.
    """
    if _query_set is None:
        counts = np.asarray(counts, dtype=float)
        query = _as_ids(query, "query")
        target = _as_ids(target, "target")
        ids = np.unique(query)
        onehot_t = query_onehot_t(query, ids) if grad else None
        tidx = None                                           # from target, broadcast if stacked
    else:       # the trainer's hot path, inputs already checked: ids (U,) or a slice, (..., U, B), (..., B), (N,)
        ids, onehot_t, slot, tidx = _query_set
    table, wq_ids = _score_table(params, ids)
    if _query_set is None:
        slot = _query_slots(query, ids, table.shape[:-2])
    a = _attention(table, counts, slot)
    # the output circuit works class-major, on transposed activations (..., V, B): then every
    # product is W @ x, W^T @ x or x @ y, never a right factor read transposed (x @ W^T),
    # which costs BLAS half as much again at these sizes
    aT = np.ascontiguousarray(_tr(a))
    if "W_OV" in params:
        hT = None
        zT = np.matmul(params["W_OV"], aT)
    else:
        hT = np.matmul(params["W_V"], aT)
        zT = np.matmul(params["W_O"], hT)
    lr_qk, lr_ov = (1.0, 1.0) if _rates is None else _rates
    # gzT: lr_ov dL/dz, (..., V, B)
    loss, gzT = _cross_entropy(zT, target, weights, grad, tidx, lr_ov, class_axis=-2)
    if not grad:
        return loss, None
    grads = {}
    gcT = _ov_grads(params, grads, gzT, a, hT)
    qk_scale = 1.0 / _SQRT_V if _rates is None else lr_qk / (lr_ov * _SQRT_V)
    _qk_grads(params, grads, gcT, aT, onehot_t, ids, wq_ids, qk_scale, _sparse_qk)
    return loss, {k: grads[k] for k in params}


# --------------------------------------------------------------------------- #
# Figure 3: fixed attention
# --------------------------------------------------------------------------- #
def fixed_attention_context(counts, alpha):
    r"""Context vector of the fixed-attention model.

    Mass ``alpha`` spread evenly over the relevant positions (ids > 9) and
    ``1 - alpha`` evenly over all other input positions:
    :math:`c_v = \alpha n_v / R` for relevant :math:`v`, :math:`(1-\alpha) n_v/(T-R)`
    otherwise, with :math:`R` relevant positions out of :math:`T`.  A sequence
    without relevant positions puts all its mass on the others.

    ``counts`` ``(..., B, V)``; ``alpha`` scalar or ``(A,)`` (then the result is
    ``(A, ..., B, V)``).
    """
    counts = np.asarray(counts, dtype=float)
    alpha = np.asarray(alpha, dtype=float)
    if np.any(~np.isfinite(alpha)) or np.any(alpha < 0) or np.any(alpha > 1):
        raise ValueError(f"alpha must lie in [0, 1], got {alpha!r}")
    rel = counts[..., RELEVANT].sum(-1, keepdims=True)
    total = counts.sum(-1, keepdims=True)
    other = total - rel
    shape = alpha.shape + (1,) * counts.ndim
    al = alpha.reshape(shape)
    has_rel = rel > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        w_rel = np.where(has_rel, al / rel, 0.0)
        w_oth = np.where(has_rel, (1.0 - al) / other, 1.0 / other)
        w_oth = np.where(other > 0, w_oth, 0.0)
    return counts * np.where(RELEVANT, w_rel, w_oth)


def fig3_init(output_circuit: str, rng: np.random.Generator) -> dict:
    r"""PyTorch-default initialization of the Figure-3 output circuit.

    Every weight and bias i.i.d. :math:`U(-1/\sqrt{\text{fan\_in}}, 1/\sqrt{\text{fan\_in}})`
    with fan_in = 50; drawn in the order ``W, b`` (collapsed) or
    ``W_V, b_V, W_O, b_O`` (factorized).
    """
    if output_circuit not in OUTPUT_CIRCUITS:
        raise ValueError(f"output_circuit must be one of {OUTPUT_CIRCUITS}, got {output_circuit!r}")
    bound = 1.0 / _SQRT_V
    names = (("W", "b") if output_circuit == "collapsed" else ("W_V", "b_V", "W_O", "b_O"))
    return {n: rng.uniform(-bound, bound, size=(V, V) if n.startswith("W") else (V,)) for n in names}


def fig3_logits(params: dict, context):
    """Logits ``(..., B, V)`` of the Figure-3 output circuit for contexts ``(..., B, V)``."""
    if "W" in params:
        return np.matmul(context, _tr(params["W"])) + params["b"][..., None, :]
    h = np.matmul(context, _tr(params["W_V"])) + params["b_V"][..., None, :]
    return np.matmul(h, _tr(params["W_O"])) + params["b_O"][..., None, :]


def fig3_loss_and_grad(params: dict, context, target, *, weights=None, grad: bool = True):
    r"""Mean cross-entropy of the Figure-3 model and its gradients.

    ``params`` from :func:`fig3_init` (optionally stacked ``(A, ...)`` over
    runs), ``context`` ``(..., B, V)`` from :func:`fixed_attention_context`,
    ``target`` ``(B,)`` or ``(..., B)`` ids.  Same conventions as
    :func:`loss_and_grad`.
    """
    context = np.asarray(context, dtype=float)
    target = np.broadcast_to(_as_ids(target, "target"), context.shape[:-1])
    collapsed = "W" in params
    if collapsed:
        z = np.matmul(context, _tr(params["W"])) + params["b"][..., None, :]
    else:
        h = np.matmul(context, _tr(params["W_V"])) + params["b_V"][..., None, :]
        z = np.matmul(h, _tr(params["W_O"])) + params["b_O"][..., None, :]
    loss, p = _cross_entropy(z, target, weights, grad)
    if not grad:
        return loss, None
    if collapsed:
        return loss, {"W": np.matmul(_tr(p), context), "b": p.sum(axis=-2)}
    gh = np.matmul(p, params["W_O"])
    return loss, {"W_V": np.matmul(_tr(gh), context), "b_V": gh.sum(axis=-2),
                  "W_O": np.matmul(_tr(p), h), "b_O": p.sum(axis=-2)}
