"""Figures touch nothing global (issue 28) and the same figure gives the same bytes (issue 25, item 17)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[3]

_PLOT_EVERYTHING = """
import sys, matplotlib
matplotlib.use("pdf")                                   # the user's choice of backend ...
matplotlib.rcParams["font.size"] = 13                   # ... and style
before = dict(matplotlib.rcParams)
from numerics.experiments import plots
from numerics.output import files, style
summary = [{"parameterization": p, "ratio": r, "relevant_attention_mean": 0.5, "relevant_attention_ci95": [0.4, 0.6],
            "reached": True, "n": 2} for p in ("CACO", "FAFO") for r in (0.1, 1.0)]
rows = [dict(s, seed=1, relevant_attention=0.5, self_attention=0.3, other_attention=0.2) for s in summary]
figs = [plots.plot_sweep(summary), plots.plot_sweep(summary, rows=rows),
        plots.plot_fig3({"QK": {"alpha": [0.2], "loss": [[1.0, 0.5]], "incentive": [[0.1, 0.2]]}}),
        plots.plot_fig2_heatmaps([{"title": "a", "heatmap": [[4.0] * 5] * 5}]), style.new_figure(1, 2, 3.0)[0]]
plots.save_figure(figs[0], sys.argv[1], "sweep")
files.save_figure(figs[-1], sys.argv[1], "theory", ("png", "pdf", "svg"), style=style.STYLE)
style.ratio_colors([1, 2])
assert all(type(f).__name__ == "Figure" for f in figs)
print(matplotlib.get_backend(), dict(matplotlib.rcParams) == before, "matplotlib.pyplot" in sys.modules)
"""


def test_plotting_leaves_the_backend_rcparams_and_pyplot_alone(tmp_path):
    """Library plotting builds Figure objects in an rc_context: the user's backend and rcParams are as
    they were, and pyplot is never imported."""
    out = subprocess.run([sys.executable, "-c", _PLOT_EVERYTHING, str(tmp_path)], capture_output=True, text=True,
                         cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND=""))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["pdf", "True", "False"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.pdf", "sweep.png", "theory.pdf", "theory.png",
                                                          "theory.svg"]


def test_same_figure_same_bytes(tmp_path):
    """No creation date in PDF or SVG: saving the same figure twice gives the same bytes in every format."""
    from numerics.experiments import plots
    from numerics.output import files, style
    data = {"QK": {"alpha": [0.2, 0.5], "loss": [[1.0, 0.5], [0.9, 0.4]], "incentive": [[0.1, 0.2], [0.2, 0.1]]}}
    for name in ("a", "b"):
        plots.save_figure(plots.plot_fig3(data), tmp_path, name)
        fig, axes = style.new_figure(1, 1, 2.0)
        axes[0, 0].plot([0, 1], [1, 0])
        files.save_figure(fig, tmp_path, f"t{name}", ("png", "pdf", "svg"), style=style.STYLE)
    for a, b in (("a.png", "b.png"), ("a.pdf", "b.pdf"), ("ta.png", "tb.png"), ("ta.pdf", "tb.pdf"),
                 ("ta.svg", "tb.svg")):
        assert (tmp_path / a).read_bytes() == (tmp_path / b).read_bytes(), a
    assert b"CreationDate" not in (tmp_path / "a.pdf").read_bytes()
    assert b"<dc:date>" not in (tmp_path / "ta.svg").read_bytes()


def test_drawn_in_holds_the_style_while_plotting_only():
    """``drawn_in(style)``: the style is in force inside the plotting function, and only there."""
    import matplotlib

    from numerics.output import style

    before = matplotlib.rcParams["lines.linewidth"]

    @style.drawn_in({"lines.linewidth": 7.5})
    def width(x):
        """The line width in force, and ``x``."""
        return matplotlib.rcParams["lines.linewidth"], x

    assert width(1) == (7.5, 1) and width.__doc__.startswith("The line width")
    assert matplotlib.rcParams["lines.linewidth"] == before


@pytest.mark.parametrize("name", ["plot_time_course", "plot_phase_diagram"])
def test_theory_figures_are_drawn_in_their_style_not_the_users(name):
    """The whole figure is drawn in :data:`~numerics.output.style.STYLE`: the user's rcParams (here a line
    width, a legend font size) reach no line or text of it, and STYLE's own sizes are in force."""
    import matplotlib

    from numerics.output import attention, style, theory
    plot = getattr(theory, name, None) or getattr(attention, name)
    with matplotlib.rc_context({"lines.linewidth": 4.2, "legend.fontsize": 23.0, "lines.markersize": 17.0}):
        fig = plot(quick=True)
    widths = {line.get_linewidth() for ax in fig.axes for line in ax.lines}
    sizes = {line.get_markersize() for ax in fig.axes for line in ax.lines}
    fonts = {t.get_fontsize() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()}
    assert 4.2 not in widths and 17.0 not in sizes and 23.0 not in fonts, (widths, sizes, fonts)
    if name == "plot_time_course":         # lines without a width of their own take STYLE's
        assert style.STYLE["lines.linewidth"] in widths
