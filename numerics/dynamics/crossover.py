r"""Where attention goes: the master curve of the CACO flow and the crossover ratio.

For a task of the ``query-copies`` shape (the query's token :math:`s` times in its context,
its own position included; :math:`m` relevant copies over :math:`R` types of :math:`m/R`
copies; :math:`n` zero-embedded irrelevant tokens) the CACO flow from zero, rescaled as
:func:`derivations.tasks.crossover.master_flow` derives it, is

.. math::

    \frac{dY_q}{d\sigma} = a_q, \quad \frac{dY_r}{d\sigma} = \frac{a_r}{R}, \quad
    \frac{dx_q}{d\sigma} = \Lambda\, a_q (Y_q - U), \quad
    \frac{dx_r}{d\sigma} = \Lambda\, \frac{a_r}{R} (Y_r - U), \quad U = a_q Y_q + a_r Y_r,

with :math:`a_q = s e^{x_q}/Z`, :math:`a_r = m e^{x_r}/Z`, :math:`Z = s e^{x_q} + m e^{x_r} +
n`, from zero to :math:`U = 1`, and :math:`\Lambda = r (M - 1) \ell(L)^2/(M b)`,
:math:`\ell(L) = \log((M - 1)/(e^L - 1))`. The shares at the stopping loss are functions of
:math:`\Lambda` alone (:func:`master_shares`). The paper's task is :math:`s = 0`,
``query-in-context`` is :math:`s = R = 1`.

The crossover :math:`\Lambda^*` (self share = relevant share at the stopping loss) exists
exactly inside the window :math:`m/R < s < m` (:func:`window_reason`); :func:`crossover_lambda`
finds it by a bracketing search in :math:`\log\Lambda`, and :func:`boundary` turns it into
:math:`r^* = \Lambda^* M b / ((M - 1)\ell(L)^2)` for every stopping loss, class count and
embedding scale. This holds for CACO from zero only (see the derivation's module).

Each function takes the task as a built-in name, a task file (.toml) or a
:class:`~derivations.engine.task.Task` with its parameter values (resolved by
:func:`~numerics.dynamics.task_shape`), or, with no task, the shape's numbers ``s, m, n, R`` (and ``M, b``)
themselves. :func:`master_lambda` is :math:`\Lambda` of any task at a ratio and a loss (the
coordinate the records of ``print_dynamics --loss`` and ``predict`` carry), and
:func:`~numerics.dynamics.sign_change.log_sign_change` the one bracketing search in a logarithm
that :func:`crossover_lambda` and the expected-count flow's crossover
(:mod:`numerics.experiments.flow_crossover`) share.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from derivations.core.output import shown_float
from derivations.core.vocabulary import check_positive

from ..validation import (as_numbers, check_in_range, check_positive_range, check_positive_values, check_result,
                          check_target_losses, shown_number)
from .sign_change import log_sign_change

__all__ = ["margin_at_loss", "lambda_of_ratio", "ratio_of_lambda", "master_lambda", "master_shares",
           "window_reason", "crossover_lambda", "boundary", "RATIO_RANGE", "LAMBDA_MAX"]

#: The ratio range :func:`boundary` searches by default.
RATIO_RANGE = (1e-4, 1e6)
_RTOL, _ATOL = 1e-10, 1e-12
#: The largest Lambda the master flow is integrated at (tested to here against the paper's closed form; it
#: answers in 0.03 s up to 1e18 at the shapes measured, and LSODA fails at 1e20).
LAMBDA_MAX = 1e14
_LAMBDA_WHY = "(the master flow answers in bounded time up to there)"
#: Up to this Lambda the master flow takes the gaps Y - U as the differences derived (:func:`_rhs`): their
#: rounding, about Lambda eps, stays below the integration's rtol. Above it, a form without the cancellation.
DIFFERENCE_MAX = 1e6
#: The shape's numbers when no task is named: the defaults of ``query-copies``.
SHAPE_DEFAULTS = {"s": 1.0, "m": 5.0, "n": 50.0, "R": 1.0, "M": 20.0, "b": 50.0}


def margin_at_loss(loss, M):
    r""":math:`\ell(L) = \log((M - 1)/(e^L - 1))`, the margin where the loss is ``loss``, checked
    (:func:`numerics.dynamics.closed_form.margin`: at 30 digits where the doubles cancel, near :math:`\log M`).

    Parameters
    ----------
    loss : array_like
        Stopping loss, in :math:`(0, \log M)`.
    M : array_like
        Number of classes (> 1).

    Returns
    -------
    ndarray

    Raises
    ------
    ValueError
        ``M`` not finite and above 1 or ``loss`` outside :math:`(0, \log M)`.
    """
    loss, M = as_numbers("loss", loss, "in (0, log M)"), as_numbers("M", M, "finite and > 1")
    if np.any(~((M > 1) & np.isfinite(M))):
        raise ValueError(f"M must be finite and > 1; got {M}")
    if np.any(~(loss > 0)) or np.any(~(loss < np.log(M))):
        raise ValueError(f"loss must be in (0, log M); got {loss}")
    from .closed_form import margin
    return margin(loss, M)


def lambda_of_ratio(ratio, loss, M, b):
    r""":math:`\Lambda = r (M - 1) \ell(L)^2 / (M b)`.

    Parameters
    ----------
    ratio, loss, M, b : array_like
        :math:`r = \eta_{QK}/\eta_{OV} > 0`, the stopping loss, classes, embedding scale.

    Returns
    -------
    ndarray

    Raises
    ------
    ValueError
        ``ratio`` or ``b`` not finite and > 0; ``M`` or ``loss`` as in :func:`margin_at_loss`;
        :math:`\Lambda` not a finite number > 0 in double precision (an overflow, e.g. ``ratio = 1e308``).
    """
    ratio, b = check_positive_values("ratio", ratio), check_positive_values("b", b)
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        lam = ratio * (np.asarray(M, float) - 1) * margin_at_loss(loss, M) ** 2 / (np.asarray(M, float) * b)
    return check_result("Lambda = ratio (M - 1) l(L)^2 / (M b)", lam, dict(ratio=ratio, loss=loss, M=M, b=b),
                        "ratio and b nearer 1 keep it in range")


def ratio_of_lambda(lam, loss, M, b):
    r""":math:`r = \Lambda M b / ((M - 1) \ell(L)^2)`, the inverse of :func:`lambda_of_ratio`.

    Parameters
    ----------
    lam, loss, M, b : array_like
        :math:`\Lambda > 0`, the stopping loss, classes, embedding scale (> 0).

    Returns
    -------
    ndarray

    Raises
    ------
    ValueError
        ``lam`` or ``b`` not finite and > 0; ``M`` or ``loss`` as in :func:`margin_at_loss`;
        :math:`r` not a finite number > 0 in double precision (an overflow or underflow).
    """
    lam, b = check_positive_values("lam", lam), check_positive_values("b", b)
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        ratio = lam * np.asarray(M, float) * b / ((np.asarray(M, float) - 1) * margin_at_loss(loss, M) ** 2)
    return check_result("ratio = lam M b / ((M - 1) l(L)^2)", ratio, dict(lam=lam, loss=loss, M=M, b=b),
                        "lam and b nearer 1 keep it in range")


def master_lambda(ratio, loss, task="paper", **params):
    r""":math:`\Lambda = r (M - 1) \ell(L)^2 / (M b)` of a task, with its class count :math:`M`
    and embedding scale :math:`b` at the parameter values.

    The coordinate of the master curve (:func:`master_shares`); for a task of another shape (the
    authors': scaled scores, relevant types of unequal weight) the same coordinate, with no
    collapse derived behind it. :math:`M` is the task's class count (the authors' task: 4, though
    its softmax runs over its 50-token vocabulary), :math:`b` its embedding scale (the authors': 1).

    Parameters
    ----------
    ratio, loss : array_like
        :math:`r = \eta_{QK}/\eta_{OV} > 0` and the stopping loss, in :math:`(0, \log M)`.
    task : str or derivations.engine.task.Task
        A built-in task's name (``"paper"`` is read without SymPy), a task file (.toml) or a
        :class:`~derivations.engine.task.Task`.
    **params
        The task's parameter values (defaults: the task's).

    Returns
    -------
    ndarray

    Raises
    ------
    ValueError
        An unknown task or parameter, an invalid value, ``loss`` outside :math:`(0, \log M)`, or
        :math:`\Lambda` not a finite number > 0 in double precision (:func:`lambda_of_ratio`).

    Examples
    --------
    >>> float(master_lambda(3.0, 0.4, m=5, n=50, b=50, M=20)) == float(lambda_of_ratio(3.0, 0.4, 20, 50))
    True
    """
    if isinstance(task, str) and task == "paper":
        from derivations.core.vocabulary import PAPER_SETTING
        unknown = sorted(set(params) - set(PAPER_SETTING))
        if unknown:
            raise ValueError(f"task 'paper' has no parameter {unknown[0]!r} (parameters: m, n, b, M)")
        values = {**PAPER_SETTING, **params}
        return lambda_of_ratio(ratio, loss, values["M"], values["b"])
    from .query_copies import resolve_task
    from .task_systems import task_parameters
    spec, number = resolve_task(task, task_parameters(task, **params))
    return lambda_of_ratio(ratio, loss, number(spec.classes, "M"), number(spec.embedding_scale, "b"))


def _rhs(lam, s, m, n, R):
    r"""The master flow's right-hand side in (x_q, x_r, Y_q, Y_r), shares by a stable softmax.

    Above :data:`DIFFERENCE_MAX` the gaps :math:`Y - U` are taken as :math:`Y_q - U = a_r (Y_q - Y_r) + a_o Y_q`
    and :math:`Y_r - U = a_q (Y_r - Y_q) + a_o Y_r` (:math:`a_o = n/Z = 1 - a_q - a_r`), not as the
    differences: where one share nears 1 (large :math:`\Lambda`) :math:`Y` and :math:`U` agree to about
    :math:`1/\Lambda`, and their difference in doubles is rounding, which :math:`\Lambda` multiplies."""
    shares = _share_function(s, m, n)

    def difference(_sigma, z):
        a_q, a_r, _a_o = shares(z)
        U = a_q * z[2] + a_r * z[3]
        return [lam * a_q * (z[2] - U), lam * a_r / R * (z[3] - U), a_q, a_r / R]

    def rearranged(_sigma, z):
        a_q, a_r, a_o = shares(z)
        gap = z[2] - z[3]
        return [lam * a_q * (a_r * gap + a_o * z[2]), lam * a_r / R * (a_o * z[3] - a_q * gap), a_q, a_r / R]
    return difference if lam <= DIFFERENCE_MAX else rearranged


def _share_function(s, m, n):
    r"""``shares(z)``: the shares (self, relevant, other) at the state ``z`` of the master flow, a stable softmax
    of the logits :math:`(\log s + x_q, \log m + x_r, \log n)`."""
    logw = np.array([math.log(s) if s > 0 else -np.inf, math.log(m), math.log(n) if n > 0 else -np.inf])

    def shares(z):
        logits = logw + np.array([z[0], z[1], 0.0])
        e = np.exp(logits - logits.max())
        return e / e.sum()
    return shares


@functools.lru_cache(maxsize=4096)
def _stop(lam, s, m, n, R):
    r"""The master flow's state and shares (self, relevant, other) where U first reaches 1.

    The flow is integrated in :math:`\tau = Y_q + Y_r` (:math:`d\tau/d\sigma = a_q + a_r/R > 0`, the
    chain rule on the derived right-hand side), not in :math:`\sigma`: from zero, where the shares
    start at ``m / (s + m + n)``, as small as 1e-12, :math:`\sigma` runs to about the inverse share
    squared, and LSODA in it loses digits (1.4e-5 relative at ``m = 1e-3, n = 1e8``); in :math:`\tau`
    every rate is bounded by :math:`\Lambda |Y - U|` and 1.

    At the edge ``s = m/R`` (``R > 1``) the query's token is one more relevant type: from zero the
    flow keeps ``x_q = x_r`` and ``Y_q = Y_r``, a state that is unstable at large Lambda, where
    rounding would break it. There the flow of ``R + 1`` relevant types of ``(m + s)/(R + 1)``
    copies each (and no self copies) is integrated, whose one type's share is the self share."""
    if R > 1 and s > 0 and s * R == m:
        (_, a, other), (_, x, _, y) = _stop(lam, 0.0, m + s, n, R + 1)
        return (a / (R + 1), a * R / (R + 1), other), (x, x, y, y)
    from scipy.integrate import solve_ivp
    f = _rhs(lam, s, m, n, R)
    shares = _share_function(s, m, n)

    def g(_tau, z):
        d = f(0.0, z)
        return np.divide(d, d[2] + d[3])

    def event(tau, z):
        a = shares(z)
        return a[0] * z[2] + a[1] * z[3] - 1.0
    event.terminal, event.direction = True, 1
    # from zero U grows at least at its initial rate (the score gaps ascend U); 100 times the
    # time that rate needs is a bound never met in the tests (and tau <= sigma)
    horizon = 100.0 * R * ((s + m + n) / m) ** 2 + 100.0
    run = solve_ivp(g, (0.0, horizon), np.zeros(4), method="LSODA", events=event,
                    rtol=_RTOL, atol=_ATOL)
    if run.status != 1 or not len(run.t_events[0]):
        raise RuntimeError(f"the master flow (Lambda={lam}, s={s}, m={m}, n={n}, R={R}) did not "
                           f"reach the stopping loss: {run.message}")
    z = run.y_events[0][0]
    return tuple(shares(z)), tuple(z)


def _check_task(s, m, n, R):
    """The task's numbers as floats (ValueError naming the first one out of range): each at most
    1e100, and the relevant share at the start, ``m / (s + m + n)``, at least 1e-12 (the master flow
    is resolved in double precision to 1e-14; below 1e-15 its stop is not found)."""
    out = []
    for name, value, lo, strict in (("s", s, 0, False), ("m", m, 0, True), ("n", n, 0, False),
                                    ("R", R, 1, False)):
        what = f"a number in {'(' if strict else '['}{lo}, 1e100]"
        x = as_numbers(name, value, what)
        if x.ndim or not (math.isfinite(x) and x <= 1e100) or (x <= lo if strict else x < lo):
            raise ValueError(f"{name} must be {what}; got {shown_number(value)}")
        out.append(float(x))
    s, m, n, R = out
    if m / (s + m + n) < 1e-12:
        raise ValueError(f"m must be at least {shown_number(1e-12 * (s + n) / (1 - 1e-12))} at s = {shown_number(s)}, "
                         f"n = {shown_number(n)}: m / (s + m + n), the relevant share at the start, must be at least "
                         f"1e-12 (the master flow is resolved in double precision to there); got m = "
                         f"{shown_number(m)}, a share of {shown_number(m / (s + m + n))}")
    return s, m, n, R


def _numbers(task, params):
    """``(s, m, n, R, M, b)`` of a task (:func:`~numerics.dynamics.task_shape`, its values checked) or, with no
    task, the numbers given (defaults ``SHAPE_DEFAULTS``), each checked, M and b also where unused."""
    if task is None:
        unknown = sorted(set(params) - set(SHAPE_DEFAULTS))
        if unknown:
            raise ValueError(f"{unknown[0]!r} is not a number of the shape (s, m, n, R, M, b); "
                             "name a task to give its parameters")
        shape = {**SHAPE_DEFAULTS, **params}
        M = as_numbers("M", shape["M"], "a finite number > 1")
        if M.ndim or not (math.isfinite(M) and M > 1):
            raise ValueError(f"M must be a finite number > 1; got {shown_number(shape['M'])}")
        check_positive("b", shape["b"])
    else:
        from .query_copies import task_shape
        from .task_systems import task_parameters
        shape = task_shape(task, **task_parameters(task, **params))
    return (*_check_task(shape["s"], shape["m"], shape["n"], shape["R"]), shape["M"], shape["b"])


def master_shares(lam, task=None, **params):
    r"""The attention shares at the stopping loss as functions of :math:`\Lambda` (the master
    curve of the CACO flow from zero) for a task of the ``query-copies`` shape.

    Parameters
    ----------
    lam : array_like
        :math:`\Lambda` in :math:`(0,` :data:`LAMBDA_MAX` :math:`]` (:func:`lambda_of_ratio`, :func:`master_lambda`).
    task : str or derivations.engine.task.Task, optional
        A built-in task's name, a task file (.toml) or a :class:`~derivations.engine.task.Task`
        of the shape (:func:`~numerics.dynamics.task_shape`); ``None``: ``params`` are the shape's numbers.
    **params
        The task's parameter values (defaults: the task's); with no task the numbers ``s, m, n,
        R`` (attended copies of the query's token, 0 for the paper's task; relevant copies;
        irrelevant tokens; relevant types; defaults ``SHAPE_DEFAULTS``, ``M`` and ``b``
        checked and unused: the shares do not depend on them).

    Returns
    -------
    dict
        ``self_attention``, ``relevant_attention``, ``other_attention`` (arrays shaped as
        ``lam``, summing to 1).

    Raises
    ------
    ValueError
        A parameter outside its range, a task not of the shape, or :math:`\Lambda` outside
        :math:`(0,` :data:`LAMBDA_MAX` :math:`]`.

    Examples
    --------
    >>> a = master_shares([0.1, 10.0], s=2, m=5, n=10, R=5)
    >>> bool(a["relevant_attention"][0] > a["self_attention"][0])
    True
    >>> bool(a["relevant_attention"][1] < a["self_attention"][1])
    True
    >>> b = master_shares([0.1, 10.0], "query-copies", s=2, m=5, n=10, R=5, M=4, b=2)
    >>> bool((a["self_attention"] == b["self_attention"]).all())
    True
    """
    s, m, n, R, _M, _b = _numbers(task, params)
    lam = check_in_range("Lambda", lam, 0.0, LAMBDA_MAX, _LAMBDA_WHY, lo_open=True)
    out = {k: np.empty(lam.shape) for k in ("self_attention", "relevant_attention", "other_attention")}
    for i in np.ndindex(lam.shape):
        shares, _z = _stop(float(lam[i]), s, m, n, R)
        for key, value in zip(out, shares):
            out[key][i] = value
    return out


def window_reason(s, m, R):
    r"""Why there is no crossover (``None`` inside the window :math:`m/R < s < m`).

    With one relevant type (:math:`R = 1`) the sign of the self share minus the relevant share is
    that of :math:`s - m` at every ratio (derived), and at :math:`s = m/R` the relevant share is
    :math:`R` times the self share (the query's token is one more relevant type). Otherwise only the
    limits of small and large ratio are derived; that the sign holds between them outside the window
    is observed on a scan of the master curve, and the reason says so.

    Parameters
    ----------
    s, m, R : float
        The query's copies, the relevant copies, the relevant types.

    Returns
    -------
    str or None
    """
    if R == 1 and s == m:
        return "tie at s = m: with one relevant type the self and relevant shares are equal at every ratio"
    if not m / R < s < m:
        side = "s >= m: the self share exceeds the relevant share" if s >= m else \
            "s <= m/R: the relevant share exceeds the self share"
        how = "" if R == 1 or s * R == m else "; derived at both ends of the ratio range, observed between them"
        return f"outside the window m/R < s < m ({side} at every ratio{how})"
    return None


def crossover_lambda(task=None, *, lambda_range=(1e-6, 1e8), xtol=1e-12, **params):
    r""":math:`\Lambda^*` where the self and relevant shares at the stopping loss are equal.

    A bracketing search in :math:`\log\Lambda` (:func:`~numerics.dynamics.sign_change.log_sign_change`) on the self share
    minus the relevant share, which is negative below :math:`\Lambda^*` and positive above it
    inside the window; an exact zero at a bracket's end is returned as is.

    Parameters
    ----------
    task : str or derivations.engine.task.Task, optional
        The task, or ``None`` with its numbers in ``params`` (see :func:`master_shares`).
    lambda_range : tuple of float
        The :math:`\Lambda` interval searched, inside :math:`(0,` :data:`LAMBDA_MAX` :math:`]`.
    xtol : float
        Absolute tolerance in :math:`\log\Lambda`.
    **params
        The task's parameter values (see :func:`master_shares`).

    Returns
    -------
    tuple
        ``(Lambda_star, reason)``: ``(value, None)``, or ``(None, reason)`` outside the window
        (:func:`window_reason`) or where the sign does not change within ``lambda_range``.

    Raises
    ------
    ValueError
        A parameter outside its range, a task not of the shape, ``lambda_range`` not
        ``0 < low < high <= LAMBDA_MAX`` or ``xtol`` not finite and > 0.
    """
    lambda_range = check_positive_range("lambda_range", lambda_range)
    if lambda_range[1] > LAMBDA_MAX:
        raise ValueError(f"lambda_range must lie in (0, {LAMBDA_MAX:g}] {_LAMBDA_WHY}; got {lambda_range}")
    xtol = check_positive("xtol", xtol)
    s, m, n, R, _M, _b = _numbers(task, params)
    reason = window_reason(s, m, R)
    if reason is not None:
        return None, reason

    def difference(lam):
        shares, _z = _stop(float(lam), s, m, n, R)
        return shares[0] - shares[1]
    return log_sign_change(difference, *lambda_range, xtol=xtol)


def boundary(task=None, *, target_loss, ratio_range=RATIO_RANGE, **params):
    r"""The crossover ratio :math:`r^*` of the CACO flow from zero, at each stopping loss.

    One search for :math:`\Lambda^*` (:func:`crossover_lambda`, over the :math:`\Lambda` range
    that ``ratio_range`` spans at the given losses) serves every loss:
    :math:`r^* = \Lambda^* M b / ((M - 1)\ell(L)^2)`.

    Parameters
    ----------
    task : str or derivations.engine.task.Task, optional
        A task of the ``query-copies`` shape (a built-in name, a task file or a Task), or
        ``None`` with the numbers ``s, m, n, R, M, b`` in ``params`` (see :func:`master_shares`).
    target_loss : float or sequence of float
        Stopping losses in :math:`(0, \log M)`.
    ratio_range : tuple of float
        The ratios :math:`\eta_{QK}/\eta_{OV}` searched: at every loss, :math:`\Lambda` of the largest at
        most :data:`LAMBDA_MAX`.
    **params
        The task's parameter values, or with no task the shape's numbers (``M``, ``b``: classes
        and embedding scale).

    Returns
    -------
    list of dict
        One record per loss: ``target_loss``, ``crossover_ratio`` and ``crossover_lambda``
        (``None`` where there is no crossover) and ``reason`` (``None``, or why not).

    Raises
    ------
    ValueError
        A parameter outside its range, a task not of the shape, or a ``ratio_range`` whose
        :math:`\Lambda` exceeds :data:`LAMBDA_MAX` (or is not a finite number > 0) at a loss.

    Examples
    --------
    >>> [rec] = boundary(s=2, m=5, n=10, R=5, target_loss=0.5, M=4, b=2)
    >>> round(rec["crossover_ratio"], 3) > 0 and rec["reason"] is None
    True
    >>> boundary("query-copies", s=2, m=5, n=10, R=5, target_loss=0.5, M=4, b=2) == [rec]
    True
    """
    lo, hi = check_positive_range("ratio_range", ratio_range)
    s, m, n, R, M, b = _numbers(task, params)
    losses = check_target_losses("target_loss", target_loss, M)
    lams = lambda_of_ratio(np.array([lo, hi])[:, None], losses[None, :], M, b)
    if lams.max() > LAMBDA_MAX:
        raise ValueError(f"ratio_range must give Lambda in (0, {LAMBDA_MAX:g}] {_LAMBDA_WHY}; got {(lo, hi)}, "
                         f"Lambda up to {shown_number(lams.max())} at M={M:g}, b={b:g}, target_loss={losses.min():g}")
    lam_star, reason = crossover_lambda(s=s, m=m, n=n, R=R,
                                        lambda_range=(float(lams.min()), float(lams.max())))
    records = []
    for loss in losses:
        rec = {"target_loss": float(loss), "crossover_ratio": None, "crossover_lambda": None,
               "reason": reason}
        if lam_star is not None:
            ratio = float(ratio_of_lambda(lam_star, loss, M, b))
            if lo <= ratio <= hi:
                rec.update(crossover_ratio=ratio, crossover_lambda=lam_star)
            else:
                rec["reason"] = (f"not reached within the ratio range searched ([{shown_float(lo)}, "
                                 f"{shown_float(hi)}]; r* = {shown_float(ratio)} at this loss)")
        records.append(rec)
    return records
