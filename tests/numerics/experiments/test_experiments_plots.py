"""numerics.experiments.plots: the figure functions draw what they say."""
import warnings

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from numerics.experiments import plots  # noqa: E402


def _summary():
    return [{"parameterization": p, "ratio": r, "n": 3, "reached": 3, "relevant_attention_mean": m,
             "relevant_attention_ci95": [m - 0.05, m + 0.05]}
            for p, base in (("CACO", 0.4), ("FAFO", 0.5)) for r, m in ((1.0, base), (4.0, base + 0.2))]


def test_plot_sweep_summary_panel_is_saved(tmp_path):
    fig = plots.plot_sweep(_summary())
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    assert {t.get_text() for t in ax.get_legend().get_texts()} == {"CACO", "FAFO"}
    paths = plots.save_figure(fig, tmp_path, "sweep")
    assert [p.name for p in paths] == ["sweep.png", "sweep.pdf"]
    assert paths[1].read_bytes().startswith(b"%PDF")


def test_plot_sweep_without_overlay_has_no_dashed_line():
    fig = plots.plot_sweep(_summary())
    assert not [ln for ln in fig.axes[0].get_lines() if ln.get_linestyle() == "--"]


def test_heatmap_grid_annotates_every_cell():
    H = np.full((5, 5), 4.0)
    fig = plots.plot_fig2_heatmaps([dict(title="a", heatmap=H, heatmap_std=H / 4, n_seeds=3),
                                    dict(title="b", heatmap=H)], ncols=2)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert len(texts) == 25 and texts[0] == "4.0\n±1.0"
    assert [t.get_text() for t in fig.axes[1].texts][0] == "4.0"
    with pytest.raises(ValueError):
        plots.plot_fig2_heatmaps([])


def test_plot_sweep_interval_stays_in_the_unit_interval():
    summary = [{"parameterization": "CACO", "ratio": r, "n": 3, "reached": 3, "relevant_attention_mean": m,
                "relevant_attention_ci95": ci} for r, m, ci in ((1.0, 0.05, [-0.2, 0.3]), (4.0, 0.9, [0.7, 1.2]))]
    fig = plots.plot_sweep(summary)
    bands = fig.axes[0].collections
    assert len(bands) == 1
    y = np.concatenate([path.vertices[:, 1] for path in bands[0].get_paths()])
    assert y.min() == 0.0 and y.max() == 1.0


_SHARES = ("relevant_attention", "self_attention", "other_attention")


def _records(offset, seeds):
    out = []
    for p in ("CACO", "FAFO"):
        for r in (1.0, 10.0):
            for s in seeds:
                for t in (0.5, 0.1):
                    rel = 0.2 + offset + 0.01 * (s - 1234) + (0.3 if t == 0.1 else 0.0)
                    slf = 0.1 + 0.02 * (r == 10.0)
                    out.append({"parameterization": p, "ratio": r, "seed": s, "target_loss": t, "reached": True,
                                "relevant_attention": rel, "self_attention": slf,
                                "other_attention": 1 - rel - slf})
    return out


def _line(ax, label):
    (ln,) = [ln for ln in ax.get_lines() if ln.get_label() == label]
    return ln


def test_plot_sweep_all_three_shares_per_seed_and_per_target():
    rows, theory = _records(0.0, (1234, 1235, 1236)), _records(0.05, (1234, 1235, 1236))
    fig = plots.plot_sweep([], rows=rows, theory=theory, title="t")
    axes = np.array(fig.axes).reshape(2, 3)
    assert axes[0, 0].get_title().startswith("loss 0.5") and axes[1, 2].get_title() == "loss 0.1: other positions"
    for i, target in enumerate((0.5, 0.1)):
        for j, share in enumerate(_SHARES):
            ax = axes[i, j]
            for p in ("CACO", "FAFO"):
                for label, src in ((p, rows), (f"{p} (theory)", theory)):
                    want = [np.mean([x[share] for x in src if x["parameterization"] == p and x["ratio"] == r
                                     and x["target_loss"] == target]) for r in (1.0, 10.0)]
                    np.testing.assert_allclose(_line(ax, label).get_ydata(), want, rtol=1e-14)
            points = [ln for ln in ax.get_lines() if ln.get_linestyle() == "None"]
            assert sum(len(ln.get_xdata()) for ln in points) == 2 * 2 * 3          # every SGD seed
            thin = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--" and ln.get_linewidth() < 1]
            assert len(thin) == 2 * 3                                              # every theory seed
            assert ax.get_ylim()[0] >= -0.05 and ax.get_ylim()[1] <= 1.05


def test_plot_sweep_theory_records_beside_the_summary():
    theory = _records(0.0, (1234,))
    fig = plots.plot_sweep(_summary(), theory=theory)
    axes = np.array(fig.axes).reshape(2, 3)
    np.testing.assert_array_equal(_line(axes[0, 0], "CACO").get_ydata(),                 # SGD: the summary's
                                  [r["relevant_attention_mean"] for r in _summary() if r["parameterization"] == "CACO"])
    assert [ln.get_label() for ln in axes[0, 1].get_lines()] == ["CACO (theory)", "FAFO (theory)"]


@pytest.mark.parametrize("ratios", [(1e308,), (1.0, 1e308)])
def test_a_ratio_near_the_largest_float_is_drawn_and_saved_without_warnings(ratios, tmp_path):
    """``sweep --ratios 1e308`` (eta_QK finite): matplotlib's log axis overflows; no warning reaches stderr."""
    summary = [{"parameterization": "CACO", "ratio": r, "n": 1, "reached": 1, "relevant_attention_mean": 0.3,
                "relevant_attention_ci95": [0.2, 0.4]} for r in ratios]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plots.save_figure(plots.plot_sweep(summary), tmp_path, "sweep")
    assert [str(w.message) for w in caught] == []


@pytest.mark.parametrize("results", [
    {"alpha": [0.2], "loss": [[1.0, 0.5]], "incentive": [[0.1, 0.2]], "final_loss": [0.5]},   # a fig3.json as-is
    [("QK", {})], {"QK": {"alpha": [0.2]}}])
def test_plot_fig3_names_results_that_are_not_one_per_circuit(results):
    """A fig3.json passed as loaded was "list indices must be integers or slices, not str"."""
    with pytest.raises(ValueError, match=r"^results must be \{output circuit: result of train_fig3\} \(a fig3.json"):
        plots.plot_fig3(results)
