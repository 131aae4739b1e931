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
     (:meth:`ReducedSystem.orbit <numerics.reduced_system.ReducedSystem.orbit>`)
     gives :math:`\mu_{QK}` and :math:`\alpha` at the full-model
     :math:`\mu_{OV}`, and :math:`\mu_{OV}` is compared with the
     intersection of the orbit with the margin :math:`\alpha\mu_{OV} = s(L)`
     at the full-model loss
     (:meth:`ReducedSystem.state_at_loss <numerics.reduced_system.ReducedSystem.state_at_loss>`).  (Going through the
     loss costs digits while the loss is within :math:`10^{-6}` of
     :math:`\log M`: :math:`s` then carries a relative error of about
     :math:`10^{-16}/(\log M - L)`, which is why the margin+orbit
     :math:`\mu_{OV}` rows of CAFO/FAFO show about :math:`10^{-9}`.)

   the relative drift of the first integral
   (:meth:`ReducedSystem.first_integral <numerics.reduced_system.ReducedSystem.first_integral>`) along the full-model
   trajectory, :math:`\max_t |H(t) - H(0)| / \max(S(t), S(0))` with S the
   sum of the absolute values of H's terms (the scale on which H cancels); and the
   states :math:`(t, \mu_{OV}, \mu_{QK}, \alpha)` where the loss crosses the
   thresholds (default 1, 0.3, 0.1): full-flow events vs
   :func:`~numerics.closed_form.state_at_loss` and
   :func:`~numerics.closed_form.time_to_loss` (CACO) or vs the reduced
   flow's events (the others).

2. **Invariant family.**  The relative distance of the full-model circuits
   from the family (:func:`numerics.invariant_family.distance_from_family`) stays below
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
   :math:`[0.8, 1.2]`.  While an order is off and the coarse run's relative
   error exceeds :data:`ASYMPTOTIC_ERROR` (not yet first order), the step
   counts are doubled (within :data:`MAX_DESCENT_STEPS`); when the counts
   would exceed the budget, or the runs stay out of the first-order regime
   (e.g. m = 1e-6), the check is reported as not verifiable (status
   ``N/V``), not as an order.

Each kind of check is a function of a :class:`Context` (the group's system,
model, initialization and lazily computed flows), registered in
:data:`CHECK_KINDS` (``flow``, ``closed_form``, ``first_integral``,
``crossings``, ``family``, ``descent``); another family of checks registers
more kinds with :func:`check_kind`.

Output: a table (one row per check: parameterization, ratio, quantity,
value, tolerance, PASS/FAIL/INFO/N/V) or, with ``--json``, ``{"checks": [...],
"summary": {...}}``.  Exit status 0 when every check passes, 1 when any
fails or is not verifiable, 2 on bad arguments or settings it cannot finish
(M > 200, ratios outside :data:`RATIO_RANGE`; one line on stderr, before any
work).

Options::

    --params m=5,n=50,b=50,M=20     any subset of the model parameters (M <= 200)
    --ratios 0.1,1,10               learning-rate ratios eta_QK / eta_OV, each in
                                    [1e-4, 1e4]
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
:class:`Check` records (``kinds=`` selects kinds of check). The parser is
:func:`build_parser`.

>>> from numerics.verify import run_checks, summarize
>>> checks = run_checks("CACO", [1.0], quick=True, kinds=["flow"])
>>> [c.quantity for c in checks], summarize(checks)["ok"]
(['flow~reduced mu_OV', 'flow~reduced mu_QK', 'flow~reduced alpha'], True)
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from derivations.vocabulary import PAPER_SETTING, PARAMETERIZATIONS

from .validation import check_model_parameters

__all__ = ["Check", "run_checks", "summarize", "format_table", "main",
           "DEFAULT_PARAMS", "DEFAULT_RATIOS", "DEFAULT_TOLERANCES", "PARAMETERIZATIONS",
           "Context", "CHECK_KINDS", "check_kind", "check_ratios", "descent_steps",
           "build_parser", "RATIO_RANGE", "MAX_DESCENT_STEPS", "ASYMPTOTIC_ERROR",
           "NOT_VERIFIABLE"]

DEFAULT_PARAMS = dict(PAPER_SETTING)
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
#: Accepted learning-rate ratios: beyond, the full model's flow (explicit
#: DOP853 on rates 1 and r) needs more steps than a verification can afford.
RATIO_RANGE = (1e-4, 1e4)
#: Largest total number of gradient-descent steps of one descent-order check;
#: beyond it the check is reported as not verifiable.
MAX_DESCENT_STEPS = 200_000
#: Relative error of the coarsest descent run above which the runs are not yet
#: in the first-order regime: an order outside the accepted range is then
#: retried with twice the steps (at most :data:`MAX_DESCENT_REFINEMENTS` times,
#: within :data:`MAX_DESCENT_STEPS`), and reported as not verifiable if it
#: stays there.
ASYMPTOTIC_ERROR = 0.1
MAX_DESCENT_REFINEMENTS = 3
#: Tolerance marker of a check that could not be carried out (status ``N/V``).
NOT_VERIFIABLE = "not verifiable"


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
    tolerance : float, (float, float), None or NOT_VERIFIABLE
        Upper bound (``value <= tolerance``), accepted closed range,
        ``None`` for a value that is only reported (status INFO), or
        :data:`NOT_VERIFIABLE` for a check these settings cannot carry out
        (status N/V; the reason is in ``detail["message"]``).
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
        """``"PASS"``, ``"FAIL"``, ``"INFO"`` (reported, not checked) or
        ``"N/V"`` (not verifiable with these settings)."""
        if self.tolerance is None:
            return "INFO"
        if isinstance(self.tolerance, str):
            return "N/V"
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
        elif tol is not None and not isinstance(tol, str):
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


# --------------------------------------------------------------------------- #
# the context of one (parameterization, ratio) group
# --------------------------------------------------------------------------- #
class _Missing(Exception):
    """A prerequisite of a check could not be computed (already recorded)."""


class Context:
    """What the checks of one (parameterization, ratio) group share.

    The expensive pieces (the reduced and full flows on the comparison grid)
    are computed on first use and cached; a prerequisite that fails is
    recorded once as a failing check and the checks needing it are skipped.

    Attributes
    ----------
    parameterization : str
    ratio : float
    settings : dict
        ``m, n, b, M``.
    options : dict
        Run options (grid, thresholds, GD step counts, ...).
    tolerances : dict
    system : numerics.reduced_system.ReducedSystem
        Balanced rates eta_OV = 1, eta_QK = ratio, paper initialization.
    model : numerics.attention_model.AttentionModel
    p0 : dict
        Structured initialization of the full model.
    checks : list[Check]
    """

    def __init__(self, parameterization, ratio, settings, options, tolerances,
                 state_at_loss=None):
        from .attention_model import AttentionModel
        from .invariant_family import structured_params
        from .reduced_system import ReducedSystem
        self.parameterization, self.ratio = parameterization, float(ratio)
        self.settings, self.options, self.tolerances = settings, options, tolerances
        self.state_at_loss_override = state_at_loss
        rates = dict(eta_QK=self.ratio, eta_OV=1.0)
        self.system = ReducedSystem(parameterization, **settings, **rates, eps=options["eps"])
        self.model = AttentionModel(parameterization, **settings, **rates)
        self.p0 = structured_params(self.model, eps=options["eps"])
        self.checks = []
        self._cache = {}

    def add(self, quantity, value, tolerance, **detail):
        """Record one check."""
        self.checks.append(Check(self.parameterization, self.ratio, quantity, float(value),
                                 tolerance, detail))

    def _once(self, key, compute):
        if key not in self._cache:
            try:
                self._cache[key] = compute()
            except _Missing:
                self._cache[key] = None
                raise
        if self._cache[key] is None:
            raise _Missing(key)
        return self._cache[key]

    def reduced(self, **kw):
        """Reduced flow with the verification tolerances."""
        return self.system.integrate(rtol=_RED_RTOL, atol=_RED_ATOL, **kw)

    @property
    def horizon(self):
        """``(T, grid)``: time T at which the reduced flow reaches the target
        loss, and the log-spaced comparison grid on [10^-decades T, T]."""
        def compute():
            target = self.options["target_loss"]
            red = self.reduced(target_loss=target)
            if red.status != 1:
                self.add(f"reduced flow reaches loss {target:g}", math.nan,
                         self.tolerances["flow"], message=str(red.message))
                raise _Missing("horizon")
            T = float(red.t[-1])
            grid = np.logspace(math.log10(T) - self.options["decades"], math.log10(T),
                               self.options["n_t"])
            grid[-1] = T
            return T, grid
        return self._once("horizon", compute)

    @property
    def flows(self):
        """``(full, reduced)`` trajectories on the grid, with the loss thresholds."""
        def compute():
            from .training import gradient_flow
            T, grid = self.horizon
            thr = self.options["thresholds"]
            full = gradient_flow(self.model, self.p0, grid, t_span=(0.0, T), rtol=_FULL_RTOL,
                                 atol=_FULL_ATOL, loss_thresholds=thr)
            red = self.reduced(t_eval=grid, t_span=(0.0, T), loss_thresholds=thr)
            if not (full.status == 0 and full.t.shape == grid.shape
                    and red.status == 0 and red.t.shape == grid.shape):
                self.add("flow integration", math.nan, self.tolerances["flow"],
                         full=str(full.message), reduced=str(red.message))
                raise _Missing("flows")
            return full, red
        return self._once("flows", compute)

    def closed_state(self, loss):
        """:meth:`ReducedSystem.state_at_loss`, or the injected replacement
        (CACO, called as ``f(loss, ratio, m=, n=, b=, M=)``)."""
        f = self.state_at_loss_override
        if f is None or self.parameterization != "CACO":
            return self.system.state_at_loss(loss)
        st = f(loss, self.ratio, **self.settings)
        return {k: np.asarray(getattr(st, k), dtype=float) for k in ("mu_OV", "mu_QK", "alpha")}


# --------------------------------------------------------------------------- #
# the kinds of check (a registry: each takes a Context and records checks)
# --------------------------------------------------------------------------- #
#: Kind name -> check function, in the order they run.
CHECK_KINDS = {}


def check_kind(name):
    """Register a check function under ``name`` in :data:`CHECK_KINDS`."""
    def register(func):
        CHECK_KINDS[name] = func
        return func
    return register


@check_kind("flow")
def check_flow_vs_reduced(ctx):
    """Full-model flow vs reduced ODE on the grid (mu_OV, mu_QK, alpha)."""
    full, red = ctx.flows
    for q in ("mu_OV", "mu_QK", "alpha"):
        ctx.add(f"flow~reduced {q}", _rel_dev(full[q], red[q]), ctx.tolerances["flow"])


#: A comparison that goes through the loss is kept only at points where the
#: loss's own rounding, amplified by the margin's conditioning
#: (relative error about eps L / (log M - L)), stays below this fraction of
#: the tolerance.
_CONDITIONING_MARGIN = 0.1


@check_kind("closed_form")
def check_flow_vs_closed_form(ctx):
    """Full-model flow vs the closed forms at the full-model losses (CACO) or
    the orbit at the full-model mu_OV and the margin+orbit mu_OV (others).

    What goes through the loss (CACO: all three; others: the margin+orbit
    mu_OV) is compared only where the loss is far enough below log M for
    the margin s(L) to be resolved (estimated relative error
    eps L/(log M - L) below a tenth of the tolerance); if no point is, the
    comparison is not verifiable."""
    full, _ = ctx.flows
    tol = ctx.tolerances["flow"]
    logM = math.log(ctx.settings["M"])
    mask = full.loss < logM
    with np.errstate(divide="ignore"):
        cond = np.finfo(float).eps * full.loss / (logM - full.loss)
    resolved = mask & (cond <= _CONDITIONING_MARGIN * tol)
    if ctx.parameterization == "CACO":
        labels = dict.fromkeys(("mu_OV", "mu_QK", "alpha"), "state_at_loss")
        use = dict.fromkeys(labels, resolved)
    else:
        # the orbit relation is evaluated at the full-model mu_OV (well conditioned)
        labels = {"mu_OV": "margin+orbit", "mu_QK": "orbit", "alpha": "orbit"}
        use = {"mu_OV": resolved, "mu_QK": mask, "alpha": mask}
    cf = ctx.closed_state(full.loss[resolved]) if resolved.any() else None
    if ctx.parameterization != "CACO":
        u = ctx.system.orbit(full.mu_OV[mask], precise=True)
        orbit = {"mu_QK": u, "alpha": np.asarray(ctx.system.alpha(u), dtype=float)}
    for q in ("mu_OV", "mu_QK", "alpha"):
        name = f"flow~closed({labels[q]}) {q}"
        m = use[q]
        dropped = int(mask.sum() - m.sum())
        if not m.any():
            ctx.add(name, math.nan, NOT_VERIFIABLE, points=0, dropped=dropped,
                    message="the loss stays too close to log M to resolve the margin")
            continue
        ref = orbit[q] if (ctx.parameterization != "CACO" and q != "mu_OV") else cf[q]
        ctx.add(name, _rel_dev(full[q][m], ref), tol, points=int(m.sum()), dropped=dropped)


@check_kind("first_integral")
def check_first_integral(ctx):
    """Relative drift of the first integral along the full-model trajectory."""
    from .invariant_family import project
    full, _ = ctx.flows
    sys = ctx.system
    mo0, mq0 = project(ctx.model, ctx.p0)
    H0 = float(sys.first_integral(mo0, mq0))
    Ht = np.asarray(sys.first_integral(full.mu_OV, full.mu_QK), dtype=float)
    scale = np.maximum(sys.first_integral_scale(full.mu_OV, full.mu_QK),
                       float(sys.first_integral_scale(mo0, mq0)))
    ctx.add("first-integral drift", float(np.max(np.abs(Ht - H0) / scale)),
            ctx.tolerances["first_integral"], H0=H0)


@check_kind("crossings")
def check_crossings(ctx):
    """States where the loss crosses the thresholds: full flow vs closed
    forms (CACO: state_at_loss, time_to_loss) or vs the reduced flow."""
    thresholds = ctx.options["thresholds"]
    if not thresholds:
        return
    full, red = ctx.flows
    if ctx.parameterization == "CACO":
        from .closed_form import time_to_loss
        st = ctx.closed_state(np.array(thresholds))
        ts = np.atleast_1d(time_to_loss(np.array(thresholds), ctx.ratio, **ctx.settings))
        refs = [{"t": float(ts[i]), **{q: float(st[q][i]) for q in ("mu_OV", "mu_QK", "alpha")}}
                for i in range(len(thresholds))]
        src = "closed"
    else:
        refs, src = red.crossings, "reduced"
    for x, fc, rc in zip(thresholds, full.crossings, refs):
        if fc is None or rc is None:
            ctx.add(f"state@L={x:g} flow~{src}", math.nan, ctx.tolerances["flow"],
                    message="threshold not crossed")
            continue
        devs = {q: _rel_dev(fc[q], rc[q]) for q in ("t", "mu_OV", "mu_QK", "alpha")}
        ctx.add(f"state@L={x:g} flow~{src} (max of t,mu,alpha)", max(devs.values()),
                ctx.tolerances["flow"], **devs)


@check_kind("family")
def check_family_distance(ctx):
    """Distance from the invariant family: structured init (checked), random
    init (reported)."""
    from .training import gradient_flow
    full, _ = ctx.flows
    ctx.add("family distance (structured, max)", float(np.max(full.distance)),
            ctx.tolerances["distance"])
    if ctx.options["random"]:
        T, _ = ctx.horizon
        scale = ctx.options["random_scale"]
        pr = ctx.model.random_params(scale=scale, seed=0)
        rr = gradient_flow(ctx.model, pr, np.array([T / 2, T]), t_span=(0.0, T),
                           rtol=_RANDOM_RTOL, atol=_RANDOM_ATOL)
        ctx.add(f"family distance (random {scale:g}, at T)",
                float(rr.distance[-1]) if rr.distance.size else math.nan, None,
                T=T, loss=float(rr.loss[-1]) if rr.loss.size else None)


def descent_steps(parameterization, ratio, base=(1000, 2000, 4000)):
    """Step counts of the descent-order check: ``base``, times ceil(r/10) for a
    factorized QK circuit with r > 10 (its growth rate scales with r, so
    lr * r is kept fixed)."""
    if parameterization[0] == "F":
        return tuple(N * max(1, math.ceil(ratio / 10)) for N in base)
    return tuple(base)


@check_kind("descent")
def check_descent_order(ctx):
    """Gradient descent -> flow: the error must halve with the step size
    (observed orders in the accepted range). The step counts adapt (doubled
    while an order is off and the coarse error exceeds
    :data:`ASYMPTOTIC_ERROR`); reported as not verifiable when they exceed
    :data:`MAX_DESCENT_STEPS` or the runs stay out of the first-order regime."""
    from .training import gradient_descent, gradient_flow
    P, r, tol = ctx.parameterization, ctx.ratio, ctx.tolerances["order"]
    Ns = descent_steps(P, r, ctx.options["gd_steps"])
    if len(Ns) < 2:
        return
    label = f"GD order, lr=T_h/{Ns[0]}->T_h/{Ns[-1]}"
    if sum(Ns) > MAX_DESCENT_STEPS:
        ctx.add(label, math.nan, NOT_VERIFIABLE, steps=Ns,
                message=f"needs {sum(Ns)} descent steps (limit {MAX_DESCENT_STEPS})")
        return
    logM = math.log(ctx.settings["M"])
    h_loss = max(logM - 0.2, 0.5 * logM)
    red_h = ctx.reduced(target_loss=h_loss)
    if red_h.status != 1:
        ctx.add(f"reduced flow reaches loss {h_loss:g}", math.nan, tol, message=str(red_h.message))
        return
    Th = float(red_h.t[-1])
    K = 5
    tk = Th * np.arange(1, K + 1) / K
    tk[-1] = Th
    ref = gradient_flow(ctx.model, ctx.p0, tk, t_span=(0.0, Th), rtol=_FULL_RTOL, atol=_FULL_ATOL)
    if ref.status != 0 or ref.t.shape != tk.shape:
        ctx.add("GD reference flow", math.nan, tol, message=str(ref.message))
        return
    def errors(Ns):
        out = []
        for N in Ns:
            gd = gradient_descent(ctx.model, ctx.p0, Th / N, N, record_every=N // K)
            if gd.status != 0 or gd.t.shape != (K + 1,) \
                    or not np.allclose(gd.t[1:], tk, rtol=1e-12, atol=0):
                out.append(math.nan)
                continue
            out.append(max(_rel_dev(gd.mu_OV[1:], ref.mu_OV), _rel_dev(gd.mu_QK[1:], ref.mu_QK)))
        return out

    def orders(Ns, errs):
        return [math.log(e1 / e2) / math.log(N2 / N1) if e1 > 0 and e2 > 0 else math.nan
                for N1, N2, e1, e2 in zip(Ns[:-1], Ns[1:], errs[:-1], errs[1:])]

    def accepted(o):
        return math.isfinite(o) and tol[0] <= o <= tol[1]

    # adapt the step count: while an order is off and the coarse run is not yet in
    # the first-order regime, halve the steps (within the budget)
    errs = errors(Ns)
    for _ in range(MAX_DESCENT_REFINEMENTS):
        if all(map(accepted, orders(Ns, errs))) or not errs[0] > ASYMPTOTIC_ERROR \
                or 2 * sum(Ns) > MAX_DESCENT_STEPS:
            break
        Ns = tuple(2 * N for N in Ns)
        errs = errors(Ns)
    for N1, N2, e1, e2, order in zip(Ns[:-1], Ns[1:], errs[:-1], errs[1:], orders(Ns, errs)):
        detail = dict(error_coarse=e1, error_fine=e2, T_h=Th, horizon_loss=h_loss)
        name = f"GD order, lr=T_h/{N1}->T_h/{N2}"
        if not accepted(order) and math.isfinite(e1) and e1 > ASYMPTOTIC_ERROR:
            ctx.add(name, math.nan, NOT_VERIFIABLE, **detail,
                    message=f"relative error {e1:.2g} > {ASYMPTOTIC_ERROR:g} at the most "
                            "steps the budget allows: not in the first-order regime")
            continue
        ctx.add(name, order, tol, **detail)
    ctx.add(f"GD rel error, lr=T_h/{Ns[-1]}", errs[-1], None, T_h=Th, errors=errs, steps=Ns)


def _group(P, r, cfg, opts, tol, state_at_loss, kinds):
    """Run the check kinds ``kinds`` for one (parameterization, ratio)."""
    ctx = Context(P, r, cfg, opts, tol, state_at_loss)
    for kind in kinds:
        try:
            CHECK_KINDS[kind](ctx)
        except _Missing:
            continue
    return ctx.checks


# --------------------------------------------------------------------------- #
# public API
# --------------------------------------------------------------------------- #
def _check_cfg(m, n, b, M):
    m, n, b, M = check_model_parameters(m, n, b, M)
    if M > _M_MAX:
        raise ValueError(f"M must be an integer in [2, {_M_MAX}] (the full model has 6 M^2 "
                         f"to 7 M^2 parameters); got {M!r}")
    return {"m": m, "n": n, "b": b, "M": M}


def check_ratios(ratios):
    """The learning-rate ratios as floats in :data:`RATIO_RANGE`, else ValueError."""
    lo, hi = RATIO_RANGE
    ratios = tuple(float(r) for r in ratios)
    if not ratios or not all(math.isfinite(r) and lo <= r <= hi for r in ratios):
        raise ValueError(f"ratios must be finite numbers in [{lo:g}, {hi:g}] (beyond, the full "
                         f"model's flow cannot be integrated in bounded time); got {ratios!r}")
    return ratios


def run_checks(parameterizations=PARAMETERIZATIONS, ratios=None, *, m=PAPER_SETTING["m"],
               n=PAPER_SETTING["n"], b=PAPER_SETTING["b"], M=PAPER_SETTING["M"], quick=False,
               eps=1e-2, random_scale=1e-3, target_loss=None, thresholds=None,
               tolerances=None, state_at_loss=None, progress=None, kinds=None) -> list:
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
    kinds : iterable of str, optional
        Which kinds of check to run (keys of :data:`CHECK_KINDS`; default all).

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
    ratios = check_ratios(ratios)
    kinds = tuple(CHECK_KINDS) if kinds is None else tuple(kinds)
    unknown = [k for k in kinds if k not in CHECK_KINDS]
    if unknown or not kinds:
        raise ValueError(f"kinds must be a non-empty subset of {list(CHECK_KINDS)}; got {kinds!r}")
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
                checks.extend(_group(P, r, cfg, opts, tol, state_at_loss, kinds))
            except Exception as exc:  # noqa: BLE001 - recorded as a failing check
                msg = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
                checks.append(Check(P, r, f"error: {msg}", math.nan, tol["flow"]))
    return checks


def summarize(checks, elapsed=None, settings=None) -> dict:
    """Counts of a list of checks: ``n_checks, n_pass, n_fail, n_info,
    n_not_verifiable, ok`` (ok: nothing failed and everything was verifiable)."""
    st = [c.status for c in checks]
    out = {"n_checks": len(st), "n_pass": st.count("PASS"), "n_fail": st.count("FAIL"),
           "n_info": st.count("INFO"), "n_not_verifiable": st.count("N/V"),
           "ok": "FAIL" not in st and "N/V" not in st}
    if elapsed is not None:
        out["elapsed_s"] = round(float(elapsed), 3)
    if settings is not None:
        out["settings"] = _json_clean(settings)
    return out


def _fmt_tol(tol):
    if tol is None:
        return "(report)"
    if isinstance(tol, str):
        return "(n/a)"
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
        if key == "M" and math.isfinite(v) and v == int(v):
            v = int(v)
        out[key] = v
    if not out:
        raise _ArgumentError("--params: empty")
    return out


def _parse_ratios(text):
    """Comma-separated numbers (their range is checked by :func:`check_ratios`)."""
    items = text.split(",")
    try:
        return tuple(float(item) for item in items)
    except ValueError:
        bad = next(i.strip() for i in items if not _is_number(i))
        raise _ArgumentError(f"--ratios: not a number: {bad!r}") from None


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def build_parser():
    """The argument parser of ``python -m numerics.verify`` (also used by the docs)."""
    p = _Parser(prog="python -m numerics.verify",
                description="Verify the full attention model against the reduced ODE and the "
                            "closed forms (exit 0: all checks pass, 1: a check fails, "
                            "2: bad arguments).")
    p.add_argument("--params", default=None, metavar="m=5,n=50,b=50,M=20",
                   help="model parameters, any subset (default: the paper's setting; "
                        f"M <= {_M_MAX})")
    p.add_argument("--ratios", default=None, metavar="0.1,1,10",
                   help="learning-rate ratios eta_QK/eta_OV (eta_OV = 1), each in "
                        f"[{RATIO_RANGE[0]:g}, {RATIO_RANGE[1]:g}]; default 0.1,1,10 (quick: 1)")
    p.add_argument("--parameterization", default="all",
                   choices=list(PARAMETERIZATIONS) + ["all"],
                   help="which parameterization to verify (default: all four)")
    p.add_argument("--quick", action="store_true", help="fewer, faster checks")
    p.add_argument("--json", action="store_true", help="JSON output")
    p.add_argument("--task", metavar="NAME",
                   help="verify a task of derivations.task instead: its reduced system against the "
                        "full matrix model of the same task, all four parameterizations "
                        "(numerics.task_verify; takes --params with the task's own parameters, "
                        "--ratios, --parameterization, --target-loss, --quick, --json)")
    return p


class _progress_bar:
    """A tqdm bar over the groups on stderr (only when stderr is a terminal)."""

    def __init__(self, parameterization, ratios, quick):
        n_p = len(PARAMETERIZATIONS) if parameterization == "all" else 1
        n_r = len(ratios) if ratios is not None else (1 if quick else len(DEFAULT_RATIOS))
        self.total, self.bar, self.calls = n_p * n_r, None, 0

    def __enter__(self):
        if sys.stderr.isatty():
            from tqdm import tqdm
            self.bar = tqdm(total=self.total, file=sys.stderr, unit="group", leave=False)
        return self

    def __call__(self, label):
        if self.bar is not None:
            if self.calls:
                self.bar.update(1)
            self.bar.set_description(label)
        self.calls += 1

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.close()
        return False


def main(argv=None) -> int:
    """Command-line entry point; returns the exit status."""
    argv_list = sys.argv[1:] if argv is None else list(argv)
    if any(a == "--task" or a.startswith("--task=") for a in argv_list):
        from .task_verify import main as task_main  # a task of derivations.task (issue 9)
        return task_main(argv_list)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        params = dict(DEFAULT_PARAMS)
        if args.params is not None:
            params.update(_parse_params(args.params))
        ratios = _parse_ratios(args.ratios) if args.ratios is not None else None
        _check_cfg(**params)
        if ratios is not None:
            check_ratios(ratios)
    except (_ArgumentError, ValueError) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    try:
        with _progress_bar(args.parameterization, ratios, args.quick) as progress:
            checks = run_checks(args.parameterization, ratios, quick=args.quick,
                                progress=progress, **params)
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
              f"{summary['n_not_verifiable']} not verifiable, "
              f"{summary['n_info']} reported; {elapsed:.1f} s")
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
