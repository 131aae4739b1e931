r"""The figures of the reduced QK/OV dynamics (see :mod:`numerics.output`)."""
from __future__ import annotations

import numpy as np

from derivations.core.vocabulary import PAPER_SETTING, PARAMETERIZATIONS

from .style import (ALPHA_LABEL, LOSS_LABEL, MU_OV_LABEL, MU_QK_LABEL, PARAM_STYLE,
                    RATIOS, STYLE, T_LABEL, drawn_in, new_figure, panel_letter, ratio_colors, ratio_label,
                    ratio_legend_title)

__all__ = ["plot_time_course", "plot_stopping_curves", "plot_line_coordinates",
           "plot_simulation_vs_theory", "plot_parameterizations", "FIGURES"]


# --------------------------------------------------------------------------
# (a) time course
# --------------------------------------------------------------------------

def _time_grid(quick):
    return np.logspace(0.0, 8.0, 60 if quick else 300)


@drawn_in(STYLE)
def plot_time_course(*, quick=False, ratios=RATIOS, params=None):
    """mu_OV, mu_QK, alpha and the loss against time (log axis), CACO, one
    curve per ratio r = eta_QK/eta_OV (reduced ODE from zero init, eta_OV = 1).

    Parameters
    ----------
    quick : bool
        Coarser grids (for tests); the curves are the same.
    ratios : sequence of float
        Learning-rate ratios eta_QK / eta_OV, one curve each.
    params : dict, optional
        ``m, n, b, M`` (default :data:`~derivations.core.vocabulary.PAPER_SETTING`).

    Returns
    -------
    matplotlib.figure.Figure
    """
    from ..dynamics.reduced_ode import solve_reduced
    from ..functions.lambdified import alpha_fn

    params = dict(PAPER_SETTING if params is None else params)
    t = _time_grid(quick)
    runs = [solve_reduced("CACO", eta_QK=r, eta_OV=1.0, t_span=(0.0, t[-1]), t_eval=t, **params)
            for r in ratios]
    fig, axes = new_figure(2, 2, 5.0)
    panels = [("mu_OV", MU_OV_LABEL, "linear"), ("mu_QK", MU_QK_LABEL, "linear"),
              ("alpha", ALPHA_LABEL, "linear"), ("loss", LOSS_LABEL, "log")]
    colors = ratio_colors(ratios)
    for i, (ax, (key, label, yscale)) in enumerate(zip(axes.flat, panels)):
        for r, res, c in zip(ratios, runs, colors):
            ax.plot(res.t, res[key], color=c, label=ratio_label(r))
        ax.set_xscale("log")
        ax.set_yscale(yscale)
        ax.set_xlim(t[0], t[-1])
        ax.set_xlabel(T_LABEL)
        ax.set_ylabel(label)
        panel_letter(ax, i)
    alpha0 = float(alpha_fn()(0.0, params["m"], params["n"]))     # alpha at mu_QK = 0 (catalog model.alpha)
    axes[1, 0].set_ylim(0, 1)
    axes[1, 0].axhline(alpha0, color="0.5", lw=0.8, ls=":")
    axes[1, 0].annotate(r"$\alpha(0) = m/(m+n)$", (t[0] * 2, alpha0),
                        xytext=(0, 4), textcoords="offset points", fontsize=8, color="0.35")
    axes[0, 0].legend(title=ratio_legend_title(), loc="upper left")
    fig.suptitle("CACO time course (reduced flow, zero init; "
                 + ", ".join(f"{k}={v:g}" for k, v in params.items()) + ")", fontsize=9)
    return fig


# --------------------------------------------------------------------------
# (b) stopping curves (paper Figure 4)
# --------------------------------------------------------------------------

@drawn_in(STYLE)
def plot_stopping_curves(*, quick=False, ratios=RATIOS, params=None):
    """The paper's Figure 4: mu_OV, mu_QK and alpha at stopping losses
    log-spaced from 1 to 1e-4 (50 of them; 12 with ``quick``),
    CACO from zero init, from the closed form
    :func:`numerics.dynamics.closed_form.state_at_loss`. The loss axis decreases to the
    right (training proceeds left to right).

    Parameters
    ----------
    quick : bool
        Coarser grids (for tests); the curves are the same.
    ratios : sequence of float
        Learning-rate ratios eta_QK / eta_OV, one curve each.
    params : dict, optional
        ``m, n, b, M`` (default :data:`~derivations.core.vocabulary.PAPER_SETTING`).

    Returns
    -------
    matplotlib.figure.Figure
    """
    from ..dynamics.closed_form import state_at_loss

    params = dict(PAPER_SETTING if params is None else params)
    losses = np.logspace(0.0, -4.0, 12 if quick else 50)
    st = state_at_loss(losses[:, None], np.asarray(ratios, dtype=float)[None, :], **params)
    fig, axes = new_figure(1, 3, 3.3)
    panels = [("mu_OV", MU_OV_LABEL, "log"), ("mu_QK", MU_QK_LABEL, "linear"),
              ("alpha", ALPHA_LABEL, "linear")]
    colors = ratio_colors(ratios)
    for i, (ax, (key, label, yscale)) in enumerate(zip(axes.flat, panels)):
        vals = getattr(st, key)
        for j, (r, c) in enumerate(zip(ratios, colors)):
            ax.plot(losses, vals[:, j], color=c, marker="o", ms=2.2, lw=1.0, label=ratio_label(r))
        ax.set_xscale("log")
        ax.set_yscale(yscale)
        ax.set_xlim(losses[0] * 1.3, losses[-1] / 1.3)   # decreasing to the right
        ax.set_xlabel(r"stopping loss $L^*$ (decreasing $\rightarrow$)")
        ax.set_ylabel(label)
        panel_letter(ax, i)
    axes[0, 2].set_ylim(0, 1)
    from matplotlib.ticker import FixedLocator, NullFormatter, ScalarFormatter

    ax = axes[0, 0]
    ax.yaxis.set_major_locator(FixedLocator([1, 2, 5, 10, 20, 50, 100, 200, 500]))
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, title=ratio_legend_title(), loc="outside lower center",
               ncol=len(ratios))
    fig.suptitle(r"State at a fixed stopping loss (CACO, closed form, $\eta_{OV}=1$): "
                 r"faster QK learning $\Rightarrow$ sharper attention, smaller $\mu_{OV}$",
                 fontsize=9)
    return fig


# --------------------------------------------------------------------------
# (c) line coordinates
# --------------------------------------------------------------------------

def _line_coordinates(parameterization="CACO"):
    """The generated line coordinates ``(X, Y, slope)`` of the first integral
    (:func:`numerics.functions.lambdified.line_coordinates_fn`, catalog ``<P>.line_X``,
    ``line_Y``, ``line_slope``) and their SymPy expressions (for the labels)."""
    from ..functions.lambdified import line_coordinates_fn

    f = line_coordinates_fn(parameterization)
    return f.func, dict(zip(f.keys, f.expr))


def _tex(expr):
    """LaTeX of a SymPy expression for mathtext (fractions in display size,
    short ones folded to a/b)."""
    import sympy as sp

    return sp.latex(expr, fold_short_frac=True).replace(r"\frac", r"\dfrac")


@drawn_in(STYLE)
def plot_line_coordinates(*, quick=False, ratios=RATIOS, params=None):
    r"""CACO trajectories in the line coordinates (X, Y) of the first
    integral, :math:`H = Y - \text{slope}\cdot X` constant, so each trajectory
    is the line :math:`Y - Y_0 = \text{slope}\,(X - X_0)` (X, Y, slope from
    the catalog, :func:`numerics.functions.lambdified.line_coordinates_fn`). Panel (a): :math:`Y - Y_0` against
    :math:`X - X_0` on log-log axes (lines through the origin stay straight,
    with unit log-slope, offset by log r); trajectories solid, the theoretical
    lines dashed. Panel (b): relative drift of H along the numerical solution.

    Parameters
    ----------
    quick : bool
        Coarser grids (for tests); the curves are the same.
    ratios : sequence of float
        Learning-rate ratios eta_QK / eta_OV, one curve each.
    params : dict, optional
        ``m, n, b, M`` (default :data:`~derivations.core.vocabulary.PAPER_SETTING`).

    Returns
    -------
    matplotlib.figure.Figure
    """
    from ..dynamics.reduced_ode import solve_reduced

    params = dict(PAPER_SETTING if params is None else params)
    line, exprs = _line_coordinates("CACO")
    t = _time_grid(quick)
    fig, axes = new_figure(1, 2, 3.3)
    ax, axr = axes[0]
    colors = ratio_colors(ratios)
    xall = []
    for r, c in zip(ratios, colors):
        res = solve_reduced("CACO", eta_QK=r, eta_OV=1.0, t_span=(0.0, t[-1]), t_eval=t, **params)
        pv = res.system.params
        X, Y, slope = line(res.mu_OV, res.mu_QK, *pv)
        X, Y, slope = np.asarray(X, dtype=float), np.asarray(Y, dtype=float), float(slope)
        X0, Y0, _ = (float(v) for v in line(*res.system.mu0, *pv))
        dX, dY = X - X0, Y - Y0
        # keep points where Y - Y0 is resolved in float64 (not cancellation noise)
        ok = (dX > 0) & (dY > 1e-9 * np.abs(Y))
        ax.plot(dX[ok], dY[ok], color=c, lw=2.4, alpha=0.55, label=ratio_label(r))
        xs = np.logspace(np.log10(dX[ok][0]), np.log10(dX[ok][-1]), 50)
        ax.plot(xs, slope * xs, color="k", lw=0.9, ls="--")
        xall.append(dX[ok])
        H = Y - slope * X
        H0 = Y0 - slope * X0
        drift = np.abs(H - H0) / np.maximum(np.abs(Y), slope * np.abs(X))
        drift[drift == 0] = np.nan          # exactly conserved in float64: not drawable on log axes
        axr.plot(res.t, drift, color=c, lw=1.0, label=ratio_label(r))
    ax.plot([], [], color="k", lw=0.9, ls="--", label=r"theory $\mathrm{slope}\cdot(X - X_0)$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    X_tex = _tex(exprs["X"])
    Y_tex = _tex(exprs["Y"])
    ax.set_xlabel(rf"$X - X_0$,  $X = {X_tex}$")
    ax.set_ylabel(rf"$Y - Y_0$,  $Y = {Y_tex}$")
    lo = min(float(x.min()) for x in xall)
    hi = max(float(x.max()) for x in xall)
    ax.set_xlim(lo / 5, hi * 5)
    ax.set_ylim(lo * min(ratios) / 5, hi * max(ratios) * 1e8)   # room for the legend
    ax.legend(title=f"trajectories (slope $= {_tex(exprs['slope'])}$)", loc="upper left", ncol=2)
    ax.text(0.97, 0.03, "log-log axes: the line\n$Y-Y_0 = \\mathrm{slope}\\,(X-X_0)$\n"
            "has unit log-slope,\nshifted by $\\log_{10} r$", transform=ax.transAxes,
            ha="right", va="bottom", fontsize=8, color="0.25")
    panel_letter(ax, 0)
    axr.set_xscale("log")
    axr.set_yscale("log")
    axr.set_ylim(1e-17, 1e-5)
    axr.set_xlim(t[0], t[-1])
    axr.set_xlabel(T_LABEL)
    axr.set_ylabel(r"relative drift $|H(t) - H(0)|\,/\,\max(|Y|,\ \mathrm{slope}\cdot X)$")
    axr.legend(title=r"drift of $H = Y - \mathrm{slope}\cdot X$ (ODE, rtol $10^{-10}$)",
               loc="upper left", ncol=3)
    panel_letter(axr, 1)
    fig.suptitle("CACO trajectories are straight lines in the first-integral coordinates "
                 "(reduced flow from zero init)", fontsize=9)
    return fig


# --------------------------------------------------------------------------
# (d) full simulation vs theory
# --------------------------------------------------------------------------

@drawn_in(STYLE)
def plot_simulation_vs_theory(*, quick=False, ratios=(0.1, 1.0, 10.0), params=None):
    """Full-matrix gradient flow (markers; :class:`numerics.model.paper.AttentionModel`,
    CACO, structured init = zero circuits, ``DOP853``) over the theory (lines):
    mu_OV, mu_QK and alpha against time from the reduced ODE, and alpha against
    the loss from the closed form (:func:`numerics.dynamics.closed_form.state_at_loss`)
    evaluated at the same losses as the markers and on a fine grid.

    Parameters
    ----------
    quick : bool
        Coarser grids (for tests); the curves are the same.
    ratios : sequence of float
        Learning-rate ratios eta_QK / eta_OV, one curve each.
    params : dict, optional
        ``m, n, b, M`` (default :data:`~derivations.core.vocabulary.PAPER_SETTING`).

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    RuntimeError
        If the full-model gradient flow fails for a ratio.
    """
    from ..model.paper import AttentionModel
    from ..dynamics.closed_form import state_at_loss
    from ..model.family import structured_params
    from ..dynamics.reduced_ode import solve_reduced
    from ..dynamics.training import gradient_flow

    params = dict(PAPER_SETTING if params is None else params)
    t_line = _time_grid(quick)
    t_sim = np.concatenate([[0.0], np.logspace(0.5, 8.0, 10 if quick else 24)])
    fig, axes = new_figure(2, 2, 5.3)
    colors = ratio_colors(ratios)
    L_line = np.logspace(np.log10(0.999 * np.log(params["M"])), -6.0, 60 if quick else 300)
    dev = dev_cf = 0.0      # max |alpha_full - alpha_theory| at the markers
    for r, c in zip(ratios, colors):
        red = solve_reduced("CACO", eta_QK=r, eta_OV=1.0, t_span=(0.0, t_line[-1]),
                            t_eval=t_line, **params)
        model = AttentionModel("CACO", eta_QK=r, eta_OV=1.0, **params)
        sim = gradient_flow(model, structured_params(model), t_eval=t_sim)
        if not sim.success:
            raise RuntimeError(f"full gradient flow failed for r={r}: {sim.message}")
        for ax, key in zip(axes.flat[:3], ("mu_OV", "mu_QK", "alpha")):
            ax.plot(red.t, red[key], color=c, lw=1.3)
            ax.plot(sim.t[1:], getattr(sim, key)[1:], ls="none", marker="o", mfc="none",
                    mec=c, mew=1.0, ms=4.5)
        red_at = solve_reduced("CACO", eta_QK=r, eta_OV=1.0, t_span=(0.0, t_sim[-1]),
                               t_eval=t_sim, **params)
        dev = max(dev, float(np.max(np.abs(red_at.alpha - sim.alpha))))
        cf_at = state_at_loss(sim.loss[1:], r, **params)
        dev_cf = max(dev_cf, float(np.max(np.abs(cf_at.alpha - sim.alpha[1:]))))
        cf = state_at_loss(L_line, r, **params)
        ax = axes[1, 1]
        ax.plot(L_line, cf.alpha, color=c, lw=1.3)
        ok = sim.loss < np.log(params["M"])
        ax.plot(sim.loss[ok], sim.alpha[ok], ls="none", marker="o", mfc="none", mec=c,
                mew=1.0, ms=4.5)
    _label_simulation_panels(fig, axes, t_line, L_line, ratios, colors, params, dev, dev_cf)
    return fig


def _label_simulation_panels(fig, axes, t_line, L_line, ratios, colors, params, dev, dev_cf):
    """Axes, legend, the two deviation notes and the title of :func:`plot_simulation_vs_theory`."""
    labels = (MU_OV_LABEL, MU_QK_LABEL, ALPHA_LABEL)
    for i, (ax, lab) in enumerate(zip(axes.flat[:3], labels)):
        ax.set_xscale("log")
        ax.set_xlim(t_line[0], t_line[-1])
        ax.set_xlabel(T_LABEL)
        ax.set_ylabel(lab)
        panel_letter(ax, i)
    axes[1, 0].set_ylim(0, 1)
    ax = axes[1, 1]
    ax.set_xscale("log")
    ax.set_xlim(L_line[0] * 1.3, L_line[-1] / 1.3)
    ax.set_ylim(0, 1)
    ax.set_xlabel(r"loss $L$ (nats, decreasing $\rightarrow$)")
    ax.set_ylabel(ALPHA_LABEL)
    panel_letter(ax, 3)
    # legend: colors = ratios; line vs marker = theory vs simulation
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=c, lw=1.3, label=ratio_label(r)) for r, c in zip(ratios, colors)]
    handles += [Line2D([], [], color="0.3", lw=1.3, label="theory (ODE / closed form)"),
                Line2D([], [], color="0.3", ls="none", marker="o", mfc="none", ms=4.5,
                       label=f"full model (d = {2 * params['M']})")]
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles))
    axes[1, 0].text(0.03, 0.95, rf"max $|\Delta\alpha|$ vs reduced ODE: {dev:.0e}",
                    transform=axes[1, 0].transAxes, ha="left", va="top", fontsize=8, color="0.25")
    ax.text(0.98, 0.03, rf"max $|\Delta\alpha|$ vs closed form: {dev_cf:.0e}",
            transform=ax.transAxes, ha="right", va="bottom", fontsize=8, color="0.25")
    fig.suptitle("Full-matrix gradient flow (markers) vs reduced theory (lines), CACO, "
                 r"$\eta_{OV}=1$; (d): closed form $\alpha(L)$", fontsize=9)


# --------------------------------------------------------------------------
# (e) parameterizations
# --------------------------------------------------------------------------

@drawn_in(STYLE)
def plot_parameterizations(*, quick=False, params=None, eps=1e-2):
    """CACO, CAFO, FACO, FAFO at equal base rates (every circuit/factor rate
    1; factors initialized at scale ``eps`` = 1e-2, balanced), reduced ODE:
    loss, alpha, mu_OV, mu_QK against time, alpha against the loss, and the
    trajectory in the (mu_OV, mu_QK) plane.

    Parameters
    ----------
    quick : bool
        Coarser grids (for tests); the curves are the same.
    eps : float
        Initialization scale of the factors.
    params : dict, optional
        ``m, n, b, M`` (default :data:`~derivations.core.vocabulary.PAPER_SETTING`).

    Returns
    -------
    matplotlib.figure.Figure
    """
    from ..dynamics.reduced_ode import solve_reduced

    params = dict(PAPER_SETTING if params is None else params)
    t = np.logspace(-1.0, 9.0, 80 if quick else 400)
    runs = {P: solve_reduced(P, eta_QK=1.0, eta_OV=1.0, eps=eps, t_span=(0.0, t[-1]),
                             t_eval=t, **params) for P in PARAMETERIZATIONS}
    fig, axes = new_figure(2, 3, 5.4)
    (a_loss, a_alpha, a_al), (a_ov, a_qk, a_ph) = axes
    for P, res in runs.items():
        c, ls = PARAM_STYLE[P]
        kw = dict(color=c, ls=ls, label=P)
        a_loss.plot(res.t, res.loss, **kw)
        a_alpha.plot(res.t, res.alpha, **kw)
        a_ov.plot(res.t, res.mu_OV, **kw)
        a_qk.plot(res.t, res.mu_QK, **kw)
        ok = res.loss < 0.999 * np.log(params["M"])
        a_al.plot(res.loss[ok], res.alpha[ok], **kw)
        a_ph.plot(res.mu_OV, res.mu_QK, **kw)
    for ax, lab, ys in ((a_loss, LOSS_LABEL, "log"), (a_alpha, ALPHA_LABEL, "linear"),
                        (a_ov, MU_OV_LABEL, "log"), (a_qk, MU_QK_LABEL, "log")):
        ax.set_xscale("log")
        ax.set_yscale(ys)
        ax.set_xlim(t[0], t[-1])
        ax.set_xlabel(T_LABEL.replace(r", $\eta_{OV}=1$", ""))
        ax.set_ylabel(lab)
    a_loss.set_ylim(1e-9, 10)
    a_alpha.set_ylim(0, 1)
    a_al.set_xscale("log")
    a_al.set_xlim(np.log(params["M"]) * 1.3, 1e-9)
    a_al.set_ylim(0, 1)
    a_al.set_xlabel(r"loss $L$ (nats, decreasing $\rightarrow$)")
    a_al.set_ylabel(ALPHA_LABEL)
    a_ph.set_xscale("log")
    a_ph.set_yscale("log")
    a_ph.set_xlabel(r"$\mu_{OV}$")
    a_ph.set_ylabel(r"$\mu_{QK}$")
    a_ph.text(0.03, 0.97, "trajectory", transform=a_ph.transAxes, ha="left", va="top",
              fontsize=8, color="0.25")
    for i, ax in enumerate(axes.flat):
        panel_letter(ax, i)
    handles, labels = a_loss.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=4, handlelength=3,
               title="parameterization: QK circuit, OV circuit (C = collapsed, F = factorized)")
    fig.suptitle(r"Equal base learning rates (all $\eta = 1$; factors initialized at "
                 rf"$\varepsilon={eps:g}$; reduced flow)", fontsize=9)
    return fig


from .attention import plot_master_curve, plot_phase_diagram  # noqa: E402  (where attention goes)

#: Figure name -> plotting function (keyword ``quick``; returns a Figure).
FIGURES = {
    "time_course": plot_time_course,
    "stopping_curves": plot_stopping_curves,
    "line_coordinates": plot_line_coordinates,
    "simulation_vs_theory": plot_simulation_vs_theory,
    "parameterizations": plot_parameterizations,
    "phase_diagram": plot_phase_diagram,
    "master_curve": plot_master_curve,
}
