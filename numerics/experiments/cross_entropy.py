r"""The weighted cross-entropy of the experiments' models and its gradient, on logits of either layout.

:func:`cross_entropy` is the loss of both the count model
(:func:`numerics.experiments.models.loss_and_grad`, on class-major logits
``(..., n_out, B)``, in the trainer's hot path) and the Figure-3 models
(:func:`numerics.experiments.fixed_attention.fig3_loss_and_grad`, on ``(..., B, V)``):
the number of classes is read from the logits' shape;
:func:`target_index` is the flat index of the targets it reads, which the trainer
precomputes once per epoch.

>>> import numpy as np
>>> V = 50
>>> z = np.zeros((1, V))                               # uniform over the V = 50 classes
>>> loss, g = cross_entropy(z, np.array([3]), None, True)
>>> bool(np.isclose(loss, np.log(V))), round(float(g[0, 3]), 12), round(float(g[0, 0]), 12)
(True, -0.98, 0.02)
"""
from __future__ import annotations

import numpy as np

__all__ = ["target_index", "log_softmax", "cross_entropy"]

# sums over the classes as products (one BLAS call; numpy's reductions cost twice as much here):
# ones vectors cached per (dtype, class count), in float64 or float32 (a float32 step,
# numerics.experiments.sgd dtype="float32": a float64 factor would turn the product into a float64
# one)
_F64, _F32 = np.dtype(np.float64), np.dtype(np.float32)
_ONES = {}
#: Underflow threshold of a sum of exponentials, by dtype: below it a row is recomputed with its own
#: maximum subtracted (float32: far enough above its smallest normal number, 1.2e-38).
UNDERFLOW = {_F64: 1e-280, _F32: 1e-30}


def ones(dtype, n: int):
    """Ones of ``dtype`` (float64 or float32; else float64) that sum over ``n`` classes as a
    product, made once per dtype and ``n``.

    Parameters
    ----------
    dtype : numpy.dtype
    n : int

    Returns
    -------
    column, row : ndarray, shapes (n, 1) and (1, n)
    """
    key = (_F32 if np.dtype(dtype) == _F32 else _F64, n)
    pair = _ONES.get(key)
    if pair is None:
        pair = _ONES[key] = (np.ones((n, 1), dtype=key[0]), np.ones((1, n), dtype=key[0]))
    return pair


def underflow(dtype) -> float:
    """``UNDERFLOW`` of ``dtype`` (1e-280 for float64 and any other dtype).

    Parameters
    ----------
    dtype : numpy.dtype

    Returns
    -------
    float
    """
    return UNDERFLOW.get(np.dtype(dtype), 1e-280)


# class axis -> (sums over the classes, keeping that axis as length 1; dropping that axis)
_CLASS_SUMS = {-1: (lambda x: np.matmul(x, ones(x.dtype, x.shape[-1])[0]), lambda x: x[..., 0]),
               -2: (lambda x: np.matmul(ones(x.dtype, x.shape[-2])[1], x), lambda x: x[..., 0, :])}


def target_index(target, class_axis, n_classes: int):
    """Flat index of the target entries of a C-contiguous logit array: ``x[..., b, target[..., b]]``
    of ``(..., B, V)`` (``class_axis=-1``) or ``x[..., target[..., b], b]`` of ``(..., V, B)``
    (``class_axis=-2``), with ``V = n_classes`` classes.

    Parameters
    ----------
    target : ndarray of int
    class_axis : {-1, -2}
    n_classes : int

    Returns
    -------
    ndarray of int
    """
    if class_axis == -1:
        return np.arange(target.size) * n_classes + target.reshape(-1)
    B = target.shape[-1]
    t = target.reshape(-1, B)
    return ((np.arange(t.shape[0]) * (n_classes * B))[:, None] + t * B + np.arange(B)).reshape(-1)


def log_softmax(z):
    """``z - logsumexp(z)`` over the last axis (shifted by each row's maximum).

    Parameters
    ----------
    z : ndarray

    Returns
    -------
    ndarray
    """
    zmax = z.max(axis=-1, keepdims=True)
    shifted = z - zmax
    lse = np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return shifted - lse


def cross_entropy(z, target, weights, grad: bool, tidx=None, scale=1.0, class_axis=-1):
    r"""Weighted cross-entropy of logits ``z`` at ``target`` ``(..., B)``:
    :math:`\sum_b w_b(\log\sum_v e^{z_{bv}} - z_{b,y_b})`, with :math:`w_b = 1/B`
    unless ``weights`` are given; and, if ``grad``, ``scale`` times its gradient
    with respect to ``z`` (else None), in the layout of ``z``.

    ``z`` is ``(..., B, V)`` (``class_axis=-1``) or class-major ``(..., V, B)``
    (``class_axis=-2``, the layout of :func:`~numerics.experiments.models.loss_and_grad`'s products), with any number
    ``V`` of classes (the authors' 50, or a task's outputs); it is
    overwritten.  ``tidx``, the flat index of the targets in ``z``
    (:func:`target_index`), may be passed precomputed by the trainer's hot path;
    otherwise it is computed from ``target`` (broadcast over stacked runs).

    Log-sum-exp is shifted by the largest logit of each run (one constant per
    stacked run, so a run's numbers do not depend on what it is stacked with; a
    reduction over whole runs is several times cheaper than one per row).  If
    a row of a run then underflows (its sum of exponentials is below 1e-280 in float64,
    ``UNDERFLOW``: its largest logit lies more than ~645 below the run's), every row of that run is
    shifted by its own maximum instead, from the logits as given: the shifted logits of a row
    far below the run's maximum have lost their differences (at a maximum of 1e297, every
    difference below 1e281).

    Parameters
    ----------
    z : ndarray
    target : ndarray of int
    weights : array_like or None
    grad : bool
    tidx : ndarray of int, optional
    scale : float or ndarray
    class_axis : {-1, -2}

    Returns
    -------
    loss : ndarray
        One per stacked run.
    grad : ndarray or None
    """
    sum_classes, drop = _CLASS_SUMS[class_axis]
    batch_shape = z.shape[:-1] if class_axis == -1 else z.shape[:-2] + z.shape[-1:]
    if tidx is None:
        if target.shape != batch_shape:                       # targets shared by stacked runs
            target = np.broadcast_to(target, batch_shape)
        tidx = target_index(target, class_axis, z.shape[class_axis])
    if not z.flags.c_contiguous:
        z = np.ascontiguousarray(z)
    lead = z.shape[:-2]
    runs = z.reshape(lead + (-1,))                            # a view: one row per run
    zmax = np.maximum.reduce(runs, axis=-1)[..., None]
    p = (runs - zmax).reshape(z.shape)                        # z is kept as given for the fallback below
    zy = p.take(tidx).reshape(batch_shape)
    np.exp(p, out=p)
    ssum = sum_classes(p)                                     # (..., B, 1) or (..., 1, B)
    # decided per run (a diverged run's nan must not hide another run's underflow)
    deep = np.minimum.reduce(ssum.reshape(lead + (-1,)), axis=-1) < underflow(ssum.dtype)
    if deep.any():
        # a row far below its run's maximum underflowed: shift every row of that run by its own max,
        # from the logits as given (z - zmax has lost the digits of a row far below zmax)
        if lead:
            runs[~deep] -= zmax[~deep]
            z[deep] -= z[deep].max(axis=class_axis, keepdims=True)
        else:
            z -= z.max(axis=class_axis, keepdims=True)
        zy = z.take(tidx).reshape(batch_shape)
        np.exp(z, out=p)
        ssum = sum_classes(p)
    per_seq = drop(np.log(ssum)) - zy
    B = batch_shape[-1]
    if weights is None:
        loss = np.add.reduce(per_seq, axis=-1) / B
    else:
        weights = np.asarray(weights, dtype=float)
        loss = (per_seq * weights).sum(axis=-1)
    if not grad:
        return loss, None
    # scale * w_b (softmax(z_b) - e_{y_b}), scaled in one pass
    if weights is None:
        p *= scale / (ssum * B)
        # a per-run scale (..., 1, 1) (stacked runs with their own rates): each run's own scale / B
        p.reshape(-1)[tidx] -= scale / B if np.ndim(scale) == 0 else np.repeat(np.reshape(scale, -1) / B, B)
    else:
        w = scale * weights
        p *= np.expand_dims(w, class_axis) / ssum
        p.reshape(-1)[tidx] -= np.broadcast_to(w, batch_shape).reshape(-1)
    return loss, p
