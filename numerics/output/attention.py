r"""The figures of where attention goes: the phase diagram of the crossover and the master curve.

Both come from the CACO flow from zero through its master curve in
:math:`\Lambda = r (M - 1)\ell(L)^2/(M b)` (:mod:`numerics.dynamics.crossover`); the master
curve's figure sets beside it the states of the engine's own reduced flows (the paper's closed
form, the reduced ``query-copies`` flow) at several (L, M, b), which fall on it. Both carry the
stored SGD runs of ``query-copies`` (:func:`sgd_points`, read from
:data:`~derivations.output.attention_data.DATA_DIR` by
:func:`derivations.output.attention_data.sgd_runs`), one point per seed at the
:math:`\Lambda` of its ratio and measured loss.
"""
from __future__ import annotations

import numpy as np

from derivations.output.attention_data import sgd_runs

from .style import STYLE, drawn_in, new_figure, panel_letter

__all__ = ["plot_phase_diagram", "plot_master_curve", "authors_counts", "sgd_points", "SGD_FIGURES"]

#: The figures that read the stored SGD runs (:data:`derivations.output.attention_data.DATA_DIR`).
SGD_FIGURES = frozenset({"phase_diagram", "master_curve"})

#: The task of the phase diagram's grid and of the master curve's second panel.
QUERY_COPIES = {"m": 10.0, "n": 40.0}
MASTER_TASK = {"s": 2.0, "m": 5.0, "n": 10.0, "R": 5.0}
#: (L, M, b) settings whose flows are set on the master curve.
SETTINGS = ((0.1, 20, 50.0), (0.5, 4, 2.0), (0.3, 8, 10.0))


def authors_counts() -> dict:
    """Expected attended copies of the authors' task: ``s`` of the query's token (its own
    position included), ``m`` relevant copies over ``R`` types (unequal), per sequence."""
    from derivations.core import authors_setting as a
    weights = a.weight_tenths(0)
    context = a.SEQ_LEN - 2
    total = sum(weights)
    relevant = sum(weights[v] for v in a.relevant_ids(0))
    return {"s": context * weights[a.QUERY_TOKENS[0]] / total + 1, "m": context * relevant / total,
            "R": a.RELEVANT_PER_CLASS}


def sgd_points() -> list:
    r"""The stored SGD runs of :data:`~derivations.output.attention_data.DATA_DIR`
    (:func:`derivations.output.attention_data.sgd_runs`),
    each with its ``lambda``: :math:`\Lambda` of its ratio at the loss it measured (its task's M and b).

    Returns
    -------
    list of dict

    Raises
    ------
    ValueError
        A damaged or missing file, in one line.
    """
    from ..dynamics import lambda_of_ratio
    runs = sgd_runs()
    return [dict(run, **{"lambda": float(lambda_of_ratio(run["ratio"], run["loss"], run["task"]["M"],
                                                          run["task"]["b"]))}) for run in runs]


def _on(run, task) -> bool:
    return all(run["task"][k] == v for k, v in task.items())


def _sgd_on_phase_diagram(ax, runs, R, m, n):
    """The runs of the panel's task (R, m, n): a point per seed, seeds side by side in s/m."""
    for lead, style in (("relevant", dict(marker="o", color="tab:blue")),
                        ("self", dict(marker="^", color="tab:red"))):
        pts = [(run["task"]["s"] / m + 0.015 * (run["seed"] % 3 - 1), run["lambda"]) for run in runs
               if _on(run, {"R": R, "m": m, "n": n})
               and (run["self_attention"] > run["relevant_attention"]) == (lead == "self")]
        if pts:
            ax.plot(*np.array(pts).T, ls="none", mec="k", mew=0.6, ms=5, label=f"SGD: {lead} leads", gid="sgd",
                    **style)


def _boundary_curve(R, fractions, n, m):
    from ..dynamics.crossover import crossover_lambda
    lams = [crossover_lambda(s=f * m, m=m, n=n, R=R, lambda_range=(1e-6, 1e6))[0] for f in fractions]
    return np.array([np.nan if v is None else v for v in lams])


@drawn_in(STYLE)
def plot_phase_diagram(*, quick=False, Rs=(2, 5, 10)):
    r"""Self minus relevant share at the stopping loss over (s/m, :math:`\Lambda`), one panel per
    number of relevant types R, with the crossover :math:`\Lambda^*(s/m)`, the window's edges
    :math:`s/m = 1/R` and 1, the authors' task at its expected counts, and the stored SGD runs of
    the panel's task (:func:`sgd_points`), marked by the share that leads.

    Parameters
    ----------
    quick : bool, optional
        Coarser grids (for tests); the curves are the same. Default False.
    Rs : sequence of int, optional
        Numbers of relevant types R, one panel each. Default (2, 5, 10).

    Returns
    -------
    matplotlib.figure.Figure
    """
    from ..dynamics.crossover import master_shares
    runs = sgd_points()
    m, n = QUERY_COPIES["m"], QUERY_COPIES["n"]
    k = 6 if quick else 20
    frac = np.linspace(0.05, 1.25, k)
    lams = np.geomspace(1e-3, 1e3, k)
    fig, axes = new_figure(1, len(Rs), 3.4)
    axes = axes[0]
    authors = authors_counts()
    for i, (ax, R) in enumerate(zip(axes, Rs)):
        d = np.array([[float(np.subtract(*[master_shares(lam, s=f * m, m=m, n=n, R=R)[key]
                                           for key in ("self_attention", "relevant_attention")]))
                       for f in frac] for lam in lams])
        mesh = ax.pcolormesh(frac, lams, d, cmap="RdBu_r", vmin=-1, vmax=1, shading="nearest")
        inside = np.linspace(1 / R + 1e-3, 1 - 1e-3, k)
        ax.plot(inside, _boundary_curve(R, inside, n, m), color="k", lw=1.4, label=r"$\Lambda^*$")
        for edge in (1 / R, 1.0):
            ax.axvline(edge, color="k", ls=":", lw=1)
        if R == authors["R"]:
            ax.axvline(authors["s"] / authors["m"], color="tab:green", lw=1.2, label="authors' task")
        _sgd_on_phase_diagram(ax, runs, R, m, n)
        ax.legend(loc="upper left", fontsize=6.5)
        ax.set_yscale("log")
        ax.set_xlabel(r"$s/m$")
        ax.set_title(f"R = {R} relevant types", fontsize=9)
        panel_letter(ax, i)
    axes[0].set_ylabel(r"$\Lambda = r (M-1)\,\ell(L)^2/(M b)$")
    fig.colorbar(mesh, ax=list(axes), label="self share - relevant share")
    fig.suptitle(f"Self minus relevant share at the stopping loss (CACO from zero, m = {m:g}, n = {n:g})\n"
                 "dotted: the window m/R < s < m; markers: SGD at its ratio and measured loss, "
                 "a point per seed", fontsize=9)
    return fig


def _flow_shares(task, lam, L, M, b):
    """(self, relevant) shares of the engine's own flows at (Lambda, L, M, b): the attention shares
    :func:`numerics.dynamics.state_at_loss` derives from the task's reduction."""
    from ..dynamics import ratio_of_lambda, state_at_loss
    ratio = float(ratio_of_lambda(lam, L, M, b))
    if task["s"] == 0:
        st = state_at_loss(L, ratio, m=task["m"], n=task["n"], M=M, b=b)
    else:
        st = state_at_loss(L, ratio, task="query-copies", method="reduced flow", M=M, b=b, **task)
    return float(st.self_attention), float(st.relevant_attention)


def _sgd_on_master_curve(ax, runs, task):
    """The stored SGD runs of ``task``, a filled point per seed and share, one marker per
    (target loss, M, b)."""
    settings = sorted({(run["target_loss"], run["task"]["M"], run["task"]["b"]) for run in runs if _on(run, task)})
    for (L, M, b), marker in zip(settings, "DPXv"):
        mine = [run for run in runs if _on(run, dict(task, M=M, b=b)) and run["target_loss"] == L]
        lam = [run["lambda"] for run in mine]
        style = dict(mec="k", mew=0.5, ms=4.5, gid="sgd")
        ax.plot(lam, [run["relevant_attention"] for run in mine], marker, color="tab:blue",
                label=f"SGD L={L:g}, M={M:g}, b={b:g}", **style)
        ax.plot(lam, [run["self_attention"] for run in mine], marker, color="tab:red", **style)


@drawn_in(STYLE)
def plot_master_curve(*, quick=False):
    r"""The shares at the stopping loss against :math:`\Lambda`: the master curve (lines), the
    engine's flows at several (L, M, b) (open markers) and, on (b), the stored SGD runs at several
    (L, M, b) (filled, a point per seed at the :math:`\Lambda` of its measured loss,
    :func:`sgd_points`): (a) the paper's task (closed form), (b) ``query-copies`` (reduced flow).

    Parameters
    ----------
    quick : bool, optional
        Coarser grids (for tests); the curves are the same. Default False.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from ..dynamics.crossover import master_shares
    runs = sgd_points()
    paper = {"s": 0.0, "m": 5.0, "n": 50.0, "R": 1.0}
    lam_line = np.geomspace(1e-2, 1e2, 25 if quick else 60)
    lam_pts = np.geomspace(2e-2, 50, 4 if quick else 7)
    fig, axes = new_figure(1, 2, 3.4)
    axes = axes[0]
    for i, (ax, task, title) in enumerate(zip(axes, (paper, MASTER_TASK),
                                             ("paper's task (s = 0)", "query-copies s=2, R=5, m=5, n=10"))):
        line = master_shares(lam_line, **task)
        ax.plot(lam_line, line["relevant_attention"], color="tab:blue", label="relevant (master curve)")
        if task["s"]:
            ax.plot(lam_line, line["self_attention"], color="tab:red", label="self (master curve)")
        for (L, M, b), marker in zip(SETTINGS, "os^"):
            pts = np.array([_flow_shares(task, lam, L, M, b) for lam in lam_pts])
            ax.plot(lam_pts, pts[:, 1], marker, mfc="none", color="tab:blue", label=f"L={L:g}, M={M}, b={b:g}")
            if task["s"]:
                ax.plot(lam_pts, pts[:, 0], marker, mfc="none", color="tab:red")
        if task["s"]:
            _sgd_on_master_curve(ax, runs, task)
        ax.set_xscale("log")
        ax.set_ylim(0, 1)
        ax.set_xlabel(r"$\Lambda = r (M-1)\,\ell(L)^2/(M b)$")
        ax.set_ylabel("attention share at the stopping loss")
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=6.5, loc="best")
        panel_letter(ax, i)
    fig.suptitle("One master curve per task: the engine's flows at several (L, M, b) (open markers, "
                 "CACO from zero)\nand SGD of query-copies (filled, a point per seed at its ratio and "
                 "measured loss) fall on it", fontsize=9)
    return fig
