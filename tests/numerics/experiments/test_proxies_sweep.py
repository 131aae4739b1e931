"""The interpretability proxies as a sweep records them (issue 29): every run's proxies in range in
``results.csv`` (the authors' task and engine tasks), their 95 % intervals in ``sweep.json`` recomputed
here with scipy.stats from those rows, and ``proxies.png/pdf`` drawn from exactly those rows and the
theory beside them. One tiny sweep per task, run once for the module."""
import json
import math
from dataclasses import replace

import numpy as np
import pytest

from _results_csv import read_csv
from numerics.experiments import plots, proxy_plots, sampler, task_sampling
from numerics.experiments.__main__ import main
from numerics.experiments.proxies import PROXIES, THEORY_PROXIES

pytest.importorskip("matplotlib")

# absolute: the proxies are of scale 1 (AP, F1 in [0, 1], the AOPCs means of differences of probabilities,
# whose rounding is of the probabilities' scale, not the differences', some ~1e-6)
TOL = 1e-12
TINY = ["--seeds", "2", "--steps-per-epoch", "50", "--eval-batches", "2", "--workers", "1", "--quiet"]
AUTHORS_SWEEP = ["sweep", "--parameterizations", "CACO,FACO", "--ratios", "1,4", "--target-loss", "3.85,3.75",
                 "--max-steps", "600", *TINY]
ENGINE = ["--ratios", "1,10", "--lr-ov", "0.5", "--no-theory", "--max-steps", "100", *TINY]
ENGINE_SWEEPS = {
    "query-in-context": ["sweep", "--task", "query-in-context", "--params", "M=4,b=1", "--parameterizations", "CACO",
                         "--target-loss", "1.2", *ENGINE],
    "paper": ["sweep", "--task", "paper", "--params", "M=3", "--parameterizations", "FAFO", "--target-loss", "1.0",
              *ENGINE]}


def _run(out, argv, written=("proxies",)):
    """Run a sweep into ``out``; return the figures it makes (``{name: Figure}``), of which only those
    named in ``written`` are written (the others are not under test here and take time to save)."""
    figures, real = {}, plots.save_figure

    def keep(fig, directory, name):
        figures[name] = fig
        return real(fig, directory, name) if name in written else []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plots, "save_figure", keep)
        assert main([*argv, "--output", str(out)]) == 0
    return figures


@pytest.fixture(scope="module")
def authors_sweep(tmp_path_factory):
    """The authors' task: 2 parameterizations x 2 ratios x 2 seeds x 2 targets, with the theory."""
    out = tmp_path_factory.mktemp("authors") / "s"
    figures = _run(out, AUTHORS_SWEEP)
    return {"out": out, "figures": figures, "rows": read_csv(out / "results.csv"),
            "json": json.loads((out / "sweep.json").read_text())}


def _positions(st, seq_len):
    """The attended positions of a sequence of the task, read off sampled counts (the same for each)."""
    n = sampler.sample_batches(st, np.random.default_rng(0), 1, 16, seq_len).counts.sum(-1)
    assert np.all(n == n.flat[0])
    return float(n.flat[0])


def _assert_in_range(rows, positions):
    for r in rows:
        assert all(r[k] is not None for k in PROXIES), r                   # every run carries every proxy
        h, hn = r["attention_entropy"], r["attention_entropy_normalized"]
        assert 0 <= h <= math.log(positions) + TOL and 0 <= hn <= 1 + TOL
        assert abs(hn - h / math.log(positions)) <= TOL * max(1.0, h)   # one number of positions per sequence
        for k in ("plausibility_auprc", "plausibility_token_f1"):
            assert 0 <= r[k] <= 1, (k, r)
        for k in ("comprehensiveness", "sufficiency"):
            assert -1 <= r[k] <= 1, (k, r)


def test_authors_results_csv_carries_every_proxy_in_range(authors_sweep):
    """Entropy in [0, log positions], AUPRC and F1 in [0, 1], comprehensiveness and sufficiency in
    [-1, 1], for every run and target of the authors' task (64-token sequences: 63 attended positions)."""
    rows = authors_sweep["rows"]
    assert len(rows) == 2 * 2 * 2 * 2
    positions = _positions(task_sampling.AUTHORS, 64)
    assert positions == 63
    _assert_in_range(rows, positions)


@pytest.mark.parametrize("name", list(ENGINE_SWEEPS))
def test_engine_results_csv_carries_every_proxy_in_range(name, tmp_path):
    """The same ranges on an engine task whose query is attended (query-in-context) and one whose
    query is not (paper)."""
    argv = ENGINE_SWEEPS[name]
    _run(tmp_path / "s", argv, written=())
    rows = read_csv(tmp_path / "s" / "results.csv")
    assert len(rows) == 2 * 2
    st = task_sampling.sampled_task(name, dict(kv.split("=") for kv in argv[argv.index("--params") + 1].split(",")))
    assert st.query_in_context == (name == "query-in-context")
    _assert_in_range(rows, _positions(st, st.own_seq_len))


def test_sweep_json_proxy_intervals_recomputed_from_results_csv(authors_sweep):
    """Each (parameterization, ratio, target) of sweep.json has, per proxy, the mean over its runs in
    results.csv and the 95 % t-interval mean +- t_{0.975, n-1} s / sqrt(n), computed here from the
    rows with scipy.stats.t.ppf and the sample standard deviation."""
    from scipy import stats

    rows, summary = authors_sweep["rows"], authors_sweep["json"]["summary"]
    groups = {(r["parameterization"], r["ratio"], r["target_loss"]) for r in rows}
    assert {(s["parameterization"], s["ratio"], s["target_loss"]) for s in summary} == groups
    assert len(summary) == len(groups)
    for s in summary:
        g = [r for r in rows if (r["parameterization"], r["ratio"], r["target_loss"]) ==
             (s["parameterization"], s["ratio"], s["target_loss"])]
        for name in PROXIES:
            v = np.array([r[name] for r in g], dtype=float)
            assert v.size == 2
            mean = v.mean()
            half = stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)
            assert s[f"{name}_mean"] == pytest.approx(mean, rel=1e-12, abs=TOL), name
            low, high = s[f"{name}_ci95"]
            assert low == pytest.approx(mean - half, rel=1e-9, abs=1e-12), name
            assert high == pytest.approx(mean + half, rel=1e-9, abs=1e-12), name
            assert low <= v.min() and high >= v.max()         # two seeds: t_{0.975,1} s/sqrt 2 > |a - b| / 2
            assert (low < mean < high) == (half > 0), name  # equal seeds (uniform attention): the point


def _panel_axes(fig):
    """``{(row, column): Axes}`` of the figure's grid."""
    return {(ax.get_subplotspec().rowspan.start, ax.get_subplotspec().colspan.start): ax for ax in fig.axes}


def _lines(ax):
    points = [ln for ln in ax.get_lines() if ln.get_marker() == "o" and ln.get_linestyle() == "None"]
    solid = [ln for ln in ax.get_lines() if ln.get_linestyle() == "-"]
    dashed = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    return points, solid, dashed


def _by_ratio(records, p, target, get):
    out = {}
    for r in records:
        if r["parameterization"] == p and r["target_loss"] == target and get(r) is not None:
            out.setdefault(r["ratio"], []).append(get(r))
    return dict(sorted(out.items()))


def test_proxies_figure_is_written_and_shows_the_sweep(authors_sweep):
    """proxies.png/pdf are written; the figure has one column per parameterization and one row per
    proxy and predictive measure against the ratio (log axis): each run's value in results.csv a point,
    the mean over seeds a solid line per target, and the theory (sweep.json's prediction at each run's
    measured loss; entropy and plausibility only) dashed."""
    import matplotlib.image

    out, rows, theory = authors_sweep["out"], authors_sweep["rows"], authors_sweep["json"]["prediction"]
    fig = authors_sweep["figures"]["proxies"]
    png = matplotlib.image.imread(out / "proxies.png")
    w, h = fig.get_size_inches()
    assert png.shape[0] / png.shape[1] == pytest.approx(h / w, rel=0.02)
    assert (out / "proxies.pdf").read_bytes().startswith(b"%PDF")
    keys = [k for k, _ in proxy_plots.PANELS]
    assert set(keys) == {"attention_entropy_normalized", "plausibility_auprc", "plausibility_token_f1",
                         "comprehensiveness", "sufficiency", "accuracy", "label_probability"}
    params, targets = ["CACO", "FACO"], [3.85, 3.75]
    axes = _panel_axes(fig)
    assert sorted(axes) == [(i, j) for i in range(len(keys)) for j in range(len(params))]
    for j, p in enumerate(params):
        assert axes[0, j].get_title() == p
        for i, (key, label) in enumerate(proxy_plots.PANELS):
            ax = axes[i, j]
            assert ax.get_xscale() == "log" and (j > 0 or ax.get_ylabel() == label)
            points, solid, dashed = _lines(ax)
            drawn = sorted((float(x), float(y)) for ln in points for x, y in zip(*ln.get_data()))
            want = sorted((r["ratio"], r[key]) for r in rows if r["parameterization"] == p)
            assert len(drawn) == len(want) == 8
            np.testing.assert_allclose(drawn, want, rtol=TOL)
            means = [_by_ratio(rows, p, t, lambda r: r[key]) for t in targets]
            assert len(solid) == len(targets)
            for ln, m in zip(solid, means):
                np.testing.assert_allclose(ln.get_xdata(), list(m), rtol=TOL)
                np.testing.assert_allclose(ln.get_ydata(), [np.mean(v) for v in m.values()], rtol=TOL)
            if key not in THEORY_PROXIES:
                assert not dashed, key
                continue
            assert len(dashed) == len(targets), key
            for ln, t in zip(dashed, targets):
                m = _by_ratio(theory, p, t, lambda r: (r["at_measured_loss"] or {}).get(key))
                assert list(m) == [1.0, 4.0]             # a seed's flow is read where its run was measured
                np.testing.assert_allclose(ln.get_ydata(), [np.mean(v) for v in m.values()], rtol=TOL)
    legend = axes[0, 0].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == [f"loss {t:g}" for t in targets]


@pytest.mark.slow
def test_faco_plausibility_at_loss_0_2_falls_from_ratio_1_to_20_and_why():
    """docs/proxies.md, "A check of the plausibility result": FACO (seed 1234, the README sweep's settings) trained
    to loss 0.2 at ratios 1 and 20. Its evaluation sequences written out as explicit tokens, softmax
    over the 63 positions of W_Q W_K^T / sqrt(50), sklearn's average_precision_score on the context
    positions: the mean equals the sweep's AUPRC, 1 at ratio 1 and 0.705368 at ratio 20 (the README
    sweep's results.csv); at ratio 20 the query token's context copies rank above every relevant
    token but the most frequent one. ERASER's trapezoidal `auprc` falls too."""
    from sklearn.metrics import auc, average_precision_score, precision_recall_curve

    from numerics.experiments import measure, sgd, stack
    from numerics.experiments.task_sampling import AUTHORS

    cfg = sgd.Fig2Config(parameterization="FACO", lr_qk=0.01, lr_ov=0.01, epochs=2000, steps_per_epoch=100,
                         stop="none", init="authors", eval_batches=50, target_loss=0.2, max_steps=200000)
    runs = stack.train_stack([replace(cfg, lr_qk=r * cfg.lr_ov) for r in (1.0, 20.0)], [1234, 1234])
    assert [r["steps"] for r in runs] == [149500, 33300]                      # the sweep's rows
    b = sampler.sample_batches(AUTHORS, sgd.eval_rng(1234), 50, 32, 64)
    counts, q = b.counts.reshape(-1, AUTHORS.T).astype(int), b.query.reshape(-1)
    got = {}
    for ratio, run in zip((1.0, 20.0), runs):
        p = run["params"]
        scores = p["W_Q"] @ p["W_K"].T / math.sqrt(AUTHORS.T)
        ap, trapezoid, query_above = [], [], 0
        for n, qq in zip(counts, q):
            doc = np.repeat(np.arange(AUTHORS.T), n - (np.arange(AUTHORS.T) == qq))      # the 62 context positions
            s = scores[qq, np.append(doc, qq)]
            w = np.exp(s - s.max())
            w = (w / w.sum())[:-1]
            rel = AUTHORS.relevant[doc].astype(int)
            ap.append(average_precision_score(rel, w))
            precision, recall, _ = precision_recall_curve(rel, w)
            trapezoid.append(auc(recall, precision))
            if (doc == qq).any():
                top_rel = doc[rel == 1][np.argmax(w[rel == 1])]                # the best-ranked relevant token
                below = w[rel == 1][doc[rel == 1] != top_rel]
                query_above += bool(below.size) and bool(w[doc == qq][0] > below.max())
        ev = measure.evaluate(AUTHORS, p, sgd.eval_rng(1234), 50, 32, 64)
        assert abs(np.mean(ap) - ev["plausibility_auprc"].mean()) < TOL
        got[ratio] = (np.mean(ap), np.mean(trapezoid), query_above)
    assert got[1.0][:2] == (1.0, 1.0)
    assert abs(got[20.0][0] - 0.705368) < 1e-6 and got[20.0][1] < 0.7
    holding = int(sum(counts[i, qq] >= 2 for i, qq in enumerate(q)))
    assert got[20.0][2] == holding > 1500 and got[1.0][2] == 0
