r"""The CACO state at a fixed loss, in closed form, and the time to reach it.

Setting (paper, Figure 4): collapsed circuits (CACO) from zero
initialization, output rate :math:`\eta_{OV} = 1` and attention rate
:math:`\eta_{QK} = r` (the *ratio*). Along the trajectory the margin
:math:`s = \alpha\mu_{OV}` determines the loss,

.. math:: s(L) = \log\frac{M-1}{e^{L} - 1},

and the first integral pins the state: with the attention odds
:math:`p = \alpha/(1-\alpha)`,

.. math:: F(p) = p + \log\frac{np}{m} - \frac{m}{n}
          - \frac{r(M-1)s^2}{2Mb}\Big(1 + \frac1p\Big)^2 = 0,

increasing in p (unique root); then :math:`\alpha = p/(1+p)`,
:math:`\mu_{QK} = \log(np/m)`, :math:`\mu_{OV} = s(1+p)/p`.
All of these come from :mod:`derivations.tasks.paper.sharpness` through the generated
module (:mod:`numerics.functions.lambdified`, ``numerics._generated``); importing this
module does not import SymPy.

Numerics of :func:`state_at_loss`
---------------------------------
* F is solved in :math:`u = \mu_{QK}` (``p = m e^u / n``) by vectorized
  Newton, safeguarded by a bracket (bisection when a step leaves it). The
  bracket comes from Wright-omega solutions of bounding equations
  (:func:`numerics.functions.lambdified.state_bounds_fn`), each sign-checked; the
  Newton start is the bracket end with the smaller :math:`|G|`.
* The margin is evaluated with ``expm1``; where it cancels (estimated
  relative error of s above ``1e-13``, :func:`margin_cancels`: s below about
  :math:`s_c = 0.00226\,(8 + \log(M-1))`, 0.018 for M = 2, 0.025 for M = 20, 0.10 for
  M = 2**53; a loss within about :math:`s_c (M-1)/M` of :math:`\log M`) those entries, and the few the doubles
  leave (no bracket or no convergence, at corners of the range), are
  evaluated at 30 digits with mpmath (:func:`state_at_loss_mpmath`) and rounded.

>>> from numerics.dynamics.closed_form import state_at_loss
>>> st = state_at_loss([1.0, 1e-4], 1.0)
>>> st.alpha.shape
(2,)
"""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from derivations.core.vocabulary import check_classes, check_positive

from ..functions import lambdified as lam
from ..validation import as_numbers, check_in_range
from .state_result import StateAtLoss

__all__ = ["state_at_loss", "state_at_loss_mpmath", "time_to_loss",
           "check_supported", "margin_cancels", "margin", "SUPPORTED_RANGE"]

_EPS = np.finfo(float).eps
#: Estimated relative error of the double-precision margin above which the
#: entry is evaluated with mpmath instead.
MARGIN_RTOL = 1e-13


def margin_cancels(s, M):
    r"""Where the margin :math:`s = \log(M-1) - \log(\operatorname{expm1}(L))`, computed in doubles, has an
    estimated relative error above ``MARGIN_RTOL`` (``s`` small: ``L`` near :math:`\log M`).

    Each of the two logarithms is rounded to half an ulp of itself, at most
    :math:`\varepsilon\log(M-1)/2` each where ``s`` is small, and ``expm1`` and the logarithms
    carry a few ulp of relative error of their own: an absolute error of about
    :math:`\varepsilon(8(1 + |s|) + \log(M-1))`, which ``s`` divides.

    Parameters
    ----------
    s : array_like
        Margins computed in doubles.
    M : array_like
        Numbers of classes (> 1), broadcast against ``s``.

    Returns
    -------
    ndarray of bool
        True where the margin is to be evaluated in mpmath (also where ``s`` is 0 or not a number).
    """
    s = np.asarray(s, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        error = _EPS * (8 * (1 + np.abs(s)) + np.log(np.asarray(M, dtype=float) - 1))
        return ~(error / np.abs(s) < MARGIN_RTOL)


#: Ranges on which :func:`state_at_loss` and :func:`state_at_loss_mpmath` are
#: tested to return the state to about 1e-13 (beyond them: ValueError naming
#: the range, never a wrong number). M: any integer in [2, 2**53].
SUPPORTED_RANGE = {"ratio": (1e-12, 1e12), "m": (1e-8, 1e8), "n": (1e-8, 1e8), "b": (1e-8, 1e8)}
_VERIFIED_ON = "for the closed-form state (the range it is verified on)"
#: Smallest ``rtol`` of :func:`time_to_loss`: :func:`scipy.integrate.quad` with no
#: absolute tolerance needs a relative one above 50 machine epsilons.
MIN_RTOL = 1e-13
#: Most significant digits of :func:`state_at_loss_mpmath` (its cost grows with them).
MAX_DPS = 10_000
_DBL_MAX = float(np.finfo(float).max)


def margin(L, M):
    r"""The margin :math:`s(L) = \log(M-1) - \log(\operatorname{expm1}(L))` (the generated
    ``sharpness.margin``): in doubles, and at 30 digits in mpmath, rounded, where the doubles cancel
    (:func:`margin_cancels`: ``L`` near :math:`\log M`).

    Parameters
    ----------
    L, M : array_like
        Losses in :math:`(0, \log M)` and numbers of classes (> 1), broadcast together; not checked here.

    Returns
    -------
    ndarray or numpy.float64
        Shaped as ``L`` and ``M`` broadcast (a scalar for scalars).

    >>> float(margin(1.0, 20.0)) == math.log(19.0) - math.log(math.expm1(1.0))
    True
    """
    s = lam.margin_at_loss_fn("numpy").func(L, M)
    cancels = margin_cancels(s, M)
    if np.any(cancels):
        import mpmath
        s, L, M = (np.array(v, dtype=float) for v in np.broadcast_arrays(s, L, M))
        with mpmath.workdps(30):
            for i in np.ndindex(s.shape):
                if cancels[i]:
                    s[i] = float(lam.margin_at_loss_fn("mpmath").func(mpmath.mpf(L[i]), mpmath.mpf(M[i])))
        s = s[()]
    return s


def check_supported(m, n, b, M):
    """The model-parameter rule of :func:`derivations.core.vocabulary.check_model_parameters`
    (numbers finite and > 0, M an integer in [2, 2**53]) and the range the closed forms support
    (:data:`SUPPORTED_RANGE`, inside the rule's :data:`~derivations.core.vocabulary.MODEL_PARAMETER_RANGE`,
    and named first).

    Parameters
    ----------
    m, n, b : float
    M : int

    Returns
    -------
    (float, float, float, float)
        ``(m, n, b, M)`` as floats.

    Raises
    ------
    ValueError
        A value outside its rule or range (the message names the parameter and the range).
    """
    m, n, b = (check_in_range(name, check_positive(name, value), *SUPPORTED_RANGE[name], _VERIFIED_ON, scalar=True)
               for name, value in (("m", m), ("n", n), ("b", b)))
    return m, n, b, float(check_classes(M))


def _check_loss_ratio(loss, ratio, M):
    ratio = check_in_range("ratio", ratio, *SUPPORTED_RANGE["ratio"], _VERIFIED_ON)
    logM = math.log(M)
    what = f"finite and in (0, log M) = (0, {logM!r})"
    loss = as_numbers("loss", loss, what)
    bad = ~(np.isfinite(loss) & (loss > 0) & (loss < logM))
    if bad.any():
        raise ValueError(f"loss must be {what}; got {float(loss[bad].ravel()[0])!r} (a target loss the dynamics "
                         "never reach)")
    return np.broadcast_arrays(loss, ratio)


def state_at_loss_mpmath(loss, ratio, *, m=5, n=50, b=50, M=20, dps=50):
    r"""Reference state at one loss, evaluated with mpmath (the high-precision solver).

    The same generated functions as :func:`state_at_loss` (margin, state
    equation in u = mu_QK with its derivative, Wright-omega bracket, state
    from mu_QK) at ``dps + 10`` significant digits: the bracket is
    sign-checked, then a safeguarded Newton iteration (bisection whenever a
    step leaves the bracket) runs until the step or the bracket is below the
    working precision relative to u. Solving in u (not in the odds p) keeps
    full relative accuracy when mu_QK is tiny (loss near log M).

    Parameters
    ----------
    loss, ratio : float
        Scalars (an mpmath.mpf is rounded to the nearest double first; a str is refused).
    m, n, b, M : float
        As in :func:`state_at_loss` (same ranges).
    dps : int
        Significant digits wanted, in [1, ``MAX_DPS``].

    Returns
    -------
    dict
        ``{"mu_OV", "mu_QK", "alpha", "p", "s"}`` as mpmath.mpf of ``dps`` significant digits
        (whatever the caller's mpmath precision).

    Raises
    ------
    ValueError
        As :func:`state_at_loss`, or ``dps`` not an integer in [1, ``MAX_DPS``].
    """
    import mpmath
    if isinstance(dps, bool) or not isinstance(dps, numbers.Integral) or not 1 <= dps <= MAX_DPS:
        raise ValueError(f"dps must be an integer in [1, {MAX_DPS}]; got {dps!r}")
    m, n, b, M = check_supported(m, n, b, M)
    loss, ratio = (float(v) for v in _check_loss_ratio(loss, ratio, M))
    G = lam.state_equation_mu_fn("mpmath").func
    bounds = lam.state_bounds_fn("mpmath").func
    with mpmath.workdps(int(dps) + 10):
        Lm, rm = mpmath.mpf(loss), mpmath.mpf(ratio)
        mm, nm, bm, Mm = (mpmath.mpf(v) for v in (m, n, b, M))
        sm = lam.margin_at_loss_fn("mpmath").func(Lm, Mm)
        if not sm > 0:
            raise ValueError(f"loss must be in (0, log M) = (0, {math.log(M)!r}); got {loss!r}")

        def g(u):
            return G(u, sm, rm, mm, nm, bm, Mm)
        cands = [mpmath.mpf(c) for c in bounds(sm, rm, mm, nm, bm, Mm)] + [mpmath.mpf(0)]
        values = [(c, g(c)[0]) for c in cands if mpmath.isfinite(c)]
        lo = max((c for c, v in values if v <= 0), default=None)
        hi = min((c for c, v in values if v >= 0), default=None)
        if lo is None or hi is None:  # pragma: no cover - the bounds are proven
            raise ArithmeticError("no bracket for the state equation")
        tol = mpmath.mpf(2) ** (4 - mpmath.mp.prec)
        u = lo if abs(g(lo)[0]) < abs(g(hi)[0]) else hi
        for _ in range(20 * mpmath.mp.prec):
            val, slope = g(u)
            if val == 0:
                break
            if val < 0:
                lo = u
            else:
                hi = u
            new = u - val / slope
            if not (lo <= new <= hi):
                new = (lo + hi) / 2
            if abs(new - u) <= tol * abs(new) or hi - lo <= tol * abs(new):
                u = new
                break
            u = new
        else:  # pragma: no cover - Newton/bisection on a sign-checked bracket converges
            raise ArithmeticError("state_at_loss_mpmath did not converge")
        out = lam.state_from_mu_QK_fn("mpmath")(u, sm, mm, nm, bm, Mm)
        out["mu_QK"], out["s"] = u, sm
    with mpmath.workdps(int(dps)):      # rounded to the digits asked for, not to the caller's precision
        return {k: +out[k] for k in ("mu_OV", "mu_QK", "alpha", "p", "s")}


def _newton(u_lo, u_hi, s, r, m, n, b, M, maxiter=100):
    """Safeguarded vectorized Newton for G(u) = 0 on [u_lo, u_hi] (G increasing).
    Returns (u, converged mask)."""
    G = lam.state_equation_mu_fn("numpy").func
    g_lo = G(u_lo, s, r, m, n, b, M)[0]
    g_hi = G(u_hi, s, r, m, n, b, M)[0]
    u = np.where(np.abs(g_lo) < np.abs(g_hi), u_lo, u_hi)
    lo, hi = u_lo.copy(), u_hi.copy()
    idx = np.arange(u.size)
    u, lo, hi = u.ravel().copy(), lo.ravel().copy(), hi.ravel().copy()
    s_, r_ = s.ravel(), r.ravel()
    done = np.zeros(u.size, dtype=bool)
    for _ in range(maxiter):
        i = idx[~done]
        if i.size == 0:
            break
        g, dg = G(u[i], s_[i], r_[i], m, n, b, M)
        neg = g < 0
        lo[i] = np.where(neg, u[i], lo[i])
        hi[i] = np.where(neg, hi[i], u[i])
        step = g / dg
        new = u[i] - step
        outside = ~((new >= lo[i]) & (new <= hi[i])) | ~np.isfinite(new)
        new = np.where(outside, 0.5 * (lo[i] + hi[i]), new)
        conv = (g == 0) | (np.abs(new - u[i]) <= 2 * _EPS * np.abs(new)) | (hi[i] - lo[i] <= 2 * _EPS * np.abs(new))
        u[i] = np.where(g == 0, u[i], new)
        done[i] = conv
    return u.reshape(s.shape), done.reshape(s.shape)


def _solve_doubles(s, r, m, n, b, M):
    """mu_QK at margins ``s`` and ratios ``r`` in doubles: the sign-checked
    Wright-omega bracket, then :func:`_newton`. Returns ``(mu_QK, ok)``; the
    entries not ``ok`` (no bracket, no convergence) are left to mpmath."""
    cands = lam.state_bounds_fn("numpy").func(s, r, m, n, b, M)
    G = lam.state_equation_mu_fn("numpy").func
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        C = np.stack([np.broadcast_to(c, s.shape) for c in cands] + [np.zeros_like(s)])
        C = np.where(np.isfinite(C), C, 0.0)
        gC = G(C, s, r, m, n, b, M)[0]
    lo = np.max(np.where(gC <= 0, C, -np.inf), axis=0)
    hi = np.min(np.where(gC >= 0, C, np.inf), axis=0)
    good = np.isfinite(lo) & np.isfinite(hi)
    u = np.full(s.shape, np.nan)
    if good.any():
        u[good], conv = _newton(lo[good], hi[good], s[good], r[good], m, n, b, M)
        good[good] = conv
    return u, good


def state_at_loss(loss, ratio, *, m=5, n=50, b=50, M=20):
    r"""The CACO state (zero init, eta_OV = 1, eta_QK = ratio) at a given loss.

    Solves the state equation :math:`F(p; s(L), r) = 0` (see the module
    docstring) for every broadcast pair (loss, ratio) at once.

    Parameters
    ----------
    loss : array_like
        Loss levels, each in (0, log M). Values as small as 1e-300 are fine.
    ratio : array_like
        Learning-rate ratios :math:`r = \eta_{QK}/\eta_{OV}` in [1e-12, 1e12];
        broadcast against ``loss``.
    m, n, b : float, optional
        Relevant / irrelevant token counts and embedding scale, each in
        [1e-8, 1e8] (:data:`SUPPORTED_RANGE`). Defaults: the paper's setting.
    M : int, optional
        Number of classes, an integer in [2, 2**53].

    Returns
    -------
    StateAtLoss
        :class:`~numerics.dynamics.state_result.StateAtLoss` of arrays with the
        broadcast shape: ``mu_OV, mu_QK, alpha, loss, ratio, p, s``, then
        ``method="closed form"`` and ``coordinates``.

    Raises
    ------
    ValueError
        ``loss`` outside (0, log M) or non-finite (a target loss the
        dynamics never reach), ``ratio`` or a model parameter outside
        :data:`SUPPORTED_RANGE` or invalid (the message names the range).

    Notes
    -----
    Relative accuracy about 1e-13 over loss in [1e-300, log M) and the
    :data:`SUPPORTED_RANGE` of ratio, m, n, b (its corners tested against
    :func:`state_at_loss_mpmath` and the loss level); outside it a ValueError
    names the range.
    """
    m, n, b, M = check_supported(m, n, b, M)
    L, r = _check_loss_ratio(loss, ratio, M)
    shape = L.shape
    L, r = L.ravel(), r.ravel()
    s = lam.margin_at_loss_fn("numpy").func(L, M)
    slow = margin_cancels(s, M)
    fast = ~slow
    mu_QK = np.empty_like(L)
    ok = np.ones(L.shape, dtype=bool)
    if fast.any():
        mu_QK[fast], ok[fast] = _solve_doubles(s[fast], r[fast], m, n, b, M)
    redo = slow | ~ok
    st = lam.state_from_mu_QK_fn("numpy").func(mu_QK, s, m, n, b, M)
    alpha, mu_OV, p = (np.asarray(v, dtype=float).copy() for v in st)
    for i in np.flatnonzero(redo):
        ref = state_at_loss_mpmath(L[i], r[i], m=m, n=n, b=b, M=M, dps=30)
        mu_QK[i], mu_OV[i], alpha[i], p[i], s[i] = (float(ref[k]) for k in
                                                    ("mu_QK", "mu_OV", "alpha", "p", "s"))
    out = (mu_OV, mu_QK, alpha, L, r, p, s)
    if not all(np.isfinite(v).all() for v in out):  # pragma: no cover - never silently
        raise ArithmeticError("state_at_loss produced a non-finite value")
    mu_OV, mu_QK, alpha, L, r, p, s = (v.reshape(shape) for v in out)
    return StateAtLoss(mu_OV, mu_QK, alpha, L, r, p, s, method="closed form",
                 coordinates={"mu_OV": mu_OV, "mu_QK": mu_QK})


def time_to_loss(loss, ratio, *, m=5, n=50, b=50, M=20, rtol=1e-11):
    r"""Time for the CACO flow (zero init, eta_OV = 1, eta_QK = ratio) to reach a loss.

    .. math:: t(L) = \int_0^{\mu_{OV}^*} \frac{dt}{d\mu_{OV}}\,d\mu_{OV},
              \qquad \frac{dt}{d\mu_{OV}} = \frac{b\,(e^{\alpha\mu_{OV}} + M - 1)}{\eta_{OV}\,\alpha},

    with alpha on the explicit orbit through (0, 0)
    (:func:`derivations.tasks.paper.asymptotics.time_integrand`) and
    :math:`\mu_{OV}^*` from :func:`state_at_loss`. Adaptive Gauss-Kronrod
    quadrature (:func:`scipy.integrate.quad`), one per entry.

    Parameters
    ----------
    loss, ratio : array_like
        As in :func:`state_at_loss` (broadcast).
    m, n, b, M : float, optional
    rtol : float, optional
        Relative tolerance of the quadrature, in [``MIN_RTOL``, 1): a panel whose
        error estimate (:func:`scipy.integrate.quad`'s) exceeds ``rtol`` times its value
        is integrated again in mpmath at ``-log10(rtol) + 5`` digits.

    Returns
    -------
    ndarray
        Times, broadcast shape.

    Raises
    ------
    ValueError
        As :func:`state_at_loss`, or ``rtol`` outside [``MIN_RTOL``, 1).
    """
    from scipy.integrate import IntegrationWarning, quad
    rtol = check_in_range("rtol", rtol, MIN_RTOL, 1.0, "(the quadrature's smallest relative tolerance "
                          "is 50 machine epsilons)", hi_open=True, scalar=True)
    st = state_at_loss(loss, ratio, m=m, n=n, b=b, M=M)
    f = lam.time_integrand_fn("CACO", "numpy").func
    m, n, b, M = check_supported(m, n, b, M)
    out = np.empty(st.mu_OV.shape)
    for i in np.ndindex(out.shape):
        r_i, x_end = float(st.ratio[i]), float(st.mu_OV[i])
        integrand = lambda x: f(x, 0.0, 0.0, m, n, b, M, r_i, 1.0,  # noqa: E731
                                1.0, 1.0, 1.0, 1.0, 0.0, 0.0)
        # The integrand grows like e^{alpha mu_OV}: split at points where it
        # has grown by e^{10} so every panel is well resolved.
        pts = _panels(x_end, st.s[i], integrand)
        total = 0.0
        for a, c in zip(pts[:-1], pts[1:]):
            with np.errstate(over="ignore", invalid="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", IntegrationWarning)     # the result is checked right below
                val, err = quad(integrand, a, c, epsabs=0.0, epsrel=rtol, limit=200)
            if not (np.isfinite(val) and err <= rtol * abs(val)):
                # the integrand overflows doubles near the end (tiny loss), or quad's error estimate
                # exceeds rtol: this panel in mpmath
                val = _panel_mpmath(a, c, r_i, m, n, b, M, rtol)
            total += val
        if not np.isfinite(total):
            raise ValueError(f"loss must be above about (M - 1) b / {_DBL_MAX:.4g} = {(M - 1) * b / _DBL_MAX:.3g} "
                             f"(the time to reach it, about (M - 1) b / loss at eta_OV = 1, exceeds the "
                             f"double-precision range); got {float(st.loss[i])!r}")
        out[i] = total
    return out


def _panel_mpmath(a, c, ratio, m, n, b, M, rtol):
    """The time integral over one panel [a, c] in mpmath (no overflow); may be inf."""
    import mpmath
    f = lam.time_integrand_fn("CACO", "mpmath").func
    with mpmath.workdps(max(20, int(-math.log10(rtol)) + 5)):
        args = [mpmath.mpf(v) for v in (0, 0, m, n, b, M, ratio, 1, 1, 1, 1, 1, 0, 0)]
        total = mpmath.quad(lambda x: f(x, *args), [mpmath.mpf(float(a)), mpmath.mpf(float(c))])
    return float(total) if total < mpmath.mpf(np.finfo(float).max) else math.inf


#: Halvings of the first panel of :func:`time_to_loss` towards 0, where the integrand peaks: at most this many.
_LEFT_HALVINGS = 64
#: Below a halving point where the integrand is within this relative distance of its value at 0, and at every
#: halving point below that, the integrand is flat: no more break points are needed there.
_FLAT = 1e-2


def _panels(x_end, s_end, integrand):
    r"""Break points of [0, x_end]: uniform in the margin, about one e-fold of
    the integrand per 5 units of margin (the margin grows monotonically), and
    the first panel halved towards 0 down to where the integrand is flat (within
    :data:`_FLAT` of its value at 0 from there on; at most :data:`_LEFT_HALVINGS`
    times). There the integrand, :math:`\propto 1/\alpha`, is largest (alpha grows
    from its start along the orbit) and, at large ratios, falls by up to
    :math:`1/\alpha_0` within a width of order :math:`\sqrt{Mb/(r(M-1))}` (the orbit's
    ``r mu_OV**2`` term), down to about ``1e-18 x_end``: a peak too narrow for one
    panel's nodes. ``integrand`` takes an array of points."""
    k = max(1, int(math.ceil(float(s_end) / 5.0)))
    uniform = np.linspace(0.0, x_end, k + 1)
    left = uniform[1] * 0.5 ** np.arange(_LEFT_HALVINGS, 0, -1)           # ascending
    with np.errstate(all="ignore"):
        flat = np.abs(integrand(left) / integrand(0.0) - 1.0) < _FLAT       # (False where not finite)
    steep = np.flatnonzero(~flat)
    left = left[max(0, steep[0] - 1):] if steep.size else left[:0]
    return np.concatenate([[0.0], left, uniform[1:]])
