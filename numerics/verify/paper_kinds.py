"""The paper's kinds of check: its hard-wired full model against the reduced ODE,
the closed forms, the first integral, the invariant family and gradient descent
(see :mod:`numerics.verify`)."""
from __future__ import annotations

import math

import numpy as np

from derivations.core.vocabulary import qk_factorized

from .context import FULL_ATOL, FULL_RTOL
from .records import NOT_VERIFIABLE, rel_dev
from .registry import check_kind

__all__ = ["descent_steps", "MAX_DESCENT_STEPS", "ASYMPTOTIC_ERROR", "MAX_DESCENT_REFINEMENTS"]

_RANDOM_RTOL, _RANDOM_ATOL = 1e-8, 1e-14
#: Largest total number of gradient-descent steps of one descent-order check;
#: beyond it the check is reported as not verifiable.
MAX_DESCENT_STEPS = 200_000
#: Relative error of the coarsest descent run above which the runs are not yet
#: in the first-order regime (nor are they while the error falls faster than
#: first order): an order outside the accepted range is then retried with
#: twice the steps (at most :data:`MAX_DESCENT_REFINEMENTS` times, within
#: :data:`MAX_DESCENT_STEPS`); a coarse error that stays above this is
#: reported as not verifiable.
ASYMPTOTIC_ERROR = 0.1
MAX_DESCENT_REFINEMENTS = 3


@check_kind("flow")
def check_flow_vs_reduced(ctx):
    """Full-model flow vs reduced ODE on the grid (mu_OV, mu_QK, alpha).

    Parameters
    ----------
    ctx : numerics.verify.context.Context
        The (parameterization, ratio) group; its records go to :meth:`~numerics.verify.context.Context.add`.
    """
    full, red = ctx.flows
    for q in ("mu_OV", "mu_QK", "alpha"):
        ctx.add(f"flow~reduced {q}", rel_dev(full[q], red[q]), ctx.tolerances["flow"])


#: A comparison that goes through the loss is kept only at points where the
#: loss's own rounding, amplified by the margin's conditioning
#: (relative error about eps L / (log M - L)), stays below this fraction of
#: the tolerance.
_CONDITIONING_MARGIN = 0.1


@check_kind("closed_form", requires=("paper_model", "closed_form"))
def check_flow_vs_closed_form(ctx):
    """Full-model flow vs the closed forms at the full-model losses (CACO) or
    the orbit at the full-model mu_OV and the margin+orbit mu_OV (others).

    What goes through the loss (CACO: all three; others: the margin+orbit
    mu_OV) is compared only where the loss is far enough below log M for
    the margin s(L) to be resolved (estimated relative error
    eps L/(log M - L) below a tenth of the tolerance); if no point is, the
    comparison is not verifiable.

    Parameters
    ----------
    ctx : numerics.verify.context.Context
        The (parameterization, ratio) group; its records go to :meth:`~numerics.verify.context.Context.add`.
    """
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
        ref = orbit[q] if (ctx.parameterization != "CACO" and q != "mu_OV") else getattr(cf, q)
        ctx.add(name, rel_dev(full[q][m], ref), tol, points=int(m.sum()), dropped=dropped)


@check_kind("first_integral", requires=("paper_model", "first_integral"))
def check_first_integral(ctx):
    """Relative drift of the first integral along the full-model trajectory.

    Parameters
    ----------
    ctx : numerics.verify.context.Context
        The (parameterization, ratio) group; its records go to :meth:`~numerics.verify.context.Context.add`.
    """
    from ..model.family import project
    full, _ = ctx.flows
    sys = ctx.system
    mo0, mq0 = project(ctx.model, ctx.p0)
    H0 = float(sys.first_integral(mo0, mq0))
    Ht = np.asarray(sys.first_integral(full.mu_OV, full.mu_QK), dtype=float)
    scale = np.maximum(sys.first_integral_scale(full.mu_OV, full.mu_QK),
                       float(sys.first_integral_scale(mo0, mq0)))
    ctx.add("first-integral drift", float(np.max(np.abs(Ht - H0) / scale)),
            ctx.tolerances["first_integral"], H0=H0)


@check_kind("crossings", requires=("paper_model", "closed_form"))
def check_crossings(ctx):
    """States where the loss crosses the thresholds: full flow vs closed
    forms (CACO: state_at_loss, time_to_loss) or vs the reduced flow.

    Parameters
    ----------
    ctx : numerics.verify.context.Context
        The (parameterization, ratio) group; its records go to :meth:`~numerics.verify.context.Context.add`.
    """
    thresholds = ctx.options["thresholds"]
    if not thresholds:
        return
    full, red = ctx.flows
    if ctx.parameterization == "CACO":
        from ..dynamics.closed_form import time_to_loss
        st = ctx.closed_state(np.array(thresholds))
        ts = np.atleast_1d(time_to_loss(np.array(thresholds), ctx.ratio, **ctx.paper_settings))
        refs = [{"t": float(ts[i]),
                 **{q: float(np.asarray(getattr(st, q))[i]) for q in ("mu_OV", "mu_QK", "alpha")}}
                for i in range(len(thresholds))]
        src = "closed"
    else:
        refs, src = red.crossings, "reduced"
    for x, fc, rc in zip(thresholds, full.crossings, refs):
        if fc is None or rc is None:
            ctx.add(f"state@L={x:g} flow~{src}", math.nan, ctx.tolerances["flow"],
                    message="threshold not crossed")
            continue
        devs = {q: rel_dev(fc[q], rc[q]) for q in ("t", "mu_OV", "mu_QK", "alpha")}
        ctx.add(f"state@L={x:g} flow~{src} (max of t,mu,alpha)", max(devs.values()),
                ctx.tolerances["flow"], **devs)


@check_kind("family")
def check_family_distance(ctx):
    """Distance from the invariant family: structured init (checked), random
    init (reported). A structured distance beyond the tolerance but within what
    round-off alone reaches along this flow (:func:`_roundoff_reach`) is not
    verifiable.

    Parameters
    ----------
    ctx : numerics.verify.context.Context
        The (parameterization, ratio) group; its records go to :meth:`~numerics.verify.context.Context.add`.
    """
    from ..dynamics.training import gradient_flow
    full, _ = ctx.flows
    name, d, tol = "family distance (structured, max)", float(np.max(full.distance)), ctx.tolerances["distance"]
    if not d > tol:
        ctx.add(name, d, tol)
    else:
        growth, reach = _roundoff_reach(ctx, full)
        if d <= reach:
            ctx.add(name, d, NOT_VERIFIABLE, growth=growth, roundoff_reach=reach, message=(
                f"a departure at the start grows {growth:.1e}-fold by T, so round-off "
                f"alone ({full.nsteps} steps) can reach {reach:.1e}, above the tolerance {tol:g}"))
        else:
            ctx.add(name, d, tol, growth=growth, roundoff_reach=reach)
    if ctx.options["random"]:
        T, _ = ctx.horizon
        scale = ctx.options["random_scale"]
        pr = ctx.model.random_params(scale=scale, seed=0)
        rr = gradient_flow(ctx.model, pr, np.array([T / 2, T]), t_span=(0.0, T),
                           rtol=_RANDOM_RTOL, atol=_RANDOM_ATOL)
        ctx.add(f"family distance (random {scale:g}, at T)",
                float(rr.distance[-1]) if rr.distance.size else math.nan, None,
                T=T, loss=float(rr.loss[-1]) if rr.loss.size else None)


#: Size of the random perturbation (times the largest entry of the start, or 1 if
#: that is smaller) whose growth measures how the flow amplifies departures.
_PROBE = 1e-12


def _roundoff_reach(ctx, full):
    """``(G, max(G, 1) eps nsteps)``: G, the relative change of the state at T per unit
    relative change of the structured start (``v0 + delta xi`` against ``full``, the
    trajectory from ``v0``; max norms), and the distance from the family round-off alone
    can then reach: about machine epsilon per step, each multiplied by at most max(G, 1)
    (a departure made at the start grows the most when the flow amplifies throughout; one
    made at the end is not damped). A start at zero makes no round-off: G = 0.
    """
    from ..dynamics.training import gradient_flow
    T, _ = ctx.horizon
    v0 = ctx.model.flatten(ctx.p0)
    top = float(np.abs(v0).max())
    delta = _PROBE * max(top, 1.0)
    v = v0 + delta * np.random.default_rng(0).standard_normal(v0.shape)
    run = gradient_flow(ctx.model, ctx.model.unflatten(v), np.array([T]), t_span=(0.0, T),
                        rtol=FULL_RTOL, atol=FULL_ATOL, max_steps=ctx.budget)
    if run.status != 0:
        return math.nan, math.nan
    vT, wT = ctx.model.flatten(full.params), ctx.model.flatten(run.params)
    growth = float(np.abs(wT - vT).max() / np.abs(vT).max()) * top / delta
    return growth, max(growth, 1.0) * float(np.finfo(float).eps) * full.nsteps


def descent_steps(parameterization, ratio, base=(1000, 2000, 4000)):
    """Step counts of the descent-order check: ``base``, times ceil(r/10) for a
    factorized QK circuit with r > 10 (its growth rate scales with r, so
    lr * r is kept fixed).

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}
    ratio : float
    base : tuple of int, optional

    Returns
    -------
    tuple of int
    """
    if qk_factorized(parameterization):
        return tuple(N * max(1, math.ceil(ratio / 10)) for N in base)
    return tuple(base)


def _descent_horizon(ctx, tol):
    """``(L_h, T_h)``: the loss the descent check runs to and the reduced flow's time to it;
    None, recorded, when the flow does not reach it or starts below it."""
    logM = math.log(ctx.settings["M"])
    h_loss = max(logM - 0.2, 0.5 * logM)
    red_h = ctx.reduced(target_loss=h_loss)
    if red_h.status != 1:
        ctx.unreached(h_loss, red_h, tol)
        return None
    Th = float(red_h.t[-1])
    if not Th > 0:
        ctx.add(f"reduced flow reaches loss {h_loss:g}", math.nan, NOT_VERIFIABLE,
                message="the start is already below it: no descent to compare")
        return None
    return h_loss, Th


def _orders(Ns, errs):
    """Observed orders ``log(e1/e2)/log(N2/N1)`` of successive step counts (nan without both errors)."""
    return [math.log(e1 / e2) / math.log(N2 / N1) if e1 > 0 and e2 > 0 else math.nan
            for N1, N2, e1, e2 in zip(Ns[:-1], Ns[1:], errs[:-1], errs[1:])]


def _pre_asymptotic(Ns, errs, highest):
    """Not yet in the first-order regime: the coarse error is large, or the error falls faster than
    first order (an order above ``highest``: the second-order term still matters)."""
    return errs[0] > ASYMPTOTIC_ERROR or any(o > highest for o in _orders(Ns, errs) if math.isfinite(o))


@check_kind("descent")
def check_descent_order(ctx):
    """Gradient descent -> flow: the error must halve with the step size
    (observed orders in the accepted range). The step counts adapt (doubled
    while an order is off and the coarse error exceeds :data:`ASYMPTOTIC_ERROR`
    or an order exceeds the range); reported as not verifiable when they exceed
    :data:`MAX_DESCENT_STEPS` or the runs stay out of the first-order regime.

    Parameters
    ----------
    ctx : numerics.verify.context.Context
        The (parameterization, ratio) group; its records go to :meth:`~numerics.verify.context.Context.add`.
    """
    from ..dynamics.training import gradient_descent, gradient_flow
    P, r, tol = ctx.parameterization, ctx.ratio, ctx.tolerances["order"]
    Ns = descent_steps(P, r, ctx.options["gd_steps"])
    if len(Ns) < 2:
        return
    label = f"GD order, lr=T_h/{Ns[0]}->T_h/{Ns[-1]}"
    if sum(Ns) > MAX_DESCENT_STEPS:
        ctx.add(label, math.nan, NOT_VERIFIABLE, steps=Ns,
                message=f"needs {sum(Ns)} descent steps (limit {MAX_DESCENT_STEPS})")
        return
    horizon = _descent_horizon(ctx, tol)
    if horizon is None:
        return
    h_loss, Th = horizon
    K = 5
    tk = Th * np.arange(1, K + 1) / K
    tk[-1] = Th
    ref = gradient_flow(ctx.model, ctx.p0, tk, t_span=(0.0, Th), rtol=FULL_RTOL, atol=FULL_ATOL)
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
            out.append(max(rel_dev(gd.mu_OV[1:], ref.mu_OV), rel_dev(gd.mu_QK[1:], ref.mu_QK)))
        return out

    def accepted(o):
        return math.isfinite(o) and tol[0] <= o <= tol[1]

    # adapt the step count: while an order is off and the runs are not yet in the
    # first-order regime, halve the steps (within the budget)
    errs = errors(Ns)
    for _ in range(MAX_DESCENT_REFINEMENTS):
        if all(map(accepted, _orders(Ns, errs))) or not _pre_asymptotic(Ns, errs, tol[1]) \
                or 2 * sum(Ns) > MAX_DESCENT_STEPS:
            break
        Ns = tuple(2 * N for N in Ns)
        errs = errors(Ns)
    for N1, N2, e1, e2, order in zip(Ns[:-1], Ns[1:], errs[:-1], errs[1:], _orders(Ns, errs)):
        detail = dict(error_coarse=e1, error_fine=e2, T_h=Th, horizon_loss=h_loss)
        name = f"GD order, lr=T_h/{N1}->T_h/{N2}"
        if not accepted(order) and math.isfinite(e1) and e1 > ASYMPTOTIC_ERROR:
            ctx.add(name, math.nan, NOT_VERIFIABLE, **detail,
                    message=f"relative error {e1:.2g} > {ASYMPTOTIC_ERROR:g} at the most "
                            "steps the budget allows: not in the first-order regime")
            continue
        ctx.add(name, order, tol, **detail)
    ctx.add(f"GD rel error, lr=T_h/{Ns[-1]}", errs[-1], None, T_h=Th, errors=errs, steps=Ns)
