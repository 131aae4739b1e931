r"""End-to-end verification: full model vs reduced ODE vs closed forms.

``python -m numerics.verify`` runs, for every parameterization (CACO, CAFO,
FACO, FAFO) and every learning-rate ratio :math:`r = \eta_{QK}/\eta_{OV}`
(:math:`\eta_{OV} = 1`, factor rates equal to their circuit rate, i.e.
balanced factors), in the paper setting :math:`m=5, n=50, b=50, M=20`:

1. **Flow comparisons** (relative tolerance ``1e-6``).  The full-model
   gradient flow (:func:`numerics.training.gradient_flow`, structured
   initialization, factor scale ``eps = 1e-2``) is sampled on a common,
   log-spaced time grid :math:`t \in [10^{-4}T, T]`, where :math:`T` is the
   time at which the reduced flow reaches the target loss (default 0.01).
   On the grid, the maximum pointwise relative deviation
   :math:`\max_t |x(t) - x_{\rm ref}(t)|/|x_{\rm ref}(t)|` of
   :math:`\mu_{OV}, \mu_{QK}, \alpha` is reported

   * against the reduced ODE (:func:`numerics.reduced_ode.solve_reduced`),
   * against the closed forms.  CACO: :func:`numerics.closed_form.state_at_loss`
     at the full-model *loss* of each grid point.  The others: the
     (explicit or implicit) orbit through the initial point
     (:func:`numerics.lambdified.orbit_fn`,
     :func:`~numerics.lambdified.orbit_residual_fn`; :func:`orbit_mu_QK`)
     gives :math:`\mu_{QK}` and :math:`\alpha` at the full-model
     :math:`\mu_{OV}`, and :math:`\mu_{OV}` is compared with the
     intersection of the orbit with the margin :math:`\alpha\mu_{OV} = s(L)`
     at the full-model loss (:func:`closed_form_state`).  (Going through the
     loss costs digits while the loss is within :math:`10^{-6}` of
     :math:`\log M`: :math:`s` then carries a relative error of about
     :math:`10^{-16}/(\log M - L)`, which is why the margin+orbit
     :math:`\mu_{OV}` rows of CAFO/FAFO show about :math:`10^{-9}`.)

   the relative drift of the first integral
   (:func:`numerics.lambdified.first_integral_fn`) along the full-model
   trajectory, :math:`\max_t |H(t) - H(0)| / \max(S(t), S(0))` with S the
   sum of the absolute values of H's terms (the scale on which H cancels); and the
   states :math:`(t, \mu_{OV}, \mu_{QK}, \alpha)` where the loss crosses the
   thresholds (default 1, 0.3, 0.1): full-flow events vs
   :func:`~numerics.closed_form.state_at_loss` and
   :func:`~numerics.closed_form.time_to_loss` (CACO) or vs the reduced
   flow's events (the others).

2. **Invariant family.**  The relative distance of the full-model circuits
   from the family (:meth:`AttentionModel.distance_from_family`) stays below
   ``1e-9`` along the structured-init trajectory (checked); from a random
   initialization (entries :math:`\mathcal N(0, 10^{-6})`) the distance at
   :math:`T` is only reported.

3. **Gradient descent -> flow.**  Gradient descent with step
   :math:`\mathrm{lr} = T_h/N` (:math:`N` = 1000, 2000, 4000 steps, where
   :math:`T_h` is the time the reduced loss needs to fall to
   :math:`\log M - 0.2`; for a factorized QK circuit N is multiplied by
   :math:`\lceil r/10\rceil` when r > 10, as its growth rate scales with r) is compared with the flow at five common times;
   the maximal pointwise relative error in :math:`(\mu_{OV}, \mu_{QK})`
   must halve with lr: observed orders :math:`\log_2(e_{N}/e_{2N})` in
   :math:`[0.8, 1.2]`.

Output: a table (one row per check: parameterization, ratio, quantity,
value, tolerance, PASS/FAIL/INFO) or, with ``--json``, ``{"checks": [...],
"summary": {...}}``.  Exit status 0 when every check passes, 1 when any
fails, 2 on bad arguments (one line on stderr).

Options::

    --params m=5,n=50,b=50,M=20     any subset of the model parameters
    --ratios 0.1,1,10               learning-rate ratios eta_QK / eta_OV
    --parameterization {CACO,CAFO,FACO,FAFO,all}
    --quick                         fewer checks (ratio 1 unless --ratios is
                                    given; 12 grid points on [T/10, T]; target
                                    loss 0.1; thresholds 1, 0.3; GD with 500
                                    and 1000 steps; no random init)
    --json                          machine-readable output
    --task NAME                     verify a task of derivations.task instead
                                    (reduced system vs full matrix model of that
                                    task, all four parameterizations; see
                                    numerics.task_verify)

Programs can call :func:`run_checks` directly; it returns a list of
:class:`Check` records.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Check", "run_checks", "summarize", "format_table", "main",
           "DEFAULT_PARAMS", "DEFAULT_RATIOS", "DEFAULT_TOLERANCES", "PARAMETERIZATIONS",
           "closed_form_state", "orbit_mu_QK"]

PARAMETERIZATIONS = ("CACO", "CAFO", "FACO", "FAFO")
DEFAULT_PARAMS = {"m": 5.0, "n": 50.0, "b": 50.0, "M": 20}
DEFAULT_RATIOS = (0.1, 1.0, 10.0)
#: Tolerances by check family: relative deviations of the flow comparisons
#: (``flow``), first-integral drift (``first_integral``), distance from the
#: invariant family for structured init (``distance``), accepted range of
#: the observed gradient-descent order (``order``).
DEFAULT_TOLERANCES = {"flow": 1e-6, "first_integral": 1e-6, "distance": 1e-9,
                      "order": (0.8, 1.2)}

# integration settings (tight: the comparisons then agree to ~1e-11)
_FULL_RTOL, _FULL_ATOL = 1e-12, 1e-16
_RED_RTOL, _RED_ATOL = 1e-13, 1e-20
_RANDOM_RTOL, _RANDOM_ATOL = 1e-8, 1e-14
#: Largest number of classes accepted (the full model is integrated densely).
_M_MAX = 200


# --------------------------------------------------------------------------- #
# check records
# --------------------------------------------------------------------------- #
@dataclass
class Check:
    """One verification result.

    Attributes
    ----------
    parameterization : str
    ratio : float
        Learning-rate ratio eta_QK / eta_OV (eta_OV = 1).
    quantity : str
        What was measured.
    value : float
        The measured value (NaN if it could not be computed).
    tolerance : float, (float, float) or None
        Upper bound (``value <= tolerance``), accepted closed range, or
        ``None`` for a value that is only reported (status INFO).
    detail : dict
        Extra numbers (per-component deviations, errors, ...).
    """

    parameterization: str
    ratio: float
    quantity: str
    value: float
    tolerance: float | tuple | None = None
    detail: dict = field(default_factory=dict)

    @property
    def status(self) -> str:
        """``"PASS"``, ``"FAIL"`` or ``"INFO"`` (reported, not checked)."""
        if self.tolerance is None:
            return "INFO"
        v = self.value
        if not (isinstance(v, (int, float)) and math.isfinite(v)):
            return "FAIL"
        if isinstance(self.tolerance, tuple):
            lo, hi = self.tolerance
            return "PASS" if lo <= v <= hi else "FAIL"
        return "PASS" if v <= self.tolerance else "FAIL"

    @property
    def passed(self) -> bool:
        """False only for status FAIL."""
        return self.status != "FAIL"

    def as_dict(self) -> dict:
        """JSON-ready record (NaN/inf become ``None``)."""
        tol = self.tolerance
        if isinstance(tol, tuple):
            tol = [float(t) for t in tol]
        elif tol is not None:
            tol = float(tol)
        return {"parameterization": self.parameterization, "ratio": float(self.ratio),
                "quantity": self.quantity, "value": _json_number(self.value),
                "tolerance": tol, "status": self.status,
                "detail": _json_clean(self.detail)}


def _json_number(v):
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _json_clean(obj):
    if isinstance(obj, dict):
        return {str(k): _json_clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_clean(v) for v in obj]
    if isinstance(obj, (str, bool)) or obj is None:
        return obj
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    return _json_number(obj)


# --------------------------------------------------------------------------- #
# numerical helpers
# --------------------------------------------------------------------------- #
def _rel_dev(x, ref):
    """Max pointwise relative deviation ``|x - ref| / |ref|`` (0/0 counts as 0)."""
    x = np.asarray(x, dtype=float)
    ref = np.asarray(ref, dtype=float)
    if x.shape != ref.shape or x.size == 0:
        return math.nan
    diff = np.abs(x - ref)
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.where(diff == 0, 0.0, diff / np.abs(ref))
    if np.any(np.isnan(d)):
        return math.nan
    return float(np.max(d))


def _bisect(g, lo, hi, iters=200):
    """Vectorized bisection for increasing ``g`` with ``g(lo) <= 0 <= g(hi)``.

    Stops when no interval shrinks any more (ulp resolution)."""
    lo, hi = np.array(lo, dtype=float), np.array(hi, dtype=float)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if np.all((mid == lo) | (mid == hi)):
            break
        neg = g(mid) <= 0
        lo = np.where(neg, mid, lo)
        hi = np.where(neg, hi, mid)
    return 0.5 * (lo + hi)


def _param_tuple(P, cfg, r):
    """PARAMS of :mod:`numerics.lambdified` for balanced rates eta_OV = 1, eta_QK = r."""
    return (cfg["m"], cfg["n"], cfg["b"], cfg["M"], r, 1.0, r, r, 1.0, 1.0, 0.0, 0.0)


def closed_form_state(parameterization, loss, ratio, *, m=5, n=50, b=50, M=20, eps=1e-2,
                      state_at_loss=None):
    r"""State ``(mu_OV, mu_QK, alpha)`` of the balanced flow at the given losses,
    from the closed forms.

    CACO: :func:`numerics.closed_form.state_at_loss` (zero init, eta_OV = 1,
    eta_QK = ratio).  CAFO/FACO/FAFO: the orbit through the initial point of
    scale ``eps`` (:func:`numerics.lambdified.initial_point_fn`) intersected
    with the margin :math:`\alpha\mu_{OV} = s(L)`: :math:`\mu_{OV}` by
    bisection on :math:`[\max(s, \mu_{OV}(0)), s/\alpha(0)]` (on the orbit
    :math:`\alpha\mu_{OV}` increases with :math:`\mu_{OV}`); for the implicit
    orbits (FA..) :math:`\mu_{QK}` by an inner bisection in
    :math:`\log\mu_{QK}` (the orbit residual increases with :math:`\mu_{QK}`).

    Parameters
    ----------
    parameterization : str
    loss : array_like
        Loss values in (0, log M), below the initial loss.
    ratio : float
    m, n, b, M, eps : float
    state_at_loss : callable, optional
        Replacement for :func:`numerics.closed_form.state_at_loss` (CACO),
        called as ``state_at_loss(loss, ratio, m=, n=, b=, M=)`` and returning
        an object with ``mu_OV, mu_QK, alpha``.  Used to inject a wrong
        closed form in tests.

    Returns
    -------
    dict with arrays ``mu_OV, mu_QK, alpha``.
    """
    from . import lambdified as lam
    loss = np.asarray(loss, dtype=float)
    if parameterization == "CACO":
        if state_at_loss is None:
            from .closed_form import state_at_loss
        st = state_at_loss(loss, ratio, m=m, n=n, b=b, M=M)
        return {k: np.asarray(getattr(st, k), dtype=float) for k in ("mu_OV", "mu_QK", "alpha")}
    alpha_f = lam.alpha_fn().func
    mu_OV0, mu_QK0 = (float(v) for v in lam.initial_point_fn(parameterization).func(eps, b))
    s = np.asarray(lam.margin_at_loss_fn().func(loss, M), dtype=float)

    def mu_QK_of(x):
        return orbit_mu_QK(parameterization, x, ratio, m=m, n=n, b=b, M=M, eps=eps,
                           precise=False)
    alpha0 = float(alpha_f(mu_QK0, m, n))
    lo = np.maximum(s, mu_OV0)
    hi = np.maximum(s / alpha0, lo)
    x = _bisect(lambda x: alpha_f(mu_QK_of(x), m, n) * x - s, lo, hi)
    u = orbit_mu_QK(parameterization, x, ratio, m=m, n=n, b=b, M=M, eps=eps)
    return {"mu_OV": x, "mu_QK": u, "alpha": np.asarray(alpha_f(u, m, n), dtype=float)}


def orbit_mu_QK(parameterization, mu_OV, ratio, *, m=5, n=50, b=50, M=20, eps=1e-2,
                precise=True):
    r"""mu_QK on the orbit through the initial point (scale ``eps``) at the given mu_OV.

    CA..: the explicit orbit :func:`numerics.lambdified.orbit_fn`
    (:math:`\mu_{QK} = K - \omega(K + \log(m/n))`), which cancels badly while
    mu_QK is tiny; with ``precise`` it is evaluated with the mpmath backend at
    40 digits.  FA..: the implicit orbit
    (:func:`~numerics.lambdified.orbit_residual_fn`, increasing in mu_QK)
    solved by vectorized bisection in :math:`\log\mu_{QK}`.
    """
    import mpmath

    from . import lambdified as lam
    P = parameterization
    x = np.asarray(mu_OV, dtype=float)
    cfg = {"m": m, "n": n, "b": b, "M": M}
    params = _param_tuple(P, cfg, ratio)
    mu_OV0, mu_QK0 = (float(v) for v in lam.initial_point_fn(P).func(eps, b))
    if P[0] == "C":
        if not precise:
            return np.asarray(lam.orbit_fn(P).func(x, mu_OV0, mu_QK0, *params), dtype=float)
        f = lam.orbit_fn(P, "mpmath").func
        with mpmath.workdps(40):
            mp_par = [mpmath.mpf(v) for v in (mu_OV0, mu_QK0, *params)]
            out = [float(f(mpmath.mpf(float(xi)), *mp_par)) for xi in x.ravel()]
        return np.array(out).reshape(x.shape)
    res = lam.orbit_residual_fn(P).func
    log_lo = np.full(x.shape, math.log(mu_QK0))
    log_hi = log_lo + 1.0
    for _ in range(200):                                 # grow the bracket
        bad = res(x, np.exp(log_hi), mu_OV0, mu_QK0, *params) < 0
        if not np.any(bad):
            break
        log_hi = np.where(bad, log_hi + 2.0 * (log_hi - log_lo), log_hi)
    v = _bisect(lambda lu: res(x, np.exp(lu), mu_OV0, mu_QK0, *params), log_lo, log_hi)
    return np.exp(v)


def _first_integral_parts(P):
    """Lambdified first integral H and the sum of the absolute values of its
    terms (the scale of H's cancellation), arguments ``(mu_OV, mu_QK, *PARAMS)``."""
    import sympy as sp

    from . import lambdified as lam
    H = lam.first_integral_fn(P)
    terms = sp.Add.make_args(sp.sympify(H.expr))
    scale = lam.numeric(sum(sp.Abs(t) for t in terms), H.args, stable=False)
    return H.func, scale.func


# --------------------------------------------------------------------------- #
# one (parameterization, ratio) group
# --------------------------------------------------------------------------- #
def _group(P, r, cfg, opts, tol, state_at_loss):
    from . import lambdified as lam
    from .attention_model import AttentionModel
    from .closed_form import time_to_loss
    from .reduced_ode import solve_reduced
    from .training import gradient_descent, gradient_flow

    out = []

    def add(quantity, value, tolerance, **detail):
        out.append(Check(P, r, quantity, float(value), tolerance, detail))

    m, n, b, M = cfg["m"], cfg["n"], cfg["b"], cfg["M"]
    eps = opts["eps"]
    rk = dict(m=m, n=n, b=b, M=M, eta_QK=r, eta_OV=1.0, eps=eps, method="DOP853",
              rtol=_RED_RTOL, atol=_RED_ATOL)
    model = AttentionModel(P, m=m, n=n, b=b, M=M, eta_QK=r, eta_OV=1.0)
    p0 = model.init_params("structured", eps=eps)
    thresholds = opts["thresholds"]

    # time to the target loss, grid
    red_T = solve_reduced(P, target_loss=opts["target_loss"], **rk)
    if red_T.status != 1:
        add(f"reduced flow reaches loss {opts['target_loss']:g}", math.nan, tol["flow"],
            message=str(red_T.message))
        return out
    T = float(red_T.t[-1])
    tg = np.logspace(math.log10(T) - opts["decades"], math.log10(T), opts["n_t"])
    tg[-1] = T

    # full flow and reduced flow on the grid
    full = gradient_flow(model, p0, tg, t_span=(0.0, T), rtol=_FULL_RTOL, atol=_FULL_ATOL,
                         loss_thresholds=thresholds)
    red = solve_reduced(P, t_eval=tg, t_span=(0.0, T), loss_thresholds=thresholds, **rk)
    ok_full = full.status == 0 and full.t.shape == tg.shape
    ok_red = red.status == 0 and np.shape(red.t) == tg.shape
    if not (ok_full and ok_red):
        add("flow integration", math.nan, tol["flow"],
            full=str(full.message), reduced=str(red.message))
        return out

    for q in ("mu_OV", "mu_QK", "alpha"):
        add(f"flow~reduced {q}", _rel_dev(getattr(full, q), getattr(red, q)), tol["flow"])

    # closed forms at the full-model losses
    logM = math.log(M)
    mask = full.loss < logM
    cf = closed_form_state(P, full.loss[mask], r, m=m, n=n, b=b, M=M, eps=eps,
                           state_at_loss=state_at_loss)
    if P == "CACO":
        labels = dict.fromkeys(("mu_OV", "mu_QK", "alpha"), "state_at_loss")
    else:
        # the orbit relation is evaluated at the full-model mu_OV (well conditioned)
        labels = {"mu_OV": "margin+orbit", "mu_QK": "orbit", "alpha": "orbit"}
        cf["mu_QK"] = orbit_mu_QK(P, full.mu_OV[mask], r, m=m, n=n, b=b, M=M, eps=eps)
        cf["alpha"] = np.asarray(lam.alpha_fn().func(cf["mu_QK"], m, n), dtype=float)
    for q in ("mu_OV", "mu_QK", "alpha"):
        add(f"flow~closed({labels[q]}) {q}", _rel_dev(getattr(full, q)[mask], cf[q]),
            tol["flow"], points=int(mask.sum()))

    # first integral along the full trajectory
    H, Hscale = _first_integral_parts(P)
    params = _param_tuple(P, cfg, r)
    mo0, mq0 = model.project(p0)
    H0 = float(H(mo0, mq0, *params))
    Ht = np.asarray(H(full.mu_OV, full.mu_QK, *params), dtype=float)
    sc = np.maximum(np.asarray(Hscale(full.mu_OV, full.mu_QK, *params), dtype=float),
                    float(Hscale(mo0, mq0, *params)))
    add("first-integral drift", float(np.max(np.abs(Ht - H0) / sc)), tol["first_integral"],
        H0=H0)

    # states at the loss thresholds
    if thresholds:
        if P == "CACO":
            ref_st = closed_form_state(P, np.array(thresholds), r, m=m, n=n, b=b, M=M,
                                       eps=eps, state_at_loss=state_at_loss)
            ref_t = np.atleast_1d(time_to_loss(np.array(thresholds), r, m=m, n=n, b=b, M=M))
            refs = {x: {"t": float(ref_t[i]), **{q: float(ref_st[q][i]) for q in
                                                  ("mu_OV", "mu_QK", "alpha")}}
                    for i, x in enumerate(thresholds)}
            src = "closed"
        else:
            refs = {x: red.crossings.get(x) for x in thresholds}
            src = "reduced"
        for x in thresholds:
            fc, rc = full.crossings.get(x), refs.get(x)
            if fc is None or rc is None:
                add(f"state@L={x:g} flow~{src}", math.nan, tol["flow"],
                    message="threshold not crossed")
                continue
            devs = {q: _rel_dev(fc[q], rc[q]) for q in ("t", "mu_OV", "mu_QK", "alpha")}
            add(f"state@L={x:g} flow~{src} (max of t,mu,alpha)", max(devs.values()),
                tol["flow"], **devs)

    # invariant family
    add("family distance (structured, max)", float(np.max(full.distance)), tol["distance"])
    if opts["random"]:
        pr = model.init_params("random", scale=opts["random_scale"], seed=0)
        rr = gradient_flow(model, pr, np.array([T / 2, T]), t_span=(0.0, T),
                           rtol=_RANDOM_RTOL, atol=_RANDOM_ATOL)
        add(f"family distance (random {opts['random_scale']:g}, at T)",
            float(rr.distance[-1]) if rr.distance.size else math.nan, None,
            T=T, loss=float(rr.loss[-1]) if rr.loss.size else None)

    # gradient descent -> flow
    Ns = opts["gd_steps"]
    if P[0] == "F":
        # a factorized QK circuit grows at a rate proportional to r: keep lr * r fixed
        Ns = tuple(N * max(1, math.ceil(r / 10)) for N in Ns)
    if len(Ns) >= 2:
        h_loss = max(logM - 0.2, 0.5 * logM)
        red_h = solve_reduced(P, target_loss=h_loss, **rk)
        if red_h.status != 1:
            add(f"reduced flow reaches loss {h_loss:g}", math.nan, tol["order"],
                message=str(red_h.message))
            return out
        Th = float(red_h.t[-1])
        K = 5
        tk = Th * np.arange(1, K + 1) / K
        tk[-1] = Th
        ref = gradient_flow(model, p0, tk, t_span=(0.0, Th), rtol=_FULL_RTOL, atol=_FULL_ATOL)
        if ref.status != 0 or ref.t.shape != tk.shape:
            add("GD reference flow", math.nan, tol["order"], message=str(ref.message))
            return out
        errs = []
        for N in Ns:
            gd = gradient_descent(model, p0, Th / N, N, record_every=N // K)
            if gd.status != 0 or gd.t.shape != (K + 1,) \
                    or not np.allclose(gd.t[1:], tk, rtol=1e-12, atol=0):
                errs.append(math.nan)
                continue
            errs.append(max(_rel_dev(gd.mu_OV[1:], ref.mu_OV), _rel_dev(gd.mu_QK[1:], ref.mu_QK)))
        for N1, N2, e1, e2 in zip(Ns[:-1], Ns[1:], errs[:-1], errs[1:]):
            order = math.log(e1 / e2) / math.log(N2 / N1) if e1 > 0 and e2 > 0 else math.nan
            add(f"GD order, lr=T_h/{N1}->T_h/{N2}", order, tol["order"],
                error_coarse=e1, error_fine=e2, T_h=Th, horizon_loss=h_loss)
        add(f"GD rel error, lr=T_h/{Ns[-1]}", errs[-1], None, T_h=Th, errors=errs, steps=Ns)
    return out


# --------------------------------------------------------------------------- #
# public API
# --------------------------------------------------------------------------- #
def _check_cfg(m, n, b, M):
    for name, v in (("m", m), ("n", n), ("b", b)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                or not (math.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
    if isinstance(M, bool) or not isinstance(M, (int, np.integer, float)) \
            or not math.isfinite(M) or M != int(M) or not 2 <= M <= _M_MAX:
        raise ValueError(f"M must be an integer in [2, {_M_MAX}], got {M!r}")
    return {"m": float(m), "n": float(n), "b": float(b), "M": int(M)}


def run_checks(parameterizations=PARAMETERIZATIONS, ratios=None, *, m=5, n=50, b=50, M=20,
               quick=False, eps=1e-2, random_scale=1e-3, target_loss=None, thresholds=None,
               tolerances=None, state_at_loss=None, progress=None) -> list:
    r"""Run the verification and return the list of :class:`Check` records.

    Parameters
    ----------
    parameterizations : str or iterable of str
        Any of ``"CACO", "CAFO", "FACO", "FAFO"`` (or ``"all"``).
    ratios : iterable of float, optional
        Learning-rate ratios r = eta_QK / eta_OV (eta_OV = 1). Default
        (0.1, 1, 10), or (1,) when ``quick``.
    m, n, b, M : model parameters (paper values by default).
    quick : bool
        Coarser grid (12 points on [T/10, T] instead of 40 on
        [1e-4 T, T]), target loss 0.1, thresholds (1, 0.3), two GD step
        sizes (one order), no random-init run.
    eps : float
        Scale of the structured initialization of factorized circuits.
    random_scale : float
        Standard deviation of the random initialization (reported only).
    target_loss : float, optional
        Loss at which the trajectory comparison ends (default 0.01, quick 0.1).
    thresholds : iterable of float, optional
        Loss levels whose crossing states are compared (default (1, 0.3, 0.1),
        quick (1, 0.3)); levels not in (target_loss, log M) are dropped.
    tolerances : dict, optional
        Overrides of :data:`DEFAULT_TOLERANCES` (keys ``flow``,
        ``first_integral``, ``distance``, ``order``).
    state_at_loss : callable, optional
        Replacement of :func:`numerics.closed_form.state_at_loss` (to show
        that a wrong closed form is detected).
    progress : callable, optional
        Called with a short string before each group.

    Returns
    -------
    list[Check]
        An unexpected exception in one group is recorded as a failing check
        (quantity ``"error: ..."``) and the other groups still run.

    Raises
    ------
    ValueError
        Invalid arguments.
    """
    cfg = _check_cfg(m, n, b, M)
    if isinstance(parameterizations, str):
        parameterizations = PARAMETERIZATIONS if parameterizations == "all" \
            else (parameterizations,)
    parameterizations = tuple(parameterizations)
    for P in parameterizations:
        if P not in PARAMETERIZATIONS:
            raise ValueError(f"parameterization must be one of {PARAMETERIZATIONS} or 'all', "
                             f"got {P!r}")
    if not parameterizations:
        raise ValueError("no parameterization given")
    if ratios is None:
        ratios = (1.0,) if quick else DEFAULT_RATIOS
    ratios = tuple(float(r) for r in ratios)
    if not ratios or not all(math.isfinite(r) and r > 0 for r in ratios):
        raise ValueError(f"ratios must be finite numbers > 0, got {ratios!r}")
    for name, v in (("eps", eps), ("random_scale", random_scale)):
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
    logM = math.log(cfg["M"])
    if target_loss is None:
        target_loss = 0.1 if quick else 0.01
    if not (math.isfinite(target_loss) and 0 < target_loss < logM - 0.2):
        raise ValueError(f"target_loss must be in (0, log M - 0.2), got {target_loss!r}")
    if thresholds is None:
        thresholds = (1.0, 0.3) if quick else (1.0, 0.3, 0.1)
    thresholds = tuple(float(x) for x in thresholds if target_loss < float(x) < logM)
    tol = dict(DEFAULT_TOLERANCES)
    if tolerances:
        unknown = set(tolerances) - set(tol)
        if unknown:
            raise ValueError(f"unknown tolerance keys {sorted(unknown)}; valid: {sorted(tol)}")
        tol.update(tolerances)
    opts = {"eps": float(eps), "random_scale": float(random_scale),
            "target_loss": float(target_loss), "thresholds": thresholds,
            "n_t": 12 if quick else 40, "decades": 1.0 if quick else 4.0,
            "random": not quick,
            "gd_steps": (500, 1000) if quick else (1000, 2000, 4000)}
    checks = []
    for P in parameterizations:
        for r in ratios:
            if progress is not None:
                progress(f"{P} r={r:g}")
            try:
                checks.extend(_group(P, r, cfg, opts, tol, state_at_loss))
            except Exception as exc:  # noqa: BLE001 - recorded as a failing check
                msg = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
                checks.append(Check(P, r, f"error: {msg}", math.nan, tol["flow"]))
    return checks


def summarize(checks, elapsed=None, settings=None) -> dict:
    """Counts of a list of checks: ``n_checks, n_pass, n_fail, n_info, ok``."""
    st = [c.status for c in checks]
    out = {"n_checks": len(st), "n_pass": st.count("PASS"), "n_fail": st.count("FAIL"),
           "n_info": st.count("INFO"), "ok": "FAIL" not in st}
    if elapsed is not None:
        out["elapsed_s"] = round(float(elapsed), 3)
    if settings is not None:
        out["settings"] = _json_clean(settings)
    return out


def _fmt_tol(tol):
    if tol is None:
        return "(report)"
    if isinstance(tol, tuple):
        return f"[{tol[0]:g}, {tol[1]:g}]"
    return f"<= {tol:.0e}"


def format_table(checks) -> str:
    """The checks as a fixed-width text table."""
    head = ("param", "ratio", "quantity", "value", "tolerance", "status")
    rows = [(c.parameterization, f"{c.ratio:g}", c.quantity,
             f"{c.value:.3e}" if math.isfinite(c.value) else "nan",
             _fmt_tol(c.tolerance), c.status) for c in checks]
    w = [max(len(str(x[i])) for x in [head] + rows) for i in range(len(head))]
    line = "  ".join("{:<%d}" % wi for wi in w[:3]) + "  " + \
        "  ".join("{:>%d}" % wi for wi in w[3:5]) + "  {:<%d}" % w[5]
    out = [line.format(*head), "  ".join("-" * wi for wi in w)]
    out += [line.format(*row) for row in rows]
    return "\n".join(out)


# --------------------------------------------------------------------------- #
# command line
# --------------------------------------------------------------------------- #
class _ArgumentError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage block, exit status 2 (in main)
        raise _ArgumentError(message)


def _parse_params(text):
    out = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        key, sep, val = item.partition("=")
        key = key.strip()
        if not sep or key not in DEFAULT_PARAMS:
            raise _ArgumentError(f"--params: expected key=value with key in m,n,b,M; got {item!r}")
        if key in out:
            raise _ArgumentError(f"--params: {key} given twice")
        try:
            v = float(val)
        except ValueError:
            raise _ArgumentError(f"--params: {key} must be a number; got {val.strip()!r}") from None
        if key == "M":
            if not (math.isfinite(v) and v == int(v) and 2 <= v <= _M_MAX):
                raise _ArgumentError(f"--params: M must be an integer in [2, {_M_MAX}] "
                                     f"(the full model has 6 M^2 to 7 M^2 parameters); "
                                     f"got {val.strip()!r}")
            v = int(v)
        elif not (math.isfinite(v) and v > 0):
            raise _ArgumentError(f"--params: {key} must be a finite number > 0; got {val.strip()!r}")
        out[key] = v
    if not out:
        raise _ArgumentError("--params: empty")
    return out


def _parse_ratios(text):
    vals = []
    for item in text.split(","):
        try:
            v = float(item)
        except ValueError:
            raise _ArgumentError(f"--ratios: not a number: {item.strip()!r}") from None
        if not (math.isfinite(v) and v > 0):
            raise _ArgumentError(f"--ratios: ratios must be finite numbers > 0; got {item.strip()!r}")
        vals.append(v)
    return tuple(vals)


def _build_parser():
    p = _Parser(prog="python -m numerics.verify",
                description="Verify the full attention model against the reduced ODE and the "
                            "closed forms (exit 0: all checks pass, 1: a check fails, "
                            "2: bad arguments).")
    p.add_argument("--params", default=None, metavar="m=5,n=50,b=50,M=20",
                   help="model parameters (any subset)")
    p.add_argument("--ratios", default=None, metavar="0.1,1,10",
                   help="learning-rate ratios eta_QK/eta_OV (eta_OV = 1); "
                        "default 0.1,1,10 (quick: 1)")
    p.add_argument("--parameterization", default="all",
                   choices=list(PARAMETERIZATIONS) + ["all"])
    p.add_argument("--quick", action="store_true", help="fewer, faster checks")
    p.add_argument("--json", action="store_true", help="JSON output")
    return p


def main(argv=None) -> int:
    """Command-line entry point; returns the exit status."""
    argv_list = sys.argv[1:] if argv is None else list(argv)
    if any(a == "--task" or a.startswith("--task=") for a in argv_list):
        from .task_verify import main as task_main  # a task of derivations.task (issue 9)
        return task_main(argv_list)
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
        params = dict(DEFAULT_PARAMS)
        if args.params is not None:
            params.update(_parse_params(args.params))
        ratios = _parse_ratios(args.ratios) if args.ratios is not None else None
    except _ArgumentError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    try:
        checks = run_checks(args.parameterization, ratios, quick=args.quick, **params)
    except ValueError as exc:  # invalid combination not caught above
        print(f"{parser.prog}: error: {exc}".splitlines()[0], file=sys.stderr)
        return 2
    elapsed = time.perf_counter() - t0
    used = ratios if ratios is not None else ((1.0,) if args.quick else DEFAULT_RATIOS)
    settings = {**params, "ratios": list(used),
                "parameterization": args.parameterization, "quick": args.quick}
    summary = summarize(checks, elapsed, settings)
    if args.json:
        print(json.dumps({"checks": [c.as_dict() for c in checks], "summary": summary},
                         indent=1))
    else:
        print(format_table(checks))
        print(f"\n{summary['n_pass']} passed, {summary['n_fail']} failed, "
              f"{summary['n_info']} reported; {elapsed:.1f} s")
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
