r"""Figures of the experiments (:class:`matplotlib.figure.Figure` objects; PNG + PDF).

* :func:`plot_fig2_heatmaps` -- the paper's Figure-2 layout: one panel per
  run, the 5 x 5 histogram of relevant-token attention (x) against the
  probability of the true label (y), every cell annotated with its mean
  percentage over seeds (and the standard deviation over seeds below it when
  there are several seeds).
* :func:`plot_fig3` -- Figure 3: the loss :math:`L(\alpha)` of the fixed-attention
  models and the incentive to sharpen :math:`(L(\alpha) - L(\alpha + 0.005))/0.005`
  against the epoch, one curve per :math:`\alpha`.
* :func:`plot_sweep` -- attention at matched loss against the learning-rate
  ratio :math:`\eta_{QK}/\eta_{OV}`, one colour per parameterization: the
  relevant-token share (mean and 95 % interval over seeds, clipped to [0, 1]);
  given per-seed records (SGD rows, the theory's records), all three shares
  (relevant tokens, the query's own token, other positions), one row of panels
  per target loss, SGD per seed as points with their mean, the theory per seed
  as thin lines with their mean.

:func:`save_figure` writes ``<name>.png`` (:data:`~numerics.output.style.DPI` dpi) and
``<name>.pdf``. Each figure is made and saved in
:data:`~numerics.output.style.EXPERIMENT_STYLE` by
:func:`~numerics.output.style.new_figure` (no pyplot, no global ``rcParams`` changed).
"""
from __future__ import annotations

import numpy as np

from ..output.style import DPI, EXPERIMENT_STYLE
from ..output.style import PARAM_COLORS as _PARAM_COLORS
from ..output.style import drawn_in, new_figure

__all__ = ["save_figure", "plot_fig2_heatmaps", "plot_fig3", "plot_sweep"]


def _figure(nrows, ncols, figsize, **subplots):
    return new_figure(nrows, ncols, figsize=figsize, style=EXPERIMENT_STYLE, **subplots)


def save_figure(fig, directory, name: str) -> list:
    """Write ``fig`` as ``directory/name.png`` and ``.pdf`` in the experiments' style
    (the package's one :func:`numerics.output.files.save_figure`).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    directory : str or path-like
    name : str
        File name without suffix.

    Returns
    -------
    list of pathlib.Path
    """
    from ..output.files import save_figure as save
    return save(fig, directory, name, ("png", "pdf"), DPI, style=EXPERIMENT_STYLE)


@drawn_in(EXPERIMENT_STYLE)
def plot_fig2_heatmaps(panels, *, ncols: int = 4):
    """Grid of annotated Figure-2 heatmaps.

    Parameters
    ----------
    panels : list of dict
        Each with ``title`` (str), ``heatmap`` (5 x 5, ``[attention bin][label-probability bin]``,
        percent) and optionally ``heatmap_std`` and ``n_seeds``.
    ncols : int, optional
        Panels per row (at most the number of panels).

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ValueError
        No panel.
    """
    n = len(panels)
    if n == 0:
        raise ValueError("panels must not be empty")
    ncols = min(ncols, n)
    nrows = -(-n // ncols)
    fig, axes = _figure(nrows, ncols, (1.85 * ncols + 0.6, 1.95 * nrows + 0.3))
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
    return fig


@drawn_in(EXPERIMENT_STYLE)
def plot_fig3(results: dict):
    r"""Figure-3 curves: one row per output circuit, columns :math:`L(\alpha)` and incentive.

    Parameters
    ----------
    results : dict
        ``{circuit: result}``, each of :func:`numerics.experiments.fixed_attention.train_fig3`.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ValueError
        No result, or ``results`` not ``{circuit: result}`` (a ``fig3.json`` holds one result:
        ``plot_fig3({circuit: result})``).
    """
    import matplotlib
    if not results:
        raise ValueError("results must not be empty")
    shape = "results must be {output circuit: result of train_fig3} (a fig3.json holds one result: {circuit: it})"
    if not isinstance(results, dict):
        raise ValueError(f"{shape}; got {type(results).__name__}")
    for circuit, res in results.items():
        if not isinstance(res, dict) or not {"alpha", "loss", "incentive"} <= set(res):
            raise ValueError(f"{shape}; got {circuit!r}: {type(res).__name__}")
    rows = list(results.items())
    fig, axes = _figure(len(rows), 2, (7.0, 2.3 * len(rows) + 0.3))
    cmap = matplotlib.colormaps["viridis"]
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
    return fig


_SHARE_LABELS = {"relevant_attention": "relevant tokens", "self_attention": "the query's own token",
                 "other_attention": "other positions"}


def _value(x):
    return np.nan if x is None else float(x)


def _sweep_targets(*sources):
    """Target losses named by the records (high to low), or ``[None]`` when none names one."""
    found = {float(r["target_loss"]) for src in sources for r in (src or ()) if r.get("target_loss") is not None}
    return sorted(found, reverse=True) or [None]


def _at_target(records, target):
    """The records of one target (records without a ``target_loss`` belong to every target)."""
    return [r for r in records or () if target is None or r.get("target_loss") is None
            or float(r["target_loss"]) == target]


def _per_seed(records, p, share):
    """``{ratio: [value per seed]}`` of one parameterization (unreached runs as NaN)."""
    out = {}
    for r in records:
        if r["parameterization"] == p:
            out.setdefault(float(r["ratio"]), []).append(_value(r.get(share)))
    return dict(sorted(out.items()))


def _mean_line(by_ratio):
    x = np.array(list(by_ratio), dtype=float)
    with np.errstate(all="ignore"):
        y = np.array([np.nanmean(v) if np.isfinite(v).any() else np.nan for v in by_ratio.values()])
    return x, y


def _draw_summary(ax, summary, p, share, col, label):
    """Mean over seeds from the summary rows, with the 95 % interval clipped to [0, 1]."""
    rows = sorted((s for s in summary if s["parameterization"] == p), key=lambda s: s["ratio"])
    rows = [s for s in rows if f"{share}_mean" in s]
    if not rows:
        return
    x = np.array([s["ratio"] for s in rows], dtype=float)
    y = np.array([_value(s[f"{share}_mean"]) for s in rows])
    line, = ax.plot(x, y, "o-", color=col, label=label, ms=3.5)
    ci = [s.get(f"{share}_ci95") or [None, None] for s in rows]
    lo = np.clip([_value(c[0]) for c in ci], 0.0, 1.0)
    hi = np.clip([_value(c[1]) for c in ci], 0.0, 1.0)
    ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.2, lw=0)
    missed = [i for i, s in enumerate(rows) if s.get("reached", s.get("n")) < s.get("n", 0)]
    if missed:
        ax.plot(x[missed], y[missed], "x", color=line.get_color(), ms=6)


def _draw_sgd_seeds(ax, rows, p, share, col, label, shift):
    """Every seed as a point (shifted a little per parameterization), their mean as a line."""
    by_ratio = _per_seed(rows, p, share)
    if not by_ratio:
        return
    for r, vals in by_ratio.items():
        ax.plot(np.full(len(vals), r * shift), vals, "o", color=col, ms=2.5, alpha=0.45, mec="none")
    ax.plot(*_mean_line(by_ratio), "o-", color=col, label=label, ms=3.5, lw=1.2)


def _draw_theory_seeds(ax, records, p, share, col, label):
    """Each seed's prediction as a thin dashed line, their mean as a thick one."""
    by_ratio = _per_seed(records, p, share)
    if not by_ratio:
        return
    x = np.array(list(by_ratio), dtype=float)
    runs = np.array([np.resize(v, max(map(len, by_ratio.values()))) for v in by_ratio.values()])
    if runs.shape[1] > 1:
        for k in range(runs.shape[1]):
            ax.plot(x, runs[:, k], "--", color=col, lw=0.6, alpha=0.45)
    ax.plot(*_mean_line(by_ratio), "--", color=col, lw=1.4, label=label)


def _finish_sweep_axis(ax, ratios, ylabel, legend):
    ax.set_xscale("log")
    if ratios:
        ax.set_xticks(ratios, [f"{r:g}" for r in ratios])
        ax.minorticks_off()
    ax.set_xlabel(r"learning-rate ratio $\eta_{QK}/\eta_{OV}$")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3, lw=0.5)
    if legend:
        ax.legend(loc="best")


@drawn_in(EXPERIMENT_STYLE)
def plot_sweep(summary, *, title: str | None = None, rows=None, theory=None):
    r"""Attention at matched loss against :math:`\eta_{QK}/\eta_{OV}`, one colour per parameterization.

    With ``rows`` or ``theory`` the figure has three columns, the shares of
    :func:`numerics.experiments.measure.attention_shares`, and one row per
    target loss: SGD seeds as points and their mean as a solid line (from
    ``summary`` where ``rows`` are not given), each seed's prediction as a thin
    dashed line and their mean as a thick one. Records without
    ``target_loss`` belong to every row.

    Parameters
    ----------
    summary : list of dict
        Per-(parameterization, ratio) rows as in ``sweep --json`` (keys
        ``parameterization``, ``ratio``, ``relevant_attention_mean``,
        ``relevant_attention_ci95`` = ``[low, high]``, ``reached``, ``n``).
        Without ``rows`` and ``theory`` the figure is one panel of the
        relevant-token share: the mean over seeds and its 95 % interval,
        clipped to [0, 1] (a share cannot leave it), ``x`` where a run missed
        the target.
    rows : list of dict, optional
        SGD runs, one per (parameterization, ratio, seed[, target_loss]), with
        ``relevant_attention``, ``self_attention``, ``other_attention`` (rows
        of ``results.csv``).
    theory : list of dict, optional
        Records of :func:`numerics.experiments.predict.predict` (one per
        parameterization, ratio, seed and target).
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    if rows is None and theory is None:
        fig, axes = _figure(1, 1, (4.6, 3.2))
        shares, targets = ("relevant_attention",), [None]
    else:
        shares, targets = tuple(_SHARE_LABELS), _sweep_targets(rows, theory)
        fig, axes = _figure(len(targets), 3, (9.6, 2.7 * len(targets) + 0.4), sharey=True)
    params = list(dict.fromkeys(r["parameterization"] for src in (summary, rows, theory)
                                for r in (src or ())))
    ratios = sorted({float(r["ratio"]) for src in (summary, rows, theory) for r in (src or ())})
    for i, target in enumerate(targets):
        for j, share in enumerate(shares):
            ax = axes[i, j]
            for n, p in enumerate(params):
                col = _PARAM_COLORS.get(p, None)
                if rows is not None:
                    _draw_sgd_seeds(ax, _at_target(rows, target), p, share, col, p,
                                    1.03 ** (n - (len(params) - 1) / 2))
                else:
                    _draw_summary(ax, _at_target(summary, target), p, share, col, p)
                if theory is not None:
                    _draw_theory_seeds(ax, _at_target(theory, target), p, share, col, f"{p} (theory)")
            ylabel = ("relevant-token attention at matched loss" if len(shares) == 1 else
                      f"attention on {_SHARE_LABELS[share]}")
            _finish_sweep_axis(ax, ratios, ylabel, legend=(i == 0 and j == 0))
            if len(shares) > 1:
                ax.set_ylim(-0.02, 1.02)
                if target is not None:
                    ax.set_title(f"loss {target:g}: {_SHARE_LABELS[share]}")
    if title:
        (axes[0, 0].set_title if len(shares) == 1 else fig.suptitle)(title)
    return fig
