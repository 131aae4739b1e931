"""numerics.experiments.plots: the figure functions draw what they say."""
import numpy as np
import pytest

pytest.importorskip("matplotlib")

from numerics.experiments import plots  # noqa: E402


def _summary():
    return [{"parameterization": p, "ratio": r, "n": 3, "reached": 3, "relevant_attention_mean": m,
             "relevant_attention_ci95": [m - 0.05, m + 0.05]}
            for p, base in (("CACO", 0.4), ("FAFO", 0.5)) for r, m in ((1.0, base), (4.0, base + 0.2))]


def test_plot_sweep_with_theory_overlay(tmp_path):
    fig = plots.plot_sweep(_summary(), prediction={"CACO": ([1, 2, 4], [0.42, 0.5, 0.61])})
    ax = fig.axes[0]
    dashed = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    assert len(dashed) == 1 and list(dashed[0].get_xdata()) == [1, 2, 4]
    assert ax.get_xscale() == "log"
    assert {t.get_text() for t in ax.get_legend().get_texts()} == {"CACO", "FAFO", "CACO (theory)"}
    paths = plots.save_figure(fig, tmp_path, "sweep")
    assert [p.name for p in paths] == ["sweep.png", "sweep.pdf"]
    assert paths[1].read_bytes().startswith(b"%PDF")


def test_plot_sweep_without_overlay_has_no_dashed_line():
    fig = plots.plot_sweep(_summary())
    assert not [ln for ln in fig.axes[0].get_lines() if ln.get_linestyle() == "--"]
    plots._plt().close(fig)


def test_heatmap_grid_annotates_every_cell():
    H = np.full((5, 5), 4.0)
    fig = plots.plot_fig2_heatmaps([dict(title="a", heatmap=H, heatmap_std=H / 4, n_seeds=3),
                                    dict(title="b", heatmap=H)], ncols=2)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert len(texts) == 25 and texts[0] == "4.0\n±1.0"
    assert [t.get_text() for t in fig.axes[1].texts][0] == "4.0"
    plots._plt().close(fig)
    with pytest.raises(ValueError):
        plots.plot_fig2_heatmaps([])
