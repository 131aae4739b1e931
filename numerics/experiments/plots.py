r"""Figures of the experiments (matplotlib, Agg backend; PNG + PDF).

* :func:`plot_fig2_heatmaps` -- the paper's Figure-2 layout: one panel per
  run, the 5 x 5 histogram of relevant-token attention (x) against the
  probability of the true label (y), every cell annotated with its mean
  percentage over seeds (and the standard deviation over seeds below it when
  there are several seeds).
* :func:`plot_fig3` -- Figure 3: the loss :math:`L(\alpha)` of the fixed-attention
  models and the incentive to sharpen :math:`(L(\alpha) - L(\alpha + 0.005))/0.005`
  against the epoch, one curve per :math:`\alpha`.
* :func:`plot_sweep` -- relevant-token attention at matched loss against the
  learning-rate ratio :math:`\eta_{QK}/\eta_{OV}` (mean and 95 % interval over
  seeds), one line per parameterization, with an optional theory overlay.

:func:`save_figure` writes ``<name>.png`` (150 dpi) and ``<name>.pdf``.
"""
from __future__ import annotations

import numpy as np

__all__ = ["save_figure", "plot_fig2_heatmaps", "plot_fig3", "plot_sweep", "DPI"]

DPI = 150
_PARAM_COLORS = {"CACO": "#1b9e77", "CAFO": "#d95f02", "FACO": "#7570b3", "FAFO": "#e7298a"}
_STYLE = {"font.size": 8, "axes.titlesize": 8.5, "axes.labelsize": 8, "xtick.labelsize": 7,
          "ytick.labelsize": 7, "legend.fontsize": 7, "savefig.dpi": DPI, "pdf.fonttype": 42,
          "figure.constrained_layout.use": True}


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update(_STYLE)
    return plt


def save_figure(fig, directory, name: str) -> list:
    """Write ``fig`` as ``directory/name.png`` and ``.pdf``; close it; return the paths
    (the package's one :func:`numerics.output.files.save_figure`)."""
    from ..output.files import save_figure as save
    return save(fig, directory, name, ("png", "pdf"), DPI)


def plot_fig2_heatmaps(panels, *, ncols: int = 4, title: str | None = None):
    """Grid of annotated Figure-2 heatmaps.

    Parameters
    ----------
    panels : list of dict
        Each with ``title`` (str), ``heatmap`` (5 x 5, ``[attention bin][label-probability bin]``,
        percent) and optionally ``heatmap_std`` and ``n_seeds``.
    """
    plt = _plt()
    n = len(panels)
    if n == 0:
        raise ValueError("panels must not be empty")
    ncols = min(ncols, n)
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(1.85 * ncols + 0.6, 1.95 * nrows + 0.3),
                             squeeze=False)
    ticks = np.arange(6) - 0.5
    labels = ["0", ".2", ".4", ".6", ".8", "1"]
    im = None
    for idx, ax in enumerate(axes.flat):
        if idx >= n:
            ax.set_visible(False)
            continue
        p = panels[idx]
        H = np.asarray(p["heatmap"], dtype=float)
        S = np.asarray(p.get("heatmap_std")) if p.get("heatmap_std") is not None else None
        multi = p.get("n_seeds", 1) > 1 and S is not None
        im = ax.imshow(H.T, origin="lower", cmap="Blues", vmin=0, vmax=100, aspect="equal")
        for i in range(5):
            for j in range(5):
                v = H[i, j]
                color = "white" if v > 55 else "black"
                text = f"{v:.1f}" if not multi else f"{v:.1f}\n±{S[i, j]:.1f}"
                ax.text(i, j, text, ha="center", va="center", fontsize=5.2 if multi else 6, color=color)
        ax.set_xticks(ticks, labels)
        ax.set_yticks(ticks, labels)
        ax.grid(False)
        ax.set_title(p["title"], fontsize=7.5)
        if idx % ncols == 0:
            ax.set_ylabel("label probability")
        if idx // ncols == nrows - 1 or idx + ncols >= n:
            ax.set_xlabel("relevant-token attention")
    if im is not None:
        fig.colorbar(im, ax=axes, shrink=0.6, label="% of sequences")
    if title:
        fig.suptitle(title, fontsize=9)
    return fig


def plot_fig3(results: dict, *, title: str | None = None):
    r"""Figure-3 curves: one row per output circuit (``results[circuit]`` from
    :func:`numerics.experiments.sgd.train_fig3`), columns :math:`L(\alpha)` and incentive."""
    plt = _plt()
    if not results:
        raise ValueError("results must not be empty")
    rows = list(results.items())
    fig, axes = plt.subplots(len(rows), 2, figsize=(7.0, 2.3 * len(rows) + 0.3), squeeze=False)
    cmap = plt.get_cmap("viridis")
    for r, (circuit, res) in enumerate(rows):
        alphas = res["alpha"]
        for i, a in enumerate(alphas):
            col = cmap(0.1 + 0.8 * i / max(len(alphas) - 1, 1))
            L = np.asarray(res["loss"][i])
            inc = np.asarray(res["incentive"][i])
            ep = np.arange(L.size)
            axes[r, 0].plot(ep, L, color=col, lw=1.1, label=rf"$\alpha={a:g}$")
            axes[r, 1].plot(ep, inc, color=col, lw=1.1, label=rf"$\alpha={a:g}$")
        axes[r, 0].set_ylabel(rf"loss $L(\alpha)$ ({circuit} output)")
        axes[r, 1].set_ylabel(r"incentive $(L(\alpha)-L(\alpha+0.005))/0.005$")
        axes[r, 1].axhline(0, color="0.5", lw=0.6)
        for ax in axes[r]:
            ax.set_xlabel("epoch")
            ax.grid(alpha=0.3, lw=0.5)
        axes[r, 0].legend(loc="upper right", ncol=1)
    if title:
        fig.suptitle(title, fontsize=9)
    return fig


def plot_sweep(summary, prediction=None, *, title: str | None = None):
    r"""Relevant-token attention at matched loss against :math:`\eta_{QK}/\eta_{OV}`.

    Parameters
    ----------
    summary : list of dict
        Per-(parameterization, ratio) rows as in ``sweep --json`` (keys
        ``parameterization``, ``ratio``, ``relevant_attention_mean``,
        ``relevant_attention_ci95`` = ``[low, high]``, ``reached``, ``n``).
    prediction : dict, optional
        ``{parameterization: (ratios, predicted_relevant_attention)}``, drawn
        as a dashed line of the parameterization's colour (theory overlay).
    """
    plt = _plt()
    fig, ax = plt.subplots(figsize=(4.6, 3.2))
    params = list(dict.fromkeys(s["parameterization"] for s in summary))
    for p in params:
        rows = sorted((s for s in summary if s["parameterization"] == p), key=lambda s: s["ratio"])
        x = np.array([s["ratio"] for s in rows], dtype=float)
        y = np.array([np.nan if s["relevant_attention_mean"] is None else s["relevant_attention_mean"]
                      for s in rows], dtype=float)
        lo = np.array([np.nan if s["relevant_attention_ci95"][0] is None else s["relevant_attention_ci95"][0]
                       for s in rows], dtype=float)
        hi = np.array([np.nan if s["relevant_attention_ci95"][1] is None else s["relevant_attention_ci95"][1]
                       for s in rows], dtype=float)
        col = _PARAM_COLORS.get(p, None)
        line, = ax.plot(x, y, "o-", color=col, label=p, ms=3.5)
        ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.2, lw=0)
        missed = [s["ratio"] for s in rows if s.get("reached", s.get("n")) < s.get("n", 0)]
        if missed:
            ax.plot(missed, [y[list(x).index(m)] for m in missed], "x", color=line.get_color(), ms=6)
    if prediction:
        for p, (rx, ry) in prediction.items():
            ax.plot(np.asarray(rx, dtype=float), np.asarray(ry, dtype=float), "--",
                    color=_PARAM_COLORS.get(p, "0.3"), lw=1.2, label=f"{p} (theory)")
    ax.set_xscale("log")
    ratios = sorted({float(s["ratio"]) for s in summary})
    if ratios:
        ax.set_xticks(ratios, [f"{r:g}" for r in ratios])
        ax.minorticks_off()
    ax.set_xlabel(r"learning-rate ratio $\eta_{QK}/\eta_{OV}$")
    ax.set_ylabel("relevant-token attention at matched loss")
    ax.grid(alpha=0.3, lw=0.5)
    ax.legend(loc="best")
    if title:
        ax.set_title(title)
    return fig
