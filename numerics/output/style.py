"""One style for the package's figures: sizes, colors, labels, and the one way figures are made.

Figures are :class:`matplotlib.figure.Figure` objects made by :func:`new_figure`
inside :func:`matplotlib.rc_context`: no pyplot state, no backend switch, no
change to the global ``rcParams`` (a notebook that plots with qkov keeps its
backend and style).
"""
from __future__ import annotations

__all__ = ["MATPLOTLIB_FLOAT_WARNINGS", "RATIOS", "WIDTH", "DPI", "DPI_RANGE", "BASE_STYLE", "STYLE", "EXPERIMENT_STYLE",
           "PARAM_STYLE", "PARAM_COLORS", "T_LABEL", "LOSS_LABEL", "ALPHA_LABEL", "MU_OV_LABEL", "MU_QK_LABEL",
           "ratio_colors", "ratio_label", "ratio_legend_title", "panel_letter", "new_figure", "drawn_in"]

#: Learning-rate ratios eta_QK / eta_OV.
RATIOS = (0.01, 0.1, 1.0, 10.0, 100.0)
#: Figure width in inches (a full paper text width).
WIDTH = 7.0
#: Raster resolution of every figure of the package (dots per inch).
DPI = 150
#: What every figure of the package shares (the experiments' figures too):
#: resolution, embedded TrueType fonts in PDFs, constrained layout, and a fixed
#: salt for the SVG ids (so that the same figure gives the same SVG bytes).
BASE_STYLE = {"savefig.dpi": DPI, "pdf.fonttype": 42, "figure.constrained_layout.use": True,
              "svg.hashsalt": "qkov"}
#: Accepted raster resolutions (dots per inch).
DPI_RANGE = (10.0, 2400.0)

#: The theory figures' style (:data:`BASE_STYLE` plus sizes for a paper text width).
STYLE = {
    "font.size": 8,
    "axes.titlesize": 9,
    "axes.labelsize": 8.5,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "legend.title_fontsize": 8,
    "lines.linewidth": 1.4,
    "lines.markersize": 4,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.5,
    **BASE_STYLE,
}

#: The experiments' figures' style (:data:`BASE_STYLE` plus smaller text for
#: their many panels).
EXPERIMENT_STYLE = {
    "font.size": 8,
    "axes.titlesize": 8.5,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 7,
    **BASE_STYLE,
}

#: Parameterization -> (color, linestyle), the same colors in every figure.
PARAM_STYLE = {
    "CACO": ("#1b9e77", "-"),
    "CAFO": ("#d95f02", "--"),
    "FACO": ("#7570b3", "-."),
    "FAFO": ("#e7298a", ":"),
}

#: Parameterization -> color (:data:`PARAM_STYLE`).
PARAM_COLORS = {P: color for P, (color, _) in PARAM_STYLE.items()}

T_LABEL = r"time $t$ (gradient-flow units, $\eta_{OV}=1$)"
LOSS_LABEL = r"loss $L$ (nats)"
ALPHA_LABEL = r"attention on relevant tokens $\alpha$"
MU_OV_LABEL = r"$\mu_{OV}$ (logit gap per unit $\alpha$)"
MU_QK_LABEL = r"$\mu_{QK}$ (relevant $-$ irrelevant score)"


def ratio_colors(ratios):
    """One color per ratio from a sequential map (small r light -> large r dark).

    Parameters
    ----------
    ratios : sequence of float

    Returns
    -------
    list of tuple
        RGBA colors, in the order of ``ratios``.
    """
    import matplotlib

    cmap = matplotlib.colormaps["viridis"]
    k = len(ratios)
    return [cmap(0.82 - 0.8 * i / max(k - 1, 1)) for i in range(k)]


def ratio_label(r):
    """Legend label of a learning-rate ratio.

    Parameters
    ----------
    r : float

    Returns
    -------
    str
    """
    return rf"$r = {r:g}$"


def ratio_legend_title():
    """Legend title of the learning-rate ratios."""
    return r"$r = \eta_{QK}/\eta_{OV}$"


def panel_letter(ax, i):
    """Mark panel ``i`` as (a), (b), ... above its top-left corner.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    i : int
        0 for (a).
    """
    ax.text(-0.02, 1.02, f"({chr(ord('a') + i)})", transform=ax.transAxes,
            ha="right", va="bottom", fontsize=9, fontweight="bold")


def new_figure(nrows, ncols, height=None, *, figsize=None, style=None, **subplots):
    """A :class:`matplotlib.figure.Figure` (no pyplot) made in ``style`` (default
    :data:`STYLE`), axes as a 2-D array.

    Parameters
    ----------
    nrows, ncols : int
        The grid of axes.
    height : float, optional
        Height in inches at the paper's text width :data:`WIDTH`.
    figsize : (float, float), optional
        Width and height in inches, instead of ``height``.
    style : dict, optional
        rc parameters in force while the figure and its axes are made.
    **subplots
        Further arguments of :meth:`matplotlib.figure.Figure.subplots`.

    Returns
    -------
    fig, axes : Figure, ndarray of Axes

    >>> fig, axes = new_figure(1, 2, 3.0)
    >>> axes.shape, type(fig).__name__, fig.get_size_inches().tolist()
    ((1, 2), 'Figure', [7.0, 3.0])
    """
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(STYLE if style is None else style):
        fig = Figure(figsize=figsize if figsize is not None else (WIDTH, height))
        axes = fig.subplots(nrows, ncols, squeeze=False, **subplots)
    return fig, axes


#: The warnings filter (:func:`warnings.filterwarnings` arguments) of the floating-point warnings
#: that matplotlib's own code raises while drawing and saving.
MATPLOTLIB_FLOAT_WARNINGS = {"category": RuntimeWarning, "module": r"matplotlib\."}


def drawn_in(style):
    """A decorator: the plotting function runs with the rc parameters ``style`` in force
    (a :func:`matplotlib.rc_context`; the global ``rcParams`` are left as they were) and
    without the floating-point warnings raised inside matplotlib (:data:`MATPLOTLIB_FLOAT_WARNINGS`:
    its overflow on a log axis whose data reach the largest floats); a warning of our own
    code still shows.

    Parameters
    ----------
    style : dict
        Matplotlib rc parameters (:data:`EXPERIMENT_STYLE`, ...).

    Returns
    -------
    callable
        ``decorator(plot)``: ``plot`` run in ``style``.
    """
    import functools
    import warnings

    def decorator(plot):
        @functools.wraps(plot)
        def wrapper(*args, **kwargs):
            import matplotlib
            with matplotlib.rc_context(style), warnings.catch_warnings():
                warnings.filterwarnings("ignore", **MATPLOTLIB_FLOAT_WARNINGS)
                return plot(*args, **kwargs)
        return wrapper
    return decorator
