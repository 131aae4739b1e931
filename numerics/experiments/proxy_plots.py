r"""The figure of the interpretability proxies beside predictive performance at matched loss.

:func:`plot_proxies`: one column per parameterization, one row per measure --
the proxies of :mod:`numerics.experiments.proxies` (normalized entropy,
AUPRC, top-:math:`R` token F1, comprehensiveness, sufficiency) and the
predictive performance (accuracy, label probability) -- against the
learning-rate ratio :math:`\eta_{QK}/\eta_{OV}`, one colour per target loss:
SGD seeds as points and their mean as a solid line, the theory (where it gives
the measure: the expected-count attention's entropy and plausibility) dashed.
The sweep writes it as ``proxies.png/pdf`` beside ``sweep.png``. The figure is a
:class:`matplotlib.figure.Figure` made in :data:`~numerics.output.style.EXPERIMENT_STYLE`
(:func:`~numerics.output.style.new_figure`: no pyplot, no global state).
"""
from __future__ import annotations

import numpy as np

from ..output.style import EXPERIMENT_STYLE, drawn_in, new_figure
from .sweep import number_or_none

__all__ = ["PANELS", "plot_proxies"]

#: The rows of the figure: ``(key of a results.csv row, axis label)``.
PANELS = (("attention_entropy_normalized", "entropy / log positions"),
          ("plausibility_auprc", "plausibility: AUPRC"),
          ("plausibility_token_f1", "plausibility: top-R token F1"),
          ("comprehensiveness", "comprehensiveness (AOPC)"),
          ("sufficiency", "sufficiency (AOPC)"),
          ("accuracy", "accuracy"),
          ("label_probability", "label probability"))


def _series(records, p, target, key):
    """``{ratio: [value per seed]}`` of one parameterization and target (None and NaN dropped)."""
    out = {}
    for r in records or ():
        if r["parameterization"] != p or (target is not None and float(r["target_loss"]) != target):
            continue
        v = number_or_none(r.get(key))
        if v is not None:
            out.setdefault(float(r["ratio"]), []).append(v)
    return dict(sorted(out.items()))


def _draw(ax, rows, theory, p, target, key, colour, label):
    sgd = _series(rows, p, target, key)
    for r, vals in sgd.items():
        ax.plot(np.full(len(vals), r), vals, "o", color=colour, ms=2.5, alpha=0.5, mec="none")
    if sgd:
        ax.plot(list(sgd), [np.mean(v) for v in sgd.values()], "-", color=colour, lw=1.2, label=label)
    th = _series(theory, p, target, key)
    if th:
        ax.plot(list(th), [np.mean(v) for v in th.values()], "--", color=colour, lw=1.2)


@drawn_in(EXPERIMENT_STYLE)
def plot_proxies(rows, theory=None, *, title: str | None = None):
    r"""Each proxy and the predictive performance against :math:`\eta_{QK}/\eta_{OV}`, per parameterization.

    Parameters
    ----------
    rows : list of dict
        Rows of a sweep (:func:`numerics.experiments.sweep.rows_from_results`): one per
        run and target loss, with the keys of :data:`PANELS`.
    theory : list of dict, optional
        One record per run: ``parameterization``, ``ratio``, ``seed``, ``target_loss`` and the
        theory's values of any key of :data:`PANELS` (e.g.
        :func:`numerics.experiments.overlay.plotted_theory`), drawn dashed (mean over seeds).
    title : str, optional
        The figure's title.

    Returns
    -------
    matplotlib.figure.Figure
    """
    params = list(dict.fromkeys(r["parameterization"] for r in rows))
    targets = sorted({float(r["target_loss"]) for r in rows if r.get("target_loss") is not None},
                     reverse=True) or [None]
    ratios = sorted({float(r["ratio"]) for r in rows})
    fig, axes = new_figure(len(PANELS), max(1, len(params)), style=EXPERIMENT_STYLE, sharex=True, sharey="row",
                           figsize=(2.6 * max(1, len(params)) + 0.4, 1.7 * len(PANELS) + 0.6))
    import matplotlib

    colours = matplotlib.colormaps["viridis"](np.linspace(0.0, 0.85, len(targets)))
    for j, p in enumerate(params):
        for i, (key, label) in enumerate(PANELS):
            ax = axes[i, j]
            for target, colour in zip(targets, colours):
                _draw(ax, rows, theory, p, target, key, colour,
                      "all" if target is None else f"loss {target:g}")
            ax.set_xscale("log")
            ax.set_xticks(ratios, [f"{r:g}" for r in ratios])
            ax.minorticks_off()
            ax.grid(alpha=0.3, lw=0.5)
            if j == 0:
                ax.set_ylabel(label)
            if i == 0:
                ax.set_title(p)
            if i == len(PANELS) - 1:
                ax.set_xlabel(r"ratio $\eta_{QK}/\eta_{OV}$")
    legend = {}                                       # one entry per target loss drawn anywhere
    for ax in axes.flat:
        legend.update(zip(*ax.get_legend_handles_labels()[::-1]))
    if legend:
        axes[0, 0].legend(list(legend.values()), list(legend), loc="best")
    if title:
        fig.suptitle(title)
    return fig
