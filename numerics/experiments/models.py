r"""The experiments' count model of a sampled task, with analytic gradients.

One query (the last input token :math:`q`) attends over the attended positions
of a sequence (its context, and itself where the task puts the query in
context).  A task (:class:`numerics.experiments.task_sampling.SampledTask`) has
:math:`T` token types of which the first :math:`d` are embedded one-hot, scaled
by :math:`\nu` (``value_multiplier``), the others as zero vectors, and
:math:`n_{out}` outputs.  The score of a position holding type :math:`t` is
:math:`s_t = A_{qt}/\delta` for :math:`t < d` (``score_divisor`` :math:`\delta`;
:math:`\sqrt{50}` in the authors' task) and 0 otherwise, where

* collapsed attention (``CA``): :math:`A = W_{QK}`;
* factorized attention (``FA``): :math:`A = W_Q W_K^\top`, the convention of the whole package
  (:class:`numerics.model.TaskModel`, the derivations); the query and key ``Linear`` weights
  of the authors' notebooks are :math:`W_Q^\top` and :math:`W_K^\top` (what :func:`init_params`
  draws, and what the products read as stored).

A sequence enters only through its counts :math:`n_t`, so the attention mass on
type :math:`t` (summed over its positions) is

.. math::

    a_t = \frac{n_t e^{s_t}}{\sum_u n_u e^{s_u}},

computed with the row's largest score subtracted.  The context vector is
:math:`c = \nu\, a_{:d}`, the logits :math:`z = W_{OV} c` (collapsed output,
``CO``) or :math:`z = W_O W_V c` (factorized output, ``FO``) and the loss of a
sequence the cross-entropy :math:`\ell = \operatorname{logsumexp}(z) - z_y` over
the :math:`n_{out}` outputs.  A batch loss is :math:`\sum_b w_b \ell_b` with
weights :math:`w_b = 1/B` by default (PyTorch's mean reduction).  Shapes
(:func:`param_shapes`): ``W_QK``, ``W_Q``, ``W_K``, ``W_V`` :math:`d\times d`,
``W_OV``, ``W_O`` :math:`n_{out}\times d` (all :math:`50\times 50` in the
authors' task).

Gradients (per sequence, times :math:`w_b`, summed over the batch):
:math:`g_z = \operatorname{softmax}(z) - e_y`;
:math:`\partial W_{OV} = g_z c^\top`, or :math:`\partial W_O = g_z (W_V c)^\top`,
:math:`\partial W_V = W_O^\top g_z c^\top`; :math:`g_a = \nu\, W_{OV}^\top g_z` (zero
beyond :math:`d`); :math:`g_{s,t} = a_t (g_{a,t} - a^\top g_a)`;
:math:`\partial A = e_q\, g_s^\top/\delta`; and :math:`\partial W_Q = \partial A\, W_K`,
:math:`\partial W_K = \partial A^\top W_Q`.

Counts may be real-valued (:func:`numerics.experiments.task_sampling.expected_counts`: the
expected-count, population-limit model).

Parameters are a ``dict`` of arrays (keys :func:`param_keys`), unstacked or stacked
``(S, ...)`` over runs (seeds); counts ``(B, T)`` or ``(S, B, T)``, ids ``(B,)`` or
``(S, B)``.  Every operation acts slice by slice on the leading axis, so the numbers of
a run do not depend on the runs stacked with it.  :func:`loss_and_grad` works on
class-major activations ``(..., T, B)``: every product reads its factors as stored or as
a plain transpose of a weight, never a right-hand factor transposed (1.5 times the cost).

Example: population loss and gradients of CACO at the authors' initialization

>>> import numpy as np
>>> from numerics.experiments.task_sampling import AUTHORS, expected_counts
>>> params = init_params(AUTHORS, "CACO", "authors", np.random.default_rng(0))
>>> loss, grads = loss_and_grad(AUTHORS, params, expected_counts(AUTHORS, 64), AUTHORS.query, AUTHORS.label)
>>> float(loss) > 3.8, sorted(grads)
(True, ['W_OV', 'W_QK'])
"""
from __future__ import annotations

import math

import numpy as np

from derivations.core.vocabulary import check_parameterization as _check_parameterization
from derivations.core.vocabulary import check_positive as _check_positive

from .cross_entropy import (cross_entropy as _cross_entropy, log_softmax as _log_softmax, ones as _ones,
                            underflow as _underflow)

__all__ = ["INITS", "IDENTITY_SCALE", "param_keys", "param_shapes", "init_kinds", "draws", "init_params",
           "forward", "query_onehot_t", "loss_and_grad"]

#: Initializations: the notebooks' per-parameterization choice, 1e-6·I everywhere, PyTorch uniform.
INITS = ("authors", "identity", "uniform")

_KEYS = {"CA": ("W_QK",), "FA": ("W_Q", "W_K"), "CO": ("W_OV",), "FO": ("W_O", "W_V")}
#: Initialization in the notebooks' row-1 runs: key -> "uniform" or "identity".
_AUTHORS_INIT = {
    "FAFO": {"W_Q": "uniform", "W_K": "uniform", "W_O": "identity", "W_V": "identity"},
    "FACO": {"W_Q": "identity", "W_K": "identity", "W_OV": "identity"},
    "CAFO": {"W_QK": "identity", "W_O": "identity", "W_V": "identity"},
    "CACO": {"W_QK": "uniform", "W_OV": "uniform"},
}
#: Scale of the identity initialization: ``1e-6 I`` as in the notebooks.
IDENTITY_SCALE = 1e-6


def param_keys(parameterization: str) -> tuple:
    """Parameter names of a parameterization, QK circuit first.

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}

    Returns
    -------
    tuple of str

    Raises
    ------
    ValueError
        Unknown parameterization.

    >>> param_keys("FAFO")
    ('W_Q', 'W_K', 'W_O', 'W_V')
    """
    p = _check_parameterization(parameterization)
    return _KEYS[p[:2]] + _KEYS[p[2:]]


def param_shapes(st, parameterization: str) -> dict:
    """``{key: shape}`` of a task's matrices, in :func:`param_keys` order.

    Parameters
    ----------
    st : numerics.experiments.task_sampling.SampledTask
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}

    Returns
    -------
    dict

    >>> from numerics.experiments.task_sampling import sampled_task
    >>> param_shapes(sampled_task("paper", {"M": 3}), "FACO")
    {'W_Q': (6, 6), 'W_K': (6, 6), 'W_OV': (3, 6)}
    """
    d, n_out = st.d, st.n_out
    shapes = {"W_QK": (d, d), "W_Q": (d, d), "W_K": (d, d), "W_OV": (n_out, d), "W_O": (n_out, d),
              "W_V": (d, d)}
    return {k: shapes[k] for k in param_keys(parameterization)}


def init_kinds(parameterization: str, init: str = "authors") -> dict:
    """How :func:`init_params` builds each matrix.

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}
    init : {"authors", "identity", "uniform"}

    Returns
    -------
    dict
        ``{key: "uniform" or "identity"}``.

    Raises
    ------
    ValueError
        Unknown parameterization or initialization.

    >>> init_kinds("FAFO")
    {'W_Q': 'uniform', 'W_K': 'uniform', 'W_O': 'identity', 'W_V': 'identity'}
    """
    keys = param_keys(parameterization)
    if init not in INITS:
        raise ValueError(f"init must be one of {INITS}, got {init!r}")
    if init == "authors":
        return dict(_AUTHORS_INIT[parameterization])
    return dict.fromkeys(keys, init)


def draws(parameterization, init) -> bool:
    """Whether the initialization draws random matrices (else every seed starts alike).

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}
    init : {"authors", "identity", "uniform"}

    Returns
    -------
    bool

    >>> draws("CACO", "authors"), draws("FACO", "authors")
    (True, False)
    """
    return "uniform" in init_kinds(parameterization, init).values()


def init_params(st, parameterization: str, init: str = "authors", rng: np.random.Generator | None = None, *,
                identity_scale: float = IDENTITY_SCALE) -> dict:
    r"""Initial parameters of one run: the one builder of a seed's initial matrices, for SGD
    (:func:`numerics.experiments.sgd.train_fig2` passes ``numpy.random.default_rng(seed)``, then
    trains from the same generator) and for the theory (:func:`numerics.experiments.theory.init_matrices`).

    Parameters
    ----------
    st : numerics.experiments.task_sampling.SampledTask
        The task (:func:`param_shapes`; an identity is rectangular where the shape is).
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}
    init : {"authors", "identity", "uniform"}
        ``"authors"``: the notebooks' row-1 choice (FAFO :math:`W_Q, W_K` uniform and
        :math:`W_O = W_V = 10^{-6} I`; FACO and CAFO all :math:`10^{-6} I`; CACO uniform);
        ``"identity"``: every matrix :math:`10^{-6} I`; ``"uniform"``: every matrix i.i.d.
        :math:`U(-1/\sqrt{c}, 1/\sqrt{c})` for :math:`c` columns (PyTorch's default for a
        ``Linear`` with :math:`c` inputs).  Uniform matrices are drawn in the order of
        :func:`param_keys`.  :math:`W_Q` and :math:`W_K` are transposed views of the matrices
        drawn or built (the notebooks' ``Linear`` weights, :math:`W_{QK} = W_Q W_K^\top`):
        stacked runs keep that layout, and :func:`loss_and_grad` reads the weights as stored.
    rng : numpy.random.Generator, optional
        Required when a matrix is uniform.
    identity_scale : float
        Replaces :math:`10^{-6}` (the theory offers the scale as an option); finite and > 0.

    Returns
    -------
    dict

    Raises
    ------
    ValueError
        Unknown parameterization or initialization, no ``rng`` for a uniform matrix, or an
        ``identity_scale`` that is not a finite number > 0.
    """
    kinds = init_kinds(parameterization, init)
    identity_scale = _check_positive("identity_scale", identity_scale)
    if rng is None and "uniform" in kinds.values():
        raise ValueError("rng (a numpy.random.Generator) is required for a uniform initialization")
    shapes = param_shapes(st, parameterization)
    out = {}
    for key in param_keys(parameterization):
        # W_Q, W_K: transposed views of the Linear weights, which the products read as stored
        linear = key in ("W_Q", "W_K")
        shape = shapes[key][::-1] if linear else shapes[key]
        if kinds[key] == "uniform":
            bound = 1.0 / math.sqrt(shape[1])
            w = rng.uniform(-bound, bound, size=shape)
        else:
            w = identity_scale * np.eye(*shape)
        out[key] = w.T if linear else w
    return out


def _score_table(params, ids):
    r"""Rows ``A[ids, :]`` of the score matrix, ``(..., U, d)``, for the sorted distinct
    query ids ``ids`` (an index array, or a slice when they are consecutive); also, for
    factorized attention, the transposed factors ``(W_Q[ids, :]^T, W_K^T)``, ``(..., d, U)`` and
    ``(..., d, d)`` (the second C-contiguous), else None.

    Every sequence with query ``q`` uses row ``A[q, :]``, so only the ``U`` distinct
    rows (4 in the authors' task) are computed and exponentiated.  The factorized
    circuit's products read the transposes (the notebooks' ``Linear`` weights) as
    stored: :math:`A_{ids,:} = (W_Q^\top)_{:,ids}^\top\, W_K^\top`."""
    if "W_QK" in params:
        return params["W_QK"][..., ids, :], None
    lin_q = params["W_Q"].mT[..., :, ids]                                 # (..., d, U)
    lin_k = np.ascontiguousarray(params["W_K"].mT)
    return np.matmul(lin_q.mT, lin_k), (lin_q, lin_k)


def _query_slots(query, ids, lead=None):
    """Flat row index into the score table ``lead + (U, T)`` viewed as ``(-1, T)``: the
    row ``A[q_b, :]`` of every sequence ``b``, shape ``lead + (B,)`` (``lead`` default:
    the leading shape of ``query``; a 1-D ``query`` is shared by all stacked runs)."""
    lead = query.shape[:-1] if lead is None else tuple(lead)
    lut = np.zeros(int(ids[-1]) + 1, dtype=np.intp)
    lut[ids] = np.arange(ids.size)
    slot = lut[query]
    if lead:
        slot = slot + (np.arange(math.prod(lead)) * ids.size).reshape(lead + (1,))
    return slot


def _attention(st, table, counts, slot):
    """Token attention masses ``a`` (..., B, T) from the score rows ``table`` (..., U, d) of
    the distinct queries, counts, and each sequence's row ``slot`` (..., B) of the table
    viewed as ``(-1, T)`` (``_query_slots``).

    The largest score of the row is subtracted before exponentiating (done once per
    distinct query); a row whose maximum sits on an absent token so far above the
    present ones that their terms would underflow (normalizer below
    :func:`~numerics.experiments.cross_entropy.underflow`) is recomputed with the maximum over
    present tokens only (row by row, in the runs where it happens, so stacking is irrelevant).
    """
    T = st.T
    if st.d < T:                                    # the types beyond d score 0
        table = np.concatenate([table, np.zeros(table.shape[:-1] + (T - st.d,), table.dtype)], axis=-1)
    e = table - np.maximum.reduce(table, axis=-1)[..., None]
    e *= 1.0 / st.score_divisor
    np.exp(e, out=e)
    e = e.reshape(-1, T).take(slot, axis=0)
    e *= counts
    z = np.matmul(e, _ones(e.dtype, T)[0])                # row sums (..., B, 1), one BLAS call
    # decided run by run: a run's nan (diverged) must not hide another run's underflow, nor the
    # reverse (the numbers of a run stay those of the run alone)
    tiny = _underflow(z.dtype)
    deep = np.minimum.reduce(z.reshape(z.shape[:-2] + (-1,)), axis=-1) < tiny
    if deep.any():
        bad = (z < tiny) & deep[..., None, None]
        rows = np.take(table.reshape(-1, T), slot, axis=0)
        s = np.where(counts > 0, rows, -np.inf)
        s = (s - s.max(axis=-1, keepdims=True)) * (1.0 / st.score_divisor)
        e2 = (np.exp(s) * counts).astype(e.dtype, copy=False)     # (float counts: e's dtype)
        e = np.where(bad, e2, e)
        z = np.where(bad, e2.sum(axis=-1, keepdims=True), z)
    e *= 1.0 / z
    return e


def _context(st, aT):
    """The class-major context ``(..., d, B)`` of the attention ``aT`` ``(..., T, B)``:
    ``value_multiplier * aT[:d]`` (``aT`` itself when that changes nothing)."""
    cT = aT if st.d == st.T else aT[..., :st.d, :]
    return cT if st.value_multiplier == 1.0 else st.value_multiplier * cT


def _as_ids(x, name):
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.integer):
        raise ValueError(f"{name} must hold integer token ids, got dtype {x.dtype}")
    return x


def forward(st, params: dict, counts, query) -> dict:
    """Forward pass of the count model.

    Parameters
    ----------
    st : numerics.experiments.task_sampling.SampledTask
    params : dict
        Unstacked or stacked matrices (:func:`param_shapes`).
    counts : array_like, shape (..., B, T)
    query : array_like of int, shape (..., B)

    Returns
    -------
    dict
        ``attention`` (token attention masses ``a``, ``(..., B, T)``), ``position_attention``
        (the attention of one position holding each token, ``a_t / n_t``, 0 where
        ``n_t = 0``), ``logits`` and ``log_probs`` (``(..., B, n_out)``).

    Raises
    ------
    ValueError
        Query ids that are not integers.
    """
    counts = np.asarray(counts, dtype=float)
    query = _as_ids(query, "query")
    ids = np.unique(query)
    table, _ = _score_table(params, ids)
    a = _attention(st, table, counts, _query_slots(query, ids, table.shape[:-2]))
    c = _context(st, a.mT).mT
    if "W_OV" in params:
        z = np.matmul(c, params["W_OV"].mT)
    else:
        z = np.matmul(np.matmul(c, params["W_V"].mT), params["W_O"].mT)
    with np.errstate(divide="ignore", invalid="ignore"):
        pos = np.where(counts > 0, a / counts, 0.0)
    return {"attention": a, "position_attention": pos, "logits": z, "log_probs": _log_softmax(z)}


def query_onehot_t(query, ids) -> np.ndarray:
    """``(..., U, B)`` float matrix ``[ids[u] == query[..., b]]``: the transposed one-hot
    matrix of the query ids restricted to the rows ``ids``.

    The trainer precomputes it for a whole epoch with ``ids`` the distinct queries of the
    epoch (4 in the authors' task), so the gradient of the score matrix costs ``U x B x d``
    instead of ``d x B x d`` operations; rows outside ``ids`` are exactly zero either way.

    Parameters
    ----------
    query : array_like of int, shape (..., B)
    ids : array_like of int, shape (U,)

    Returns
    -------
    ndarray
    """
    ids = np.asarray(ids)
    return (np.asarray(query)[..., None, :] == ids[:, None]).astype(float)
def _ov_grads(params, grads, gzT, c, hT):
    """The output-circuit part of :func:`loss_and_grad`'s backward pass, into ``grads``
    (from ``gzT`` (..., n_out, B), the gradient of the class-major logits, and the context
    ``c`` (..., B, d)); returns the gradient of the context ``gcT`` (..., d, B), a fresh array."""
    if hT is None:
        grads["W_OV"] = np.matmul(gzT, c)
        return np.matmul(params["W_OV"].mT, gzT)
    grads["W_O"] = np.matmul(gzT, np.ascontiguousarray(hT.mT))
    ghT = np.matmul(params["W_O"].mT, gzT)
    grads["W_V"] = np.matmul(ghT, c)
    return np.matmul(params["W_V"].mT, ghT)


def _qk_grads(st, grads, gcT, aT, onehot_t, ids, factors, scale, sparse):
    """The query-key part of :func:`loss_and_grad`'s backward pass, into ``grads``: from
    ``gcT`` (..., d, B), the gradient of the context (overwritten), to ``scale`` times the
    gradient of the score matrix's rows ``ids`` and of ``W_QK`` or ``W_Q, W_K``."""
    gsT = gcT                                                 # (a fresh array: updated in place)
    if st.value_multiplier != 1.0:
        gsT *= st.value_multiplier                            # g_a (zero beyond d)
    adT = aT if st.d == st.T else aT[..., :st.d, :]
    gsT -= np.matmul(_ones(adT.dtype, st.d)[1], adT * gsT)   # g_a - a.g_a
    gsT *= adT                                                # delta dL/dA[q, :] per sequence, (..., d, B)
    # dL/dA = E^T gs / delta (E: one-hot queries): only the rows of the distinct queries are non-zero
    dA_rows = np.matmul(onehot_t.astype(gsT.dtype, copy=False), gsT.mT)   # (..., U, d)
    dA_rows *= scale
    if factors is None:
        grads["W_QK"] = dA_rows
    else:
        # dW_Q = dA W_K (non-zero in the rows ids only), dW_K = dA^T W_Q = dA_rows^T W_Q[ids, :],
        # as the transposes of W_K^T dA_rows^T and W_Q[ids, :]^T dA_rows
        lin_q, lin_k = factors
        grads["W_Q"] = np.matmul(lin_k, dA_rows.mT).mT           # (..., U, d)
        grads["W_K"] = np.matmul(lin_q, dA_rows).mT
    if not sparse:
        qk = "W_QK" if factors is None else "W_Q"
        full = np.zeros(gsT.shape[:-2] + (st.d, st.d), dtype=gsT.dtype)
        full[..., ids, :] = grads[qk]
        grads[qk] = full


def loss_and_grad(st, params: dict, counts, query, target, *, weights=None, grad: bool = True,
                  _query_set=None, _sparse_qk=False, _rates=None):
    r"""Batch loss and its gradients for the count model.

    Parameters
    ----------
    st : numerics.experiments.task_sampling.SampledTask
    params : dict
        Parameters of one parameterization (:func:`param_keys`, :func:`param_shapes`),
        unstacked or stacked ``(S, ...)``.
    counts : array_like, ``(..., B, T)``
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
        :func:`query_onehot_t`, ``_query_slots`` and the targets' flat index
        in the class-major logits, :func:`~numerics.experiments.cross_entropy.target_index`
        ``(target, class_axis=-2, n_classes=n_out)``.
    _sparse_qk : bool
        Private (the trainer's hot path): return only the non-zero block of the
        query-side gradient, the rows ``ids`` of ``W_QK`` or ``W_Q``, ``(..., U, d)``,
        ``ids = np.unique(query)``.
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
    table, factors = _score_table(params, ids)
    if _query_set is None:
        slot = _query_slots(query, ids, table.shape[:-2])
    a = _attention(st, table, counts, slot)
    # the output circuit works class-major, on transposed activations (..., T, B): then every
    # product is W @ x, W^T @ x or x @ y, never a right factor read transposed (x @ W^T),
    # which costs BLAS half as much again at these sizes
    aT = np.ascontiguousarray(a.mT)
    cT = _context(st, aT)
    if "W_OV" in params:
        hT = None
        zT = np.matmul(params["W_OV"], cT)
    else:
        hT = np.matmul(params["W_V"], cT)
        zT = np.matmul(params["W_O"], hT)
    lr_qk, lr_ov = (1.0, 1.0) if _rates is None else _rates
    # gzT: lr_ov dL/dz, (..., n_out, B)
    loss, gzT = _cross_entropy(zT, target, weights, grad, tidx, lr_ov, class_axis=-2)
    if not grad:
        return loss, None
    grads = {}
    gcT = _ov_grads(params, grads, gzT, a if cT is aT else cT.mT, hT)
    qk_scale = 1.0 / st.score_divisor if _rates is None else lr_qk / (lr_ov * st.score_divisor)
    _qk_grads(st, grads, gcT, aT, onehot_t, ids, factors, qk_scale, _sparse_qk)
    return loss, {k: grads[k] for k in params}


