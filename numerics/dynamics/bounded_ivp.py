r"""A bounded initial-value solver with level-crossing events.

:func:`solve_bounded` is the step loop of :func:`scipy.integrate.solve_ivp`
(same ``OdeSolver`` classes, dense output for ``t_eval``, events located by
:func:`scipy.optimize.brentq` between steps to ``4 eps``), giving the same
records step for step, with what a verification needs on top:

* a bound on the work (``max_steps``): past it the run stops with status -1
  and everything recorded so far, never runs on;
* an unbounded interval ``t1 = inf`` is integrated up to a finite
  :data:`HORIZON` (the step size stays a finite double), and ending there
  without the terminal event is a failure (status -1), not a success;
* a non-finite state stops the run with status -1;
* only downward crossings are recorded, each level's first one;
* a crossing is located to a few ulp of its time, also at a tiny time (``brentq``'s absolute ``xtol`` is
  scaled down with it); on a step that spans too few doubles of t to resolve it (a fast descent after a
  long plateau: ``RESOLVED_DOUBLES``), the step is integrated again from its start in the local
  time ``t - t_old``, whose doubles are fine, and the crossing located on it; not found there, the run
  stops before that step with status -1 (reason ``"unresolved"``), never with a state off its level;
* a loss level near the initial loss, where the loss in doubles is mostly rounding, is located on the loss
  in mpmath (:func:`solve_loss_levels` with ``exact_loss``).

Every reduced flow (:meth:`numerics.dynamics.reduced_system.ReducedSystem.integrate`
for every task, through :func:`solve_loss_levels`, the loss events on
:math:`\log L`) and the full model's gradient flow
(:func:`numerics.dynamics.training.gradient_flow`) use it.

>>> import numpy as np
>>> from numerics.dynamics.bounded_ivp import solve_bounded
>>> out = solve_bounded(lambda t, y: -y, (0.0, np.inf), np.array([1.0]),
...                     levels=lambda y: [y[0] - 0.5, y[0] - 0.1], terminal=1, rtol=1e-10,
...                     atol=1e-12)
>>> out.status, round(out.hits[0][0], 9), round(out.hits[1][0], 9)   # log 2, log 10
(1, 0.693147181, 2.302585093)
>>> solve_bounded(lambda t, y: -y, (0.0, np.inf), np.array([1.0]), levels=lambda y: [y[0] + 1],
...               terminal=0, max_steps=50).status      # never reached: bounded, status -1
-1
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import scipy.integrate
from scipy.optimize import brentq

__all__ = ["solve_bounded", "solve_loss_levels", "near_initial", "below_level", "METHODS", "HORIZON",
           "DEFAULT_MAX_STEPS", "NEAR_INITIAL", "LEVEL_DPS"]

#: Integration methods (SciPy ``OdeSolver`` classes).
METHODS = {"RK23": scipy.integrate.RK23, "RK45": scipy.integrate.RK45,
           "DOP853": scipy.integrate.DOP853, "Radau": scipy.integrate.Radau,
           "BDF": scipy.integrate.BDF, "LSODA": scipy.integrate.LSODA}
#: Methods that use a Jacobian.
IMPLICIT = ("Radau", "BDF", "LSODA")
#: End of an unbounded interval ``(t0, inf)``: a step may grow tenfold and 1e301
#: is still a double. (The reduced loss falls like b (M - 1) / t: at the paper's setting a target of
#: 1e-297 is reached before, 1e-300 is not: status -1, reason ``"horizon"``.)
HORIZON = 1e300
#: Default bound on the solver steps.
DEFAULT_MAX_STEPS = 100_000
#: A step spanning fewer doubles of t than this (a fast descent after a long plateau: t large, the step
#: short) resolves a crossing on it only to 1/RESOLVED_DOUBLES of the step's change, or worse: it is
#: integrated again in the local time ``t - t_old``, whose doubles are fine, and the crossing located there.
RESOLVED_DOUBLES = 2.0 ** 40
_EPS = np.finfo(float).eps
#: A loss level within this fraction of the initial loss is located on the loss in mpmath where it is given
#: (:func:`solve_loss_levels`): in doubles the distance of the loss from its start has an error of a few
#: ulp of the loss, 1e-7 relative at a distance of 1e-9 (the state there was 1e-3 off at 1e-12).
NEAR_INITIAL = 2.0 ** -10
#: Digits of the loss in mpmath near the initial loss.
LEVEL_DPS = 40


def solve_bounded(fun, t_span, y0, *, t_eval=None, levels=None, terminal=None,
                  method="DOP853", rtol=1e-10, atol=1e-12, jac=None, max_step=math.inf,
                  max_steps=DEFAULT_MAX_STEPS, max_nfev=None):
    """Integrate ``y' = fun(t, y)`` over ``t_span`` (validated by the caller).

    Parameters
    ----------
    fun : callable ``(t, y) -> ndarray``
    t_span : (float, float)
        ``t1`` may be ``inf``: the run then ends at :data:`HORIZON`.
    y0 : ndarray
    t_eval : ndarray, optional
        Increasing output times in ``t_span``; default: every solver step.
    levels : callable ``y -> sequence of float``, optional
        Event functions; a level is crossed when its value goes from >= 0 to
        <= 0 (first crossing only).
    terminal : int, optional
        Index of the level whose crossing ends the run (status 1); the state
        there is also the last record.
    method, rtol, atol, jac, max_step
        As for :func:`scipy.integrate.solve_ivp` (``jac`` only for
        ``IMPLICIT`` methods).
    max_steps : int
        Bound on the solver steps.
    max_nfev : int, optional
        Bound on the right-hand-side evaluations, checked after every step
        (past it: status -1, reason ``"nfev"``).

    Returns
    -------
    types.SimpleNamespace
        ``t`` (n,), ``y`` (n, dim), ``hits`` (per level ``(t, y)`` of its
        first downward crossing or None), ``status`` (-1 failure, 0 end of the
        interval, 1 terminal level crossed), ``reason`` (``"steps"``,
        ``"nfev"``, ``"horizon"``, ``"failed"``, ``"nonfinite"``,
        ``"unresolved"``, ``"end"``, ``"terminal"``), ``message``, ``nfev``
        (the steps integrated again included), ``njev``, ``nsteps``.
    """
    return _solve(fun, t_span, y0, t_eval, levels, terminal, method, rtol, atol, jac, max_step, max_steps,
                  max_nfev, again=True)


def _solve(fun, t_span, y0, t_eval, levels, terminal, method, rtol, atol, jac, max_step, max_steps,
           max_nfev, again):
    """:func:`solve_bounded`; ``again``: locate a crossing on a step of too few doubles of t on
    that step integrated again in a local time (:func:`_crossings`)."""
    t0, t1 = float(t_span[0]), float(t_span[1])
    t_bound = min(t1, max(HORIZON, 2 * t0))
    kw = {"jac": jac} if (jac is not None and method in IMPLICIT) else {}
    if math.isfinite(max_step):
        kw["max_step"] = max_step
    g = levels if levels is not None else (lambda y: [])
    extra = []      # the evaluations of the steps integrated again

    def local(k, t_old, y_old, t):
        """The crossing of level ``k`` on the step ``(t_old, t)`` integrated again from ``y_old`` in
        the local time ``tau = t - t_old`` (``fun(t_old + tau, y)``), as ``(t, y)``, or None."""
        local_jac = (lambda tau, y: jac(t_old + tau, y)) if callable(jac) else jac
        sub = _solve(lambda tau, y: fun(t_old + tau, y), (0.0, t - t_old), y_old, None,
                     lambda y: [g(y)[k]], 0, method, rtol, atol, local_jac, max_step, max_steps, None,
                     again=False)
        extra.append(sub.nfev)
        return None if sub.hits[0] is None else (t_old + sub.hits[0][0], sub.hits[0][1])

    with np.errstate(over="ignore", invalid="ignore"):   # non-finite derivatives and states are caught
        solver = METHODS[method](_overflow_as_inf(fun), t0, y0, t_bound, rtol=rtol, atol=atol, **kw)
        run = _loop(solver, g, t0, t1, t_bound, np.asarray(y0, dtype=float), t_eval,
                    terminal, max_steps, max_nfev, local if again else None)
    run.nfev += sum(extra)
    return run


def _overflow_as_inf(fun):
    """``fun`` whose OverflowError (Python's float arithmetic, as in a lambdified right-hand side with
    a huge parameter) is an infinite derivative, which the step loop stops on (reason ``"nonfinite"``)."""
    def finite_or_inf(t, y):
        try:
            return fun(t, y)
        except OverflowError:
            return np.full(np.shape(y), np.inf)
    return finite_or_inf


def solve_loss_levels(fun, t_span, y0, log_loss, levels, n_thresholds, *, log=True, exact_loss=None,
                      **options):
    r""":func:`solve_bounded` with loss events: level ``k`` is crossed where
    :math:`\log L(y) = \log` ``levels[k]`` (well scaled at tiny losses).

    ``levels[:n_thresholds]`` are recorded only; a level after them (the
    target loss) ends the run. ``log_loss`` maps a state to :math:`\log L`;
    with ``log=False`` it maps a state to :math:`L` itself, and level ``k`` is
    crossed where :math:`L(y) =` ``levels[k]``. With ``exact_loss``, a level near the
    initial loss (:func:`near_initial`), where the loss in doubles is mostly rounding, is crossed where
    :math:`(L(y) - L_k)/(L(y_0) - L_k)` falls through 0, ``exact_loss`` at :data:`LEVEL_DPS` digits.

    Parameters
    ----------
    fun : callable
        ``fun(t, y)``, the right-hand side.
    t_span : (float, float)
    y0 : array_like
    log_loss : callable
        ``log_loss(y)``: :math:`\log L` (with ``log=False``: :math:`L`).
    levels : sequence of float
        Loss levels (> 0).
    n_thresholds : int
        How many of ``levels`` are recorded only; a further one ends the run.
    log : bool
        Compare :math:`\log L` with the logarithms of the levels.
    exact_loss : callable, optional
        ``exact_loss(y)``: :math:`L` as an mpmath number at the working precision.
    **options
        Passed to :func:`solve_bounded`.

    Returns
    -------
    types.SimpleNamespace
        As :func:`solve_bounded`; ``hits[k]`` is the crossing of ``levels[k]``.
    """
    marks = [math.log(v) for v in levels] if log else list(levels)
    near = {}
    if exact_loss is not None and levels:
        loss0 = math.exp(log_loss(y0)) if log else log_loss(y0)
        near = {k: v for k, v in enumerate(levels) if near_initial(loss0, v)}
    if near:
        import mpmath
        with mpmath.workdps(LEVEL_DPS):
            start = exact_loss(y0)
            near = {k: (mpmath.mpf(v), start - mpmath.mpf(v)) for k, v in near.items()}

    def g(y):
        value = log_loss(y)
        out = [value - lv for lv in marks]
        if near:
            with mpmath.workdps(LEVEL_DPS):
                exact = exact_loss(y)
                for k, (v, deficit) in near.items():
                    out[k] = float((exact - v) / deficit)
        return out

    terminal = n_thresholds if n_thresholds < len(levels) else None
    return solve_bounded(fun, t_span, y0, levels=g if levels else None, terminal=terminal,
                         **options)


def near_initial(loss0, level):
    """Whether ``level`` is within :data:`NEAR_INITIAL` of the initial loss ``loss0`` (relative), where the
    loss in doubles resolves the level's distance from it to worse than about ``1e-13`` (relative).

    Parameters
    ----------
    loss0, level : float

    Returns
    -------
    bool
    """
    return abs(loss0 - level) < NEAR_INITIAL * abs(loss0)


def below_level(y0, level, loss0, exact_loss=None):
    """Whether the loss at ``y0`` (``loss0`` in doubles) is at most ``level``: in doubles, or with
    ``exact_loss`` near the level (:func:`near_initial`) in mpmath at :data:`LEVEL_DPS` digits.

    Parameters
    ----------
    y0 : ndarray
    level, loss0 : float
    exact_loss : callable, optional
        As for :func:`solve_loss_levels`.

    Returns
    -------
    bool
    """
    if exact_loss is None or not near_initial(loss0, level):
        return loss0 <= level
    import mpmath
    with mpmath.workdps(LEVEL_DPS):
        return bool(exact_loss(y0) <= mpmath.mpf(level))


def _crossings(sol, g, crossed, t_old, t, y_old, local, terminal):
    """``(hits, t_stop, unresolved)`` of the levels ``crossed`` in the step ``(t_old, t)``: their roots of
    ``g(sol(t))[k]`` (:func:`scipy.optimize.brentq` to a few ulp of t: its absolute ``xtol`` is scaled
    down with a time below 1) up to the ``terminal`` level's (``t_stop``, or None), as ``{k: (t_k, y_k)}``.
    On a step of fewer than ``RESOLVED_DOUBLES`` doubles of t, each crossing is
    ``local(k, t_old, y_old, t)`` (without ``local``: the root); ``unresolved`` says which it did not find
    (else None)."""
    xtol = 4 * _EPS * min(1.0, max(abs(t_old), abs(t)))
    roots = {}
    for k in crossed:
        tr = brentq(lambda tt, k=k: g(sol(tt))[k], t_old, t, xtol=xtol, rtol=4 * _EPS)
        roots[k] = (tr, sol(tr))
    missed = set()
    if local is not None and t - t_old < RESOLVED_DOUBLES * np.spacing(max(abs(t_old), abs(t))):
        for k in crossed:
            hit = local(k, t_old, y_old, t)
            roots[k] = roots[k] if hit is None else hit
            missed.update(() if hit is not None else (k,))
    t_stop = roots[terminal][0] if terminal in roots else None
    hits = {k: hit for k, hit in roots.items() if t_stop is None or hit[0] <= t_stop}
    missed &= set(hits)
    unresolved = None if not missed else (
        f"the crossing of level {min(missed)} in the step from t={t_old:.6g} to {t:.6g} is not resolved "
        "by the doubles of t, nor found on the step integrated again")
    return hits, t_stop, unresolved


def _loop(solver, g, t0, t1, t_bound, y0, t_eval, terminal, max_steps, max_nfev=None, local=None):
    ts, ys = ([], []) if t_eval is not None else ([t0], [y0])
    g_old = list(g(y0))
    hits = [None] * len(g_old)
    i_eval, steps = 0, 0
    status = reason = None
    message = ""
    # A derivative that is not finite at the start gives SciPy's step loop a NaN step size, which it
    # never leaves (its step-size checks compare with NaN): stop here instead.
    if not np.all(np.isfinite(getattr(solver, "f", 0.0))):
        status, reason = -1, "nonfinite"
        message = f"non-finite derivative at the start (t={t0:.6g}): the right-hand side overflows there"
    while status is None:
        if steps >= max_steps:
            status, reason = -1, "steps"
            message = f"stopped after max_steps={max_steps} solver steps at t={solver.t:.6g}"
            break
        if max_nfev is not None and solver.nfev > max_nfev:
            status, reason = -1, "nfev"
            message = f"stopped after max_nfev={max_nfev} evaluations at t={solver.t:.6g}"
            break
        y_old = np.array(solver.y, dtype=float)
        msg = solver.step()
        steps += 1
        if solver.status == "failed":
            status, reason, message = -1, "failed", str(msg)
            break
        t_old, t, y = solver.t_old, solver.t, solver.y
        if not np.all(np.isfinite(y)):
            status, reason, message = -1, "nonfinite", f"non-finite state at t={t:.6g}"
            break
        sol = None
        g_new = list(g(y))
        crossed = [k for k, (a, c) in enumerate(zip(g_old, g_new))
                   if a >= 0 and c <= 0 and hits[k] is None]
        t_stop = None
        if crossed:
            sol = solver.dense_output()
            found, t_stop, unresolved = _crossings(sol, g, crossed, t_old, t, y_old, local, terminal)
            if unresolved:
                status, reason, message = -1, "unresolved", unresolved
                break
            for k, hit in found.items():
                hits[k] = hit
        if solver.status == "finished" and t_stop is None:
            if t_bound < t1:
                status, reason = -1, "horizon"
                message = f"the terminal level was not reached by t={t_bound:g}"
            else:
                status, reason = 0, "end"
                message = "The solver successfully reached the end of the integration interval."
        g_old = g_new
        t_end = t if t_stop is None else t_stop
        y_stop = None if t_stop is None else hits[terminal][1]
        if t_eval is None:
            ts.append(t_end)
            ys.append(y if t_stop is None else y_stop)
        else:
            i_new = np.searchsorted(t_eval, t_end, side="right")
            if i_new > i_eval:
                if sol is None:
                    sol = solver.dense_output()
                tt = t_eval[i_eval:i_new]
                ts.extend(tt)
                ys.extend(np.atleast_2d(sol(tt)).T)
                i_eval = i_new
            if t_stop is not None and (not ts or ts[-1] < t_stop):
                ts.append(t_stop)
                ys.append(y_stop)
        if t_stop is not None:
            status, reason = 1, "terminal"
            message = f"terminal level reached at t={t_stop:.6g}"
    Y = np.array(ys, dtype=float).reshape(len(ts), y0.size)
    return SimpleNamespace(t=np.asarray(ts, dtype=float), y=Y, hits=hits, status=status,
                           reason=reason, message=message, nfev=solver.nfev,
                           njev=solver.njev, nsteps=steps)
