r"""Where a difference changes sign: the one bracketing search in a logarithm.

:func:`log_sign_change` serves the master curve's crossover
(:func:`numerics.dynamics.crossover.crossover_lambda`, in :math:`\log\Lambda`) and the
expected-count flow's (:func:`numerics.experiments.flow_crossover.flow_boundary`, in
:math:`\log r`).

>>> x, reason = log_sign_change(lambda x: x - 2.0, 1e-3, 1e3)
>>> round(x, 9), reason
(2.0, None)
>>> log_sign_change(lambda x: 1.0, 1.0, 10.0, name="ratio")[1]
'not reached within the ratio range searched (ratio in [1, 10])'
"""
from __future__ import annotations

import math

import numpy as np

from derivations.core.output import shown_float
from derivations.core.vocabulary import check_positive

from ..validation import check_int, check_positive_range

__all__ = ["log_sign_change"]


def log_sign_change(difference, low, high, *, xtol=1e-12, maxiter=100, name="Lambda"):
    r"""Where ``difference(x)`` changes sign on :math:`[\mathrm{low}, \mathrm{high}]`: a bracketing
    search (Brent's method, safeguarded by bisection) in :math:`\log x`: ``difference`` is
    called at most ``2 + maxiter`` times, once per point.

    Parameters
    ----------
    difference : callable
        ``x -> float`` (here: the self share minus the relevant share at the stopping loss); a
        value that is not finite is undefined.
    low, high : float
        The interval searched, :math:`0 < \mathrm{low} < \mathrm{high}`.
    xtol : float
        Absolute tolerance in :math:`\log x`.
    maxiter : int
        Most steps of the search between the ends.
    name : str
        What ``x`` is, for the reasons.

    Returns
    -------
    tuple
        ``(x, None)`` at a sign change (an exact zero at an end is returned as is), or
        ``(None, reason)``: ``"tie: ..."`` (zero at both ends), ``"not reached within the ratio
        range searched (...)"`` (one sign at both ends), ``"undefined at ..."`` (a value that is
        not finite) or ``"no convergence ..."``.

    Raises
    ------
    ValueError
        ``low, high`` not ``0 < low < high < inf``, ``xtol`` not finite and > 0, or
        ``maxiter`` not an integer >= 0.
    """
    from scipy.optimize import brentq
    low, high = check_positive_range("(low, high)", (low, high))
    xtol, maxiter = check_positive("xtol", xtol), check_int("maxiter", maxiter, 0)

    class Undefined(Exception):
        pass

    known = {}

    def g(t):               # each point once (the search evaluates its ends again)
        if t not in known:
            known[t] = float(difference(math.exp(t)))
        if not math.isfinite(known[t]):
            raise Undefined(f"undefined at {name} = {shown_float(math.exp(t))}")
        return known[t]
    lo, hi = math.log(low), math.log(high)
    try:
        d_lo, d_hi = g(lo), g(hi)
        if d_lo == 0.0 and d_hi == 0.0:
            return None, (f"tie: the self and relevant shares are equal at both ends of the range "
                          f"searched ({name} in [{shown_float(low)}, {shown_float(high)}])")
        for end, d in ((lo, d_lo), (hi, d_hi)):
            if d == 0.0:
                return math.exp(end), None
        if (d_lo < 0) == (d_hi < 0):
            return None, (f"not reached within the ratio range searched ({name} in [{shown_float(low)}, "
                          f"{shown_float(high)}])")
        root, run = brentq(g, lo, hi, xtol=xtol, rtol=4 * np.finfo(float).eps, maxiter=maxiter,
                           full_output=True, disp=False)
    except Undefined as exc:
        return None, str(exc)
    if not run.converged:
        return None, f"no convergence in {maxiter} steps ({name} near {shown_float(math.exp(root))})"
    return math.exp(root), None
