r"""The floating type of the Figure-2 SGD step: float64 (default, bitwise reproducible) or float32.

:class:`numerics.experiments.sgd.Fig2Config` ``dtype`` (the commands' ``--dtype``) chooses it.
With ``"float32"`` the parameters, the learning rates and every array of the step
(:func:`numerics.experiments.models.loss_and_grad` follows the dtype of its
parameters) are float32, as in the authors' PyTorch training: the matrix
products run as ``sgemm`` and every pass over the data moves half the bytes.
The random draws are the same (a seed's batches do not depend on the dtype); the
initial matrices are the float64 draws rounded to float32.  The per-step losses
are summed in float64 (as ``loss.item()`` does in the notebooks), and the
final (and marked) parameters are returned as float64, so that every measurement
after training (:mod:`numerics.experiments.measure`) is the float64 one, of the
float32-trained matrices.

A float32 run is another run: ``dtype`` is part of its settings and of its job's
identity (:meth:`~numerics.experiments.sgd.Fig2Config.to_dict` names it when it
is not float64), so ``--resume`` never mixes float32 and float64 results; a
float64 run's identity does not name its dtype.

How far float32 moves the results is measured by ``benchmarks/float32_deviation.py``
(the numbers are in ``docs/experiments.md``).

>>> import numpy as np
>>> params, rates = step_arrays({"W_OV": np.eye(2)[None]}, (0.01, np.full((1, 1, 1), 0.01), 1.0), "float32")
>>> params["W_OV"].dtype, rates[0].dtype, rates[1].dtype
(dtype('float32'), dtype('float32'), dtype('float32'))
>>> as_float64([{"params": params}])[0]["params"]["W_OV"].dtype
dtype('float64')
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["step_arrays", "as_float64", "check_rate", "check_rates"]


def step_arrays(params: dict, rates: tuple, dtype: str):
    """``(params, rates)`` in the step's ``dtype``: unchanged (the same objects) for
    float64; for float32 the stacked parameters converted and every rate too, a
    per-run array ``(S, 1, 1)`` or a float shared by the stack (a float32 scalar: then
    a run's rate arithmetic, e.g. ``lr_qk / (lr_ov sqrt(V))``, is the same float32
    arithmetic whether it is alone or stacked with runs of other rates).

    Parameters
    ----------
    params : dict
    rates : tuple
    dtype : {"float64", "float32"}

    Returns
    -------
    params : dict
    rates : tuple
    """
    dtype = np.dtype(dtype)
    if dtype == np.float64:
        return params, rates
    params = {k: v.astype(dtype) for k, v in params.items()}
    rates = tuple(np.asarray(r).astype(dtype)[()] for r in rates)
    return params, rates


def check_rate(name: str, value: float, dtype: str) -> None:
    """Refuse a rate or factor of a step that is not a normal number of ``dtype``, in
    ``[tiny, max]``: a subnormal one has lost digits, one that rounds to 0 learns nothing, and
    one that overflows makes the run's numbers NaN.

    Parameters
    ----------
    name : str
        What the value is, for the message.
    value : float
        A number (compared as a float: no cast to ``dtype``).
    dtype : {"float64", "float32"}

    Raises
    ------
    ValueError
        ``value`` outside ``[tiny, max]`` of ``dtype``; the message names it and the range.

    >>> check_rate("lr", 1e-320, "float64")
    Traceback (most recent call last):
    ...
    ValueError: lr must be in [2.2250738585072014e-308, 1.7976931348623157e+308] for the float64 step; got 1e-320
    """
    info = np.finfo(dtype)
    tiny, most = float(info.tiny), float(info.max)
    if not tiny <= value <= most:
        raise ValueError(f"{name} must be in [{tiny!r}, {most!r}] for the {dtype} step; got {value!r}")


def check_rates(lr_qk, lr_ov, qk_ramp, score_divisor, dtype: str, ratio=None, divisor=None) -> None:
    """Refuse learning rates the step cannot hold in ``dtype``: each rate, the largest QK rate
    ``lr_qk max(1, qk_ramp)`` and the factor ``lr_qk max(1, qk_ramp) / (lr_ov score_divisor)`` by which
    the step scales the OV step's gradient into the QK step
    (:func:`numerics.experiments.models.loss_and_grad`) must be normal numbers of ``dtype``: one that
    rounds to 0 or overflows would make the run's numbers NaN, a divergence that is not SGD's.

    Parameters
    ----------
    lr_qk, lr_ov, qk_ramp : float
        Positive numbers.
    score_divisor : float
        The sampled task's (:class:`numerics.experiments.task_sampling.SampledTask`).
    dtype : {"float64", "float32"}
    ratio : float, optional
        ``lr_qk / lr_ov`` of a sweep's run (which has no ramp: ``qk_ramp`` 1): the message then names ``lr_qk``
        as ``ratio R x lr_ov`` and the factor as ``ratio R / score_divisor``, each setting once.
    divisor : callable, optional
        ``divisor()`` is ``(expression, gamma)`` of :func:`numerics.experiments.task_sampling.divisor_parameter`,
        or None: a factor refused is then named as the value of ``expression`` (``b = 1e-40``) and its range at
        these rates. Called only for a refusal (finding the expression reads the task: a task file's, ~1 ms).

    Raises
    ------
    ValueError
        A rate or the factor outside ``[tiny, max]`` of ``dtype``; the message names it and the range.

    >>> check_rates(1.0, 1e-40, 1.0, 7.07, "float32")
    Traceback (most recent call last):
    ...
    ValueError: lr_ov must be in [1.1754943508222875e-38, 3.4028234663852886e+38] for the float32 step; got 1e-40
    """
    info = np.finfo(dtype)
    tiny, most = float(info.tiny), float(info.max)      # compared as floats: no cast of the value
    top = lr_qk * max(1.0, qk_ramp)
    below = lr_ov * score_divisor                       # 0 where it underflows: the factor is then beyond any float
    if ratio is None:
        checks = [("lr_ov", lr_ov), ("lr_qk", lr_qk), ("lr_qk x max(1, qk_ramp)", top)]
        factor = f"lr_qk x max(1, qk_ramp) / lr_ov / {score_divisor:.6g}"
    else:
        checks = [("lr_ov", lr_ov), (f"ratio {ratio!r} x lr_ov", lr_qk)]
        factor = f"ratio {ratio!r} / {score_divisor:.6g}"
    for name, value in checks:
        check_rate(name, value, dtype)
    try:
        check_rate(f"{factor} (the QK step's factor)", top / below if below else math.inf, dtype)
    except ValueError as exc:
        named = divisor() if divisor is not None else None
        if named is None:
            raise
        expression, gamma = named
        least = top / lr_ov * gamma                     # the expression's value at the factor 1
        raise ValueError(f"{expression} = {score_divisor * gamma:g} must be in [{least / most!r}, "
                         f"{least / tiny!r}] at these rates: {exc}") from None


def _params64(params):
    return None if params is None else {k: np.asarray(v).astype(np.float64, copy=False) for k, v in params.items()}


def as_float64(results: list) -> list:
    """The trainer's results with their final and marked parameters as float64 (the same
    arrays when they already are).

    Parameters
    ----------
    results : list of dict

    Returns
    -------
    list of dict
        ``results``, changed in place.
    """
    for r in results:
        r["params"] = _params64(r.get("params"))
        for mark in r.get("marks", {}).values():
            mark["params"] = _params64(mark["params"])
    return results
