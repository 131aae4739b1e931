r"""The Figure-2 count model on a sampled engine task, with analytic gradients, SGD epochs and measurements.

The authors' model (:mod:`numerics.experiments.models`) works on a one-hot
vocabulary of 50 ids with square :math:`50\times 50` matrices.  A task of the
engine (:class:`numerics.experiments.task_sampling.SampledTask`) has :math:`T`
token types of which the first :math:`d` are embedded as
:math:`e_t/\sqrt b`, the others as zero vectors, :math:`n_{out}` outputs and
a score scale :math:`\gamma`.  Its count model, for counts :math:`n \in
\mathbb R_{\ge 0}^T` of the attended positions and query type :math:`q`:

.. math::

    s_t = \sigma\, A_{qt}\ (t < d), \quad s_t = 0\ (t \ge d), \qquad
    a_t = \frac{n_t e^{s_t}}{\sum_u n_u e^{s_u}}, \qquad
    c = \nu\, a_{:d}, \qquad z = W_{OV} c \ \text{or}\ W_O W_V c,

with :math:`\sigma = \gamma / b` (``score_multiplier``), :math:`\nu =
1/\sqrt b` (``value_multiplier``), :math:`A = W_{QK}` (collapsed) or
:math:`W_Q^\top W_K` (factorized, the SGD model's convention), and the loss
:math:`\ell = \operatorname{logsumexp}(z) - z_y` over the :math:`n_{out}`
outputs.  Shapes (:func:`param_shapes`): ``W_QK``, ``W_Q``, ``W_K``, ``W_V``
:math:`d\times d` (factorized circuits have :math:`d` hidden units), ``W_OV``,
``W_O`` :math:`n_{out}\times d`.  Gradients (per sequence, times its weight):
:math:`g_z = \operatorname{softmax}(z) - e_y`; :math:`\partial W_{OV} = g_z c^\top`
(or :math:`\partial W_O = g_z (W_V c)^\top`, :math:`\partial W_V = W_O^\top g_z c^\top`);
:math:`g_a = \nu\,(W_{OV}^\top g_z, 0)`; :math:`g_{s,t} = a_t (g_{a,t} - a^\top g_a)`;
:math:`\partial A = \sigma\, e_q\, g_{s,:d}^\top`; :math:`\partial W_Q = W_K \partial A^\top`,
:math:`\partial W_K = W_Q \partial A`.  The softmax subtracts the largest score of the
*present* types.  Parameters may be stacked ``(S, ...)`` over runs; every operation acts
slice by slice on the leading axis.

:func:`train_epoch` is the task's counterpart of the trainer's epoch
(:func:`numerics.experiments.sgd._train` calls it for a task other than the
authors'): each run draws its batches from its own generator, in the same order
as the authors' sampler (classes, then tickets).  :func:`evaluate` measures a
trained model as :func:`numerics.experiments.measure.evaluate_fig2` does.

>>> import numpy as np
>>> from numerics.experiments import task_sampling
>>> st = task_sampling.sampled_task("paper", {"M": 3})
>>> param_shapes(st, "FACO")
{'W_Q': (6, 6), 'W_K': (6, 6), 'W_OV': (3, 6)}
>>> p = {k: np.zeros(s) for k, s in param_shapes(st, "CACO").items()}
>>> loss, g = loss_and_grad(st, p, task_sampling.expected_counts(st, 57), st.query, st.label)
>>> round(float(loss), 12) == round(float(np.log(3)), 12)
True
"""
from __future__ import annotations

import numpy as np

from . import models
from .cross_entropy import cross_entropy as _cross_entropy, log_softmax as _log_softmax
from .models import _logits, _tr

__all__ = ["param_shapes", "forward", "loss_and_grad", "train_epoch", "evaluate"]


def param_shapes(st, parameterization: str) -> dict:
    """``{key: shape}`` of the task's matrices, in :func:`models.param_keys` order."""
    d, n_out = st.d, st.n_out
    shapes = {"W_QK": (d, d), "W_Q": (d, d), "W_K": (d, d), "W_OV": (n_out, d), "W_O": (n_out, d),
              "W_V": (d, d)}
    return {k: shapes[k] for k in models.param_keys(parameterization)}


def _score_matrix(params):
    if "W_QK" in params:
        return params["W_QK"]
    return np.matmul(_tr(params["W_Q"]), params["W_K"])


def _attention(st, A, counts, query):
    """Token attention masses ``(..., B, T)`` and the scores ``(..., B, T)``."""
    if A.ndim == 2:
        rows = A[query]                                                  # (..., B, d)
    else:
        q = np.broadcast_to(query, A.shape[:-2] + query.shape[-1:])[..., None]
        rows = np.take_along_axis(A, np.broadcast_to(q, q.shape[:-1] + A.shape[-1:]), axis=-2)
    s = np.zeros(rows.shape[:-1] + (st.T,))
    s[..., :st.d] = st.score_multiplier * rows
    present = counts > 0
    top = np.where(present, s, -np.inf).max(axis=-1, keepdims=True)
    e = np.where(present, np.exp(np.where(present, s - top, 0.0)), 0.0) * counts
    return e / e.sum(axis=-1, keepdims=True)


def forward(st, params: dict, counts, query) -> dict:
    """``attention`` ``(..., B, T)``, ``position_attention`` (``a_t / n_t``, 0 where absent),
    ``logits`` and ``log_probs`` ``(..., B, n_out)``."""
    counts = np.asarray(counts, dtype=float)
    query = np.asarray(query)
    a = _attention(st, _score_matrix(params), counts, query)
    z, _ = _logits(params, st.value_multiplier * a[..., :st.d])
    logp = _log_softmax(z)
    with np.errstate(divide="ignore", invalid="ignore"):
        pos = np.where(counts > 0, a / counts, 0.0)
    return {"attention": a, "position_attention": pos, "logits": z, "log_probs": logp}


def loss_and_grad(st, params: dict, counts, query, target, *, weights=None, grad: bool = True):
    r"""Weighted batch loss :math:`\sum_b w_b \ell_b` (default :math:`w_b = 1/B`), one per stacked
    run, and its gradients (same keys and shapes as ``params``); see the module docstring."""
    counts = np.asarray(counts, dtype=float)
    query, target = np.asarray(query), np.asarray(target)
    A = _score_matrix(params)
    a = _attention(st, A, counts, query)
    c = st.value_multiplier * a[..., :st.d]
    z, h = _logits(params, c)
    loss, gz = _cross_entropy(z, target, weights, grad)            # gz: w (softmax(z) - e_y)
    if not grad:
        return loss, None
    grads = {}
    if h is None:
        grads["W_OV"] = np.matmul(_tr(gz), c)
        gc = np.matmul(gz, params["W_OV"])
    else:
        grads["W_O"] = np.matmul(_tr(gz), h)
        gh = np.matmul(gz, params["W_O"])
        grads["W_V"] = np.matmul(_tr(gh), c)
        gc = np.matmul(gh, params["W_V"])
    ga = st.value_multiplier * gc                                  # (..., B, d); zero beyond d
    ad = a[..., :st.d]
    gs = ad * (ga - (ad * ga).sum(axis=-1, keepdims=True))          # (..., B, d)
    onehot = (query[..., None] == np.arange(st.d)).astype(float)   # (..., B, d)
    dA = st.score_multiplier * np.matmul(_tr(np.broadcast_to(onehot, gs.shape)), gs)
    if "W_QK" in params:
        grads["W_QK"] = dA
    else:
        grads["W_Q"] = np.matmul(params["W_K"], _tr(dA))
        grads["W_K"] = np.matmul(params["W_Q"], dA)
    return loss, {k: grads[k] for k in params}


def train_epoch(st, params, rngs, active, k_this, c, rates, step, scheduled):
    """``k_this`` SGD steps of the runs ``active`` (each drawing from its generator ``rngs[i]``),
    in place, with the trainer's update rule and QK ramp; returns the ``(S, K)`` step losses."""
    from . import sgd, task_sampling

    draws = [task_sampling.draw_tickets(st, rngs[i], k_this, c.batch_size, c.seq_len) for i in active]
    batch = task_sampling.batch_from_tickets(st, np.stack([d[0] for d in draws], axis=1),
                                             np.stack([d[1] for d in draws], axis=1))
    losses = np.empty((len(active), k_this))
    lr_qk0, lr_ov, ramp = rates
    for k, lr_qk in enumerate(sgd.qk_rates(lr_qk0, ramp, step, scheduled, k_this)):
        loss, grads = loss_and_grad(st, params, batch.counts[k], batch.query[k], batch.target[k])
        losses[:, k] = loss
        for key, g in grads.items():
            params[key] -= (lr_qk if models.circuit_of(key) == "QK" else lr_ov) * g
    return losses


def evaluate(st, params: dict, rng, eval_batches: int = 200, batch_size: int = 32, seq_len: int = 64) -> dict:
    """Per-sequence measurements of one trained model on fresh batches, the keys of
    :func:`numerics.experiments.measure.evaluate_fig2` (relevant types: the class's
    relevant types; separability: the largest per-position attention of a present
    relevant type minus the smallest of a present other type), and the proxies of
    :mod:`numerics.experiments.proxies` (the query's position attended where the task says so)."""
    from . import measure, proxies, task_sampling

    b = task_sampling.sample_batches(st, rng, eval_batches, batch_size, seq_len)
    counts, query, target = b.counts.reshape(-1, st.T), b.query.reshape(-1), b.target.reshape(-1)
    relevant = st.relevant[b.label_class.reshape(-1)]
    fwd = forward(st, params, counts, query)
    out = measure.measurements(fwd, counts, query, target, relevant)
    out.update(proxies.measure(fwd, counts, query, target, relevant, lambda c, q: forward(st, params, c, q),
                               query_attended=st.query_in_context))
    return out
